"""Discord's "typing" indicator while personas work: one renewing loop per channel, ended by each turn's post."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import discord

from core.models import Discussion, Post

log = logging.getLogger(__name__)
TYPING_EVERY_S = 8.0  # Discord shows "typing" for about ten seconds
TYPING_MAX_S = 120.0  # a turn that never posts (it failed) stops typing by then


class Typing:
    def __init__(self, http: Callable[[], discord.http.HTTPClient]) -> None:
        self._http = http
        self._typing: dict[str, dict[str, float]] = {}  # channel -> turn key -> give up at (monotonic)
        self._typers: dict[str, asyncio.Task[None]] = {}  # one indicator loop per channel

    def start(self, channel: str, key: str) -> None:
        self._typing.setdefault(channel, {})[key] = time.monotonic() + TYPING_MAX_S
        task = self._typers.get(channel)
        if task is None or task.done():
            self._typers[channel] = asyncio.create_task(self._keep_typing(channel), name=f"typing:{channel}")

    def done(self, d: Discussion, post: Post) -> None:
        """A turn's post ends its typing; a header edit ends the typing of the turn its key names (the roster),
        never that of turns still being written (a header redrawn for a pause)."""
        keys = self._typing.get(d.thread_ref or d.channel, {})
        if post.kind == "header":
            for key in [k for k in keys if post.key.endswith(f":{k}")]:
                keys.pop(key, None)
        keys.pop(post.key, None)

    def close(self) -> None:
        for task in list(self._typers.values()):
            task.cancel()
        self._typers.clear()
        self._typing.clear()

    async def _keep_typing(self, channel: str) -> None:
        """Discord shows "typing" for about ten seconds: renew it while any turn in the channel is at work."""
        while True:
            keys = self._typing.get(channel, {})
            now = time.monotonic()
            for key in [k for k, give_up in keys.items() if give_up < now]:
                del keys[key]
            if not keys:
                return
            try:
                await self._http().send_typing(channel)
            except discord.HTTPException:
                log.debug("typing indicator refused in %s", channel, exc_info=True)
                return
            await asyncio.sleep(TYPING_EVERY_S)
