"""FakeClock, Beats and VirtualTime: injected time that moves only when a test (or its own waits) moves it: no
real waiting."""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Awaitable, Callable
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


class VirtualTime:
    """Seconds that pass only while every task the test runs waits on them: `sleep` queues a wake-up, and
    `run` wakes the earliest one whenever all the tasks still running are asleep (one at a time, each then left to
    do its work, network calls included, until it sleeps again or ends). Rates and paces hold exactly, with no real
    waiting and nothing a busy machine can reorder."""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.t = start
        self._queue: list[tuple[float, int, asyncio.Future[None]]] = []
        self._n = 0

    def __call__(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self._n += 1
        wake = asyncio.get_running_loop().create_future()
        heapq.heappush(self._queue, (self.t + max(0.0, seconds), self._n, wake))
        await wake

    async def run(self, *work: Awaitable[object], within_s: float = 10.0) -> list[object]:
        """Run `work` to its end on this time; their results, in order."""
        tasks = [asyncio.ensure_future(w) for w in work]
        deadline = time.monotonic() + within_s
        while not all(t.done() for t in tasks):
            if time.monotonic() > deadline:
                raise TimeoutError("the work neither ended nor slept")
            running = sum(not t.done() for t in tasks)
            if self._queue and len(self._queue) >= running:  # everyone still running is asleep: time moves on
                at, _, wake = heapq.heappop(self._queue)
                self.t = max(self.t, at)
                wake.set_result(None)
            await asyncio.sleep(0.001)
        return [t.result() for t in tasks]


async def settle(passes: int = 20) -> None:
    """Let every ready task run until it next waits (loop passes, no timer): work that needs no I/O is done."""
    for _ in range(passes):
        await asyncio.sleep(0)


class Naps:
    """Monotonic seconds and a `sleep` on them for one object under test: a nap ends only when `advance` moves the
    clock past it, so an interval is waited out exactly, with no real waiting."""

    def __init__(self, start: float = 100.0) -> None:
        self.t = start
        self._naps: list[tuple[float, asyncio.Future[None]]] = []

    def __call__(self) -> float:
        return self.t

    @property
    def napping(self) -> int:
        return sum(not wake.done() for _, wake in self._naps)

    async def sleep(self, seconds: float) -> None:
        nap = (self.t + seconds, asyncio.get_running_loop().create_future())
        self._naps.append(nap)
        try:
            await nap[1]
        finally:
            self._naps.remove(nap)

    async def advance(self, seconds: float) -> None:
        """Move the clock on, wake every nap that ends by then, and let the woken work run."""
        self.t += seconds
        for end, wake in list(self._naps):
            if end <= self.t and not wake.done():
                wake.set_result(None)
        await settle()


class SkippingTime:
    """Seconds for code under test that waits one thing at a time: a `sleep` moves the clock by what it asked at
    once, so every pace and rate is kept on the clock and nothing waits in real time. (Work that runs side by side
    and must interleave on the clock uses VirtualTime.)"""

    def __init__(self, start: float = 1_000_000.0) -> None:
        self.t = start
        self.slept = 0.0  # seconds the code under test waited, in all

    def __call__(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += max(0.0, seconds)
        self.slept += max(0.0, seconds)
        await asyncio.sleep(0)
