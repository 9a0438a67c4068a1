"""Writes that may share one transaction: each caller waits for its own commit, and the ones that arrive while a
write runs are written together in the next."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
WRITER = "grouped-write"  # the writer task's name


class Grouped(Generic[T]):
    """Group commit: `add` returns once its item is written (or raises what its own write raised). A writer task
    writes the first item at once; items that arrive meanwhile wait and go together in its next write, so many
    discussions showing placeholders at the same moment cost one transaction, not one each. An item handed over
    is written even if its caller stops waiting."""

    def __init__(self, write: Callable[[list[T]], Awaitable[None]]) -> None:
        self._write = write
        self._waiting: list[tuple[T, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None

    async def add(self, item: T) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, done))
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._writes(), name=WRITER)
        await done

    async def _writes(self) -> None:
        """Write what waits, batch after batch, until nothing does; callers left waiting when the writer is stopped
        (the loop shutting down) are told their items were not written, never left waiting for good."""
        batch: list[tuple[T, asyncio.Future[None]]] = []
        try:
            while self._waiting:
                batch, self._waiting = self._waiting, []
                await self._write_batch(batch)
                batch = []
        finally:
            for _, done in [*batch, *self._waiting]:
                if not done.done():
                    done.set_exception(RuntimeError("the write stopped before this item was written"))
            self._waiting = []

    async def _write_batch(self, batch: list[tuple[T, asyncio.Future[None]]]) -> None:
        """One write of the batch; when it fails, each item is written alone, so one bad item costs the others
        nothing and its caller hears its own error."""
        try:
            await self._write([item for item, _ in batch])
        except Exception as exc:
            if len(batch) > 1:
                for one in batch:
                    await self._write_batch([one])
                return
            outcome: BaseException | None = exc
        else:
            outcome = None
        for _, done in batch:
            if done.done():  # a caller that stopped waiting has nothing to hear
                continue
            if outcome is None:
                done.set_result(None)
            else:
                done.set_exception(outcome)
