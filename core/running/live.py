"""Live text: a turn's words as the model writes them, handed to the chat at most once per interval."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)
Show = Callable[[str], Awaitable[None]]


class LiveText:
    """`push` takes the text so far, in pieces (a list the writer appends to; another attempt starts a new list), and
    returns at once (the model's stream never waits on the chat); the chat sees the newest text, joined only then,
    when the interval since its last update has passed. `close` drops what was not shown and waits for an update
    in flight, so no late partial text lands after the finished post."""

    def __init__(self, show: Show, interval_s: float = 1.0, monotonic: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
        """`sleep`: how the interval is waited out (tests pass virtual time); by default the loop's own timer."""
        self._show, self._interval, self._monotonic, self._sleep = show, interval_s, monotonic, sleep
        self._parts: list[str] = []
        self._shown: tuple[list[str] | None, int] = (None, 0)  # the list last shown, and how many of its pieces
        self._last = float("-inf")
        self._closed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.updates = 0  # updates the chat accepted (benchmarks, tests)

    def push(self, parts: list[str]) -> None:
        if self._closed.is_set() or not parts or (not parts[-1].strip() and not "".join(parts).strip()):
            return
        self._parts = parts
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="live-text")

    def _unseen(self) -> bool:
        shown, count = self._shown
        return shown is not self._parts or count != len(self._parts)

    async def _run(self) -> None:
        while self._unseen() and not self._closed.is_set():
            wait = self._last + self._interval - self._monotonic()
            if wait > 0:
                await self._pause(wait)
                if self._closed.is_set():
                    return
            parts, count = self._parts, len(self._parts)
            text = "".join(parts)
            self._last = self._monotonic()
            try:
                await self._show(text)
                self.updates += 1
            except Exception:  # live text is a courtesy: the finished post still replaces it
                log.debug("live update refused", exc_info=True)
            self._shown = (parts, count)

    async def _pause(self, seconds: float) -> None:
        """Wait out the rest of the interval, or less when close comes first."""
        if self._sleep is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), seconds)
            return
        nap, closed = asyncio.ensure_future(self._sleep(seconds)), asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({nap, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            nap.cancel()
            closed.cancel()

    async def close(self) -> None:
        self._closed.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


class ChannelBudget:
    """One live edit per `gap_s` per channel, shared fairly between the turns writing at once: a turn's first
    words always go at once, then the turn shown longest ago goes first (one that stopped asking gives way)."""

    def __init__(self, gap_s: float = 1.0, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.gap_s, self._monotonic = gap_s, monotonic
        self._turns: dict[str, dict[str, list[float]]] = {}  # channel -> turn key -> [shown at, asked at]
        self._last: dict[str, float] = {}
        self._channel_of: dict[str, str] = {}  # turn key -> its channel: a landed post forgets its turn at once

    def allow(self, channel: str, key: str) -> bool:
        now = self._monotonic()
        turns = self._turns.setdefault(channel, {})
        mine = turns.get(key)
        if mine is None:
            turns[key] = [now, now]
            self._channel_of[key] = channel
            self._last[channel] = now
            return True
        mine[1] = now
        if now - self._last.get(channel, float("-inf")) < self.gap_s:
            return False
        if any(k != key and now - asked < 2 * self.gap_s and shown < mine[0] for k, (shown, asked) in turns.items()):
            return False
        mine[0] = self._last[channel] = now
        return True

    def shown(self, key: str) -> bool:
        """Whether the turn's first words were let through (its later ones compete for the channel's edits)."""
        return key in self._channel_of

    def forget(self, key: str) -> None:
        """The turn's post landed: it no longer competes (and is not remembered forever)."""
        channel = self._channel_of.pop(key, None)
        if channel is None or channel not in self._turns:
            return
        self._turns[channel].pop(key, None)
        if not self._turns[channel]:
            del self._turns[channel]
