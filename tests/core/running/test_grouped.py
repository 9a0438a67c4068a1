"""Group commit (core/running/grouped.py): every caller returns once its own item is written, callers that arrive
while a write runs share the next one, and a failed or stopped write never leaves a caller waiting."""

from __future__ import annotations

import asyncio

import pytest

from core.running.grouped import WRITER, Grouped


class Writes:
    """Records each write's items; a write waits on `gate` while it is held, as a transaction waits on a lock, and
    the write numbered in `held` until that number is let go."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.held: dict[int, asyncio.Event] = {}
        self.begun = 0
        self.fail: set[str] = set()  # a write holding one of these raises

    async def __call__(self, items: list[str]) -> None:
        self.begun += 1
        await self.gate.wait()
        if self.begun in self.held:
            await self.held[self.begun].wait()
        if self.fail & set(items):
            raise OSError("database is locked")
        self.batches.append(items)


async def test_the_first_item_is_written_at_once_and_those_arriving_meanwhile_together_in_the_next_write() -> None:
    writes = Writes()
    grouped = Grouped(writes)
    writes.gate.clear()
    first = asyncio.create_task(grouped.add("a"))
    await asyncio.sleep(0)  # its write has begun and waits
    rest = [asyncio.create_task(grouped.add(k)) for k in "bcd"]
    await asyncio.sleep(0)
    assert not any(t.done() for t in [first, *rest]), "nobody returns before its item is written"
    writes.gate.set()
    await asyncio.gather(first, *rest)
    assert writes.batches == [["a"], ["b", "c", "d"]]


async def test_a_caller_returns_once_its_own_item_is_written_not_after_the_writes_behind_it() -> None:
    writes = Writes()
    grouped = Grouped(writes)
    writes.gate.clear()
    writes.held[2] = asyncio.Event()  # the second write waits, as on another transaction's lock
    first = asyncio.create_task(grouped.add("a"))
    await asyncio.sleep(0)
    second = asyncio.create_task(grouped.add("b"))
    await asyncio.sleep(0)
    writes.gate.set()
    await asyncio.wait_for(first, 1)
    assert writes.batches == [["a"]]
    assert not second.done(), "the second item's write has not run yet"
    writes.held[2].set()
    await second
    assert writes.batches == [["a"], ["b"]]


async def test_an_item_that_cannot_be_written_fails_its_caller_alone_and_the_writes_go_on() -> None:
    writes = Writes()
    writes.fail = {"b"}
    grouped = Grouped(writes)
    writes.gate.clear()
    first = asyncio.create_task(grouped.add("a"))
    await asyncio.sleep(0)
    failing = [asyncio.create_task(grouped.add(k)) for k in "bc"]
    await asyncio.sleep(0)
    writes.gate.set()
    await first
    bad, good = failing
    with pytest.raises(OSError, match="locked"):
        await bad
    await good  # written alone once the write it shared failed
    await grouped.add("d")  # a later item is written: the writer did not stop at the failure
    assert writes.batches == [["a"], ["c"], ["d"]]


async def test_a_writer_stopped_mid_write_leaves_no_caller_waiting() -> None:
    writes = Writes()
    grouped = Grouped(writes)
    writes.gate.clear()
    callers = [asyncio.create_task(grouped.add("a"))]
    await asyncio.sleep(0)
    callers.append(asyncio.create_task(grouped.add("b")))
    await asyncio.sleep(0)
    [writer] = [t for t in asyncio.all_tasks() if t.get_name() == WRITER]
    writer.cancel()  # the process is shutting down while the write runs
    for caller in callers:
        with pytest.raises(RuntimeError, match="stopped before this item was written"):
            await asyncio.wait_for(caller, 1)
    writes.gate.set()
    await grouped.add("c")  # a new caller writes again
    assert writes.batches == [["c"]]


async def test_a_caller_that_stopped_waiting_does_not_break_the_write_of_the_others() -> None:
    writes = Writes()
    grouped = Grouped(writes)
    writes.gate.clear()
    first = asyncio.create_task(grouped.add("a"))
    await asyncio.sleep(0)
    impatient, patient = asyncio.create_task(grouped.add("b")), asyncio.create_task(grouped.add("c"))
    await asyncio.sleep(0)
    impatient.cancel()
    writes.gate.set()
    await first
    await patient
    assert writes.batches == [["a"], ["b", "c"]], "an item handed over is written even if its caller left"
