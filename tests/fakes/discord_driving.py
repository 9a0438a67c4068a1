"""What tests drive on the fake Discord: the bot's permissions and channels, people, slash commands, clicks,
forms and messages, and what they read back (calls, threads, buttons)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes import discord_payloads as p
from tests.fakes import discord_rules as r

if TYPE_CHECKING:
    from collections.abc import Callable

USER_OPTION = 6  # an application command option of type USER


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 200


@dataclass
class Interaction:
    id: str
    token: str
    payload: dict[str, Any]
    created_at: float = 0.0  # on the fake's clock: acknowledge within 3 s, follow up within 15 minutes
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    followups: list[dict[str, Any]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)  # of the message a clicked component is on

    def choices(self) -> list[dict[str, Any]]:
        """The answer to an autocomplete interaction (callback type 8)."""
        assert self.callbacks and self.callbacks[0]["type"] == 8, f"not an autocomplete answer: {self.callbacks}"
        return list(self.callbacks[0]["data"]["choices"])


class Driving:
    """Mixed into FakeDiscord: the state it names is FakeDiscord's."""

    app_id: str
    guild_id: str
    channel_id: str
    bot: dict[str, Any]
    bot_base: int
    channels: dict[str, dict[str, Any]]
    messages: dict[str, list[dict[str, Any]]]
    users: dict[str, dict[str, Any]]
    commands: list[dict[str, Any]]
    interactions: dict[str, Interaction]
    overwrites: dict[str, r.Overwrite]
    calls: list[Call]
    clock: Callable[[], float]
    delivery_lag_s: float

    async def dispatch(self, event: str, data: dict[str, Any], *, guild_id: str | None = None) -> None:
        raise NotImplementedError

    async def wait_for(self, predicate: Callable[[], Any], limit_s: float = 15.0) -> Any:
        raise NotImplementedError

    # permissions and channels ---------------------------------------------------------------------
    @property
    def app_permissions(self) -> str:
        """The bot's guild-wide permissions (its role); per channel, `permissions_in` applies the overwrites."""
        return str(self.bot_base)

    @app_permissions.setter
    def app_permissions(self, value: str) -> None:
        self.bot_base = int(value)

    def permissions_in(self, channel_id: str) -> int:
        channel = self.channels.get(channel_id)
        if channel is None or channel["type"] == r.DM:
            return int(p.ALL_PERMISSIONS) if channel is not None else 0
        return r.bot_permissions(self.bot_base, channel, self.channels, self.overwrites)

    def deny(self, channel_id: str, *bits: int) -> None:
        """A channel overwrite that takes these permissions from the bot (a thread inherits its parent's)."""
        o = self.overwrites.setdefault(channel_id, r.Overwrite())
        for bit in bits:
            o.deny, o.allow = o.deny | bit, o.allow & ~bit

    def allow(self, channel_id: str, *bits: int) -> None:
        o = self.overwrites.setdefault(channel_id, r.Overwrite())
        for bit in bits:
            o.allow, o.deny = o.allow | bit, o.deny & ~bit

    async def add_channel(self, kind: int, name: str, *, tags: tuple[str, ...] = (), moderated: tuple[str, ...] = (),
                          require_tag: bool = False) -> str:
        """A new guild channel of this type (text, announcement, forum, voice, stage), announced to the gateway; a
        forum's `tags` in order (those also in `moderated` need Manage Threads) and its REQUIRE_TAG flag."""
        cid = p.snowflake()
        channel = p.text_channel(cid, self.guild_id, name) | {"type": kind}
        if kind == r.FORUM:
            available = [{"id": p.snowflake(), "name": t, "moderated": t in moderated, "emoji_id": None,
                          "emoji_name": None} for t in tags]
            channel |= {"available_tags": available, "default_reaction_emoji": None, "default_sort_order": None,
                        "default_forum_layout": 0, "default_thread_rate_limit_per_user": 0,
                        "flags": r.REQUIRE_TAG if require_tag else 0}
        if kind in (r.VOICE, r.STAGE):
            channel |= {"bitrate": 64000, "user_limit": 0, "rtc_region": None}
        self.channels[cid] = channel
        self.messages[cid] = []
        await self.dispatch("CHANNEL_CREATE", channel)
        return cid

    # what tests drive -----------------------------------------------------------------------------
    def add_user(self, name: str, *, admin: bool = False) -> dict[str, Any]:
        u = p.user(p.snowflake(), name)
        self.users[u["id"]] = u
        u["_permissions"] = p.ALL_PERMISSIONS if admin else str(1071698660929)
        return u

    def _member(self, u: dict[str, Any]) -> dict[str, Any]:
        public = {k: v for k, v in u.items() if not k.startswith("_")}
        return p.member(public, u.get("_permissions", "0"))

    async def _interact(self, kind: int, fixture: str, who: dict[str, Any], channel_id: str, data: dict[str, Any],
                        msg: dict[str, Any] | None = None) -> Interaction:
        template = p.fixture(fixture)
        iid, token = p.snowflake(), f"itoken-{p.snowflake()}"
        channel = self.channels[channel_id]
        perms = str(self.permissions_in(channel_id))
        if channel["type"] == r.DM:  # from a direct message: no guild, and `user` instead of `member`
            public = {k: v for k, v in who.items() if not k.startswith("_")}
            payload = p.dm_interaction(kind, iid, self.app_id, token, channel, public, {**template["data"], **data},
                                       msg, perms)
        else:
            payload = p.interaction(kind, iid, self.app_id, token, self.guild_id, channel, self._member(who),
                                    {**template["data"], **data}, msg, perms)
        record = Interaction(iid, token, payload, created_at=self.clock() - self.delivery_lag_s)
        self.interactions[iid] = record
        await self.dispatch("INTERACTION_CREATE", payload)
        return record

    async def slash(self, who: dict[str, Any], name: str, channel_id: str | None = None,
                    **options: Any) -> Interaction:
        command = next(c for c in self.commands if c["name"] == name)
        types = {o["name"]: o["type"] for o in command.get("options", [])}
        opts = [{"name": k, "type": types[k], "value": v["id"] if types[k] == USER_OPTION else v}
                for k, v in options.items()]
        data: dict[str, Any] = {"id": command["id"], "name": name, "type": 1, "options": opts}
        people = [v for k, v in options.items() if types[k] == USER_OPTION]
        if people:  # a user option carries the id; the user and their membership come in `resolved`
            data["resolved"] = {
                "users": {u["id"]: {k: v for k, v in u.items() if not k.startswith("_")} for u in people},
                "members": {u["id"]: {k: v for k, v in self._member(u).items() if k != "user"} for u in people}}
        return await self._interact(2, "interaction_council.json", who, channel_id or self.channel_id, data)

    async def autocomplete(self, who: dict[str, Any], name: str, focused: str, typed: str,
                           channel_id: str | None = None, **options: Any) -> Interaction:
        """Someone typing `typed` into option `focused` of /name (other options already filled in)."""
        command = next(c for c in self.commands if c["name"] == name)
        types = {o["name"]: o["type"] for o in command.get("options", [])}
        assert next(o for o in command["options"] if o["name"] == focused).get("autocomplete"), focused
        opts = [{"name": k, "type": types[k], "value": v} for k, v in options.items()]
        opts.append({"name": focused, "type": types[focused], "value": typed, "focused": True})
        data = {"id": command["id"], "name": name, "type": 1, "options": opts}
        return await self._interact(4, "interaction_council.json", who, channel_id or self.channel_id, data)

    async def wait_for_choices(self, who: dict[str, Any], name: str, focused: str, typed: str,
                               **options: Any) -> list[dict[str, Any]]:
        i = await self.autocomplete(who, name, focused, typed, **options)
        await self.wait_for(lambda: i.callbacks)
        return i.choices()

    async def click(self, who: dict[str, Any], msg: dict[str, Any], custom_id: str) -> Interaction:
        data = {"custom_id": custom_id, "component_type": 2}
        return await self._interact(3, "interaction_button.json", who, msg["channel_id"], data, msg)

    async def select(self, who: dict[str, Any], msg: dict[str, Any], custom_id: str, values: list[str]) -> Interaction:
        """Someone picks `values` in a message's select menu (component type 3)."""
        data = {"custom_id": custom_id, "component_type": 3, "values": values}
        return await self._interact(3, "interaction_button.json", who, msg["channel_id"], data, msg)

    async def submit(self, who: dict[str, Any], channel_id: str, custom_id: str, values: dict[str, str],
                     msg: dict[str, Any] | None = None) -> Interaction:
        rows = [{"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]} for k, v in values.items()]
        return await self._interact(5, "interaction_modal_submit.json", who, channel_id,
                                    {"custom_id": custom_id, "components": rows}, msg)

    async def say(self, who: dict[str, Any], channel_id: str, content: str, *,
                  mention_bot: bool = False) -> dict[str, Any]:
        public = {k: v for k, v in who.items() if not k.startswith("_")}
        msg = p.message(p.snowflake(), channel_id, public, {"content": content})
        if mention_bot:
            msg["mentions"] = [self.bot]
        self.messages.setdefault(channel_id, []).append(msg)
        event = {**msg, "guild_id": self.guild_id, "member": {k: v for k, v in self._member(who).items()
                                                               if k != "user"}}
        await self.dispatch("MESSAGE_CREATE", event)
        return msg

    def find_button(self, msg: dict[str, Any], label: str) -> str:
        for row in msg.get("components", []):
            for c in row.get("components", []):
                if c.get("label") == label:
                    return str(c["custom_id"])
        raise LookupError(f"no button {label!r} on message {msg['id']}")

    def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        return self.messages.get(thread_id, [])

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and re.search(pattern, c.path)]
