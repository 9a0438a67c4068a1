"""FakeClock and Beats: an injected clock and a periodic wait that move only when a test says so (no real waiting)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class FakeClock:
    """Implements core.ports.Clock."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 3, 2, 8, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | None = None, **kw: float) -> datetime:
        """Move forward by a timedelta or keyword units (`advance(hours=2)`); returns the new time."""
        self._now += (delta or timedelta()) + timedelta(**kw)
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment


class Beats:
    """A periodic wait the test steps (a heartbeat's between renewals): each `tick()` lets the waiting loop through
    one wait and returns once it is back waiting, its beat done; no real time passes between beats."""

    def __init__(self) -> None:
        self.waits = 0  # waits the loop has begun
        self._gate: asyncio.Future[None] | None = None

    async def __call__(self, _seconds: float) -> None:
        self.waits += 1
        self._gate = asyncio.get_running_loop().create_future()
        await self._gate

    async def tick(self, within_s: float = 5.0) -> None:
        await self._until(lambda: self._gate is not None and not self._gate.done(), within_s, "the loop waiting")
        begun = self.waits
        assert self._gate is not None
        self._gate.set_result(None)
        await self._until(lambda: self.waits > begun, within_s, "the beat done and the loop waiting again")

    @staticmethod
    async def _until(condition: Callable[[], bool], within_s: float, what: str) -> None:
        deadline = time.monotonic() + within_s
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what}")
            await asyncio.sleep(0.005)
