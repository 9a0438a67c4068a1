"""Where Council posts on Discord: its own webhook in each channel (found or made once), and each channel's kind."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import discord

log = logging.getLogger(__name__)
WEBHOOK_NAME = "Council"
REQUIRE_TAG = 1 << 4  # the forum channel flag: every post must carry one of the forum's tags
RECHECK_WEBHOOKS_S = 600.0


@dataclass(frozen=True)
class Tags:
    """A forum's tag rule as it concerns this bot: whether posts need a tag, and the tag ids it may apply."""

    required: bool
    usable: list[str]


class Places:
    def __init__(self, client: Callable[[], discord.Client | None]) -> None:
        self._client = client
        self._hooks: dict[str, tuple[tuple[str, str] | None, float]] = {}
        self._lock = asyncio.Lock()
        self._kinds: dict[str, int] = {}  # channel -> Discord channel type

    @property
    def http(self) -> discord.http.HTTPClient:
        client = self._client()
        assert client is not None, "DiscordChat used before a client was attached"
        return client.http

    async def webhook(self, channel: str) -> tuple[str, str] | None:
        """This bot's webhook on the channel (created once); None when we may not manage webhooks, or the
        channel has all the webhooks Discord allows."""
        cached = self._hooks.get(channel)
        if cached is not None and (cached[0] is not None or time.monotonic() < cached[1]):
            return cached[0]
        async with self._lock:
            cached = self._hooks.get(channel)
            if cached is not None and (cached[0] is not None or time.monotonic() < cached[1]):
                return cached[0]
            hook: tuple[str, str] | None
            try:
                hook = await self._own_webhook(channel)
            except discord.HTTPException as exc:
                if exc.status >= 500:
                    raise  # Discord is having trouble: the outbox tries again
                log.warning("no webhook in channel %s (%s %s): personas post as embeds", channel, exc.status,
                            exc.text or "")
                hook = None
            self._hooks[channel] = (hook, time.monotonic() + RECHECK_WEBHOOKS_S)
            return hook

    def forget(self, channel: str) -> None:
        """Someone deleted our webhook: look again next time."""
        self._hooks.pop(channel, None)

    async def hook_by_id(self, channel: str, webhook_id: str) -> tuple[str, str]:
        hook = await self.webhook(channel)
        if hook is None or hook[0] != webhook_id:
            raise LookupError(f"webhook {webhook_id} is not ours in channel {channel}")
        return hook

    async def _own_webhook(self, channel: str) -> tuple[str, str]:
        client = self._client()
        app_id = str(client.application_id if client else "")
        hooks: list[dict[str, Any]] = list(await self.http.channel_webhooks(channel))  # type: ignore[arg-type]
        for h in hooks:
            if h.get("token") and (str(h.get("application_id") or "") == app_id or
                                   str((h.get("user") or {}).get("id", "")) == app_id):
                return str(h["id"]), str(h["token"])
        made = await self.http.create_webhook(channel, name=WEBHOOK_NAME)
        return str(made["id"]), str(made.get("token"))

    async def is_forum(self, channel: str) -> bool:
        """Is this a forum channel? From the gateway's cache, else asked once."""
        known = self._kinds.get(channel)
        if known is None:
            client = self._client()
            cached = client.get_channel(int(channel)) if client else None
            if cached is not None:
                known = int(getattr(cached, "type", discord.ChannelType.text).value)
            else:
                known = int((await self.http.get_channel(int(channel))).get("type", 0))
            self._kinds[channel] = known
        return known == discord.ChannelType.forum.value

    async def forum_tags(self, channel: str, *, fresh: bool = False) -> Tags:
        """Whether the forum requires a tag on each post, and the tags this bot may apply, in the forum's order:
        from the gateway's cache, else (or `fresh`: the cache proved stale) asked of Discord."""
        client = self._client()
        cached = client.get_channel(int(channel)) if client and not fresh else None
        if isinstance(cached, discord.ForumChannel):
            me = cached.guild.me
            manage = bool(me and cached.permissions_for(me).manage_threads)
            return Tags(cached.flags.require_tag, [str(t.id) for t in cached.available_tags
                                                   if manage or not t.moderated])
        data: dict[str, Any] = dict(await self.http.get_channel(int(channel)))
        # Without the cache the bot's Manage Threads here is unknown: moderated tags are left alone.
        return Tags(bool(int(data.get("flags") or 0) & REQUIRE_TAG),
                    [str(t["id"]) for t in data.get("available_tags") or [] if not t.get("moderated")])
