"""Lease rules (core/running/lease.py), one at a time on both stores and a stepped heartbeat: a lease is taken for
its lifetime from the moment it was asked, never from another live owner; one heartbeat renews every lease held
here each third of that lifetime and stops the work of a lease it lost, or of one a failing database would let
lapse before the next beat; a fenced transaction writes only under the lease, stops the discussion's other work
when it finds the lease gone, charges a running turn's call when the state kept here is whole, and reads the
day's spend when asked; giving a lease back frees it at once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, event

from core.models import Discussion, Phase, Status, Turn, TurnStatus, Usage
from core.running.config import DriverConfig
from core.running.kept import Kept
from core.running.lease import Lease, LeaseLost
from core.running.spending import Limits
from core.storage.store import Store, Tx

ME, OTHER = "this-process", "another-process"
TTL = 30.0  # a beat every 10 s
START = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.t = START

    def now(self) -> datetime:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += timedelta(seconds=seconds)


class Stepper:
    """The heartbeat's wait, stepped by the test: `beat` lets one wait end and returns once the heartbeat waits
    again or has ended; the seconds each wait asked for are kept."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self._gate: asyncio.Future[None] | None = None
        self._waiting = asyncio.Event()

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)
        self._gate = asyncio.get_running_loop().create_future()
        self._waiting.set()
        await self._gate

    async def beat(self, heart: asyncio.Task[None]) -> None:
        await asyncio.wait_for(self._waiting.wait(), 5)
        self._waiting.clear()
        assert self._gate is not None
        self._gate.set_result(None)
        waiting = asyncio.ensure_future(self._waiting.wait())
        done, _ = await asyncio.wait({waiting, heart}, timeout=5, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        assert done, "the beat neither ended nor waited again"


def discussion(did: str) -> Discussion:
    return Discussion(id=did, topic=f"Topic of {did}", platform="slack", workspace="T1", channel="C1",
                      created_at=START, updated_at=START, status=Status.RUNNING, budget_usd=5.0)


@pytest.fixture
async def both(store: Store) -> AsyncIterator[tuple[Lease, Clock, Stepper, Kept]]:
    async with store.tx() as tx:
        for did in ("d1", "d2"):
            await tx.add_discussion(discussion(did))
    clock, stepper, kept = Clock(), Stepper(), Kept()
    config = DriverConfig(owner=ME, lease_ttl=TTL, beat_wait=stepper, limits=Limits(workspace_usd_per_day=10.0))
    lease = Lease(store, clock, config, kept)
    yield lease, clock, stepper, kept
    await lease.stop()


async def owner_of(store: Store, did: str) -> tuple[str | None, datetime | None]:
    async with store.tx() as tx:
        return await tx.lease_owner(did)


async def read_topic(store: Store, did: str, lease: Lease) -> str | None:
    async def topic(tx: Tx) -> str:
        d = await tx.discussion(did)
        assert d is not None
        return str(d.topic)

    return await lease.take(did, topic)


async def forever() -> None:
    await asyncio.Event().wait()


def heart(lease: Lease) -> asyncio.Task[None]:
    assert lease._renewer is not None
    return lease._renewer


async def test_a_lease_is_taken_for_its_lifetime_from_the_moment_it_was_asked(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, _ = both
    assert lease.held_until("d1") is None
    assert await read_topic(store, "d1", lease) == "Topic of d1", "what the caller reads, read with the lease"
    assert await owner_of(store, "d1") == (ME, START + timedelta(seconds=30))
    assert lease.held_until("d1") == (START + timedelta(seconds=30)).timestamp()
    assert lease.held_until("d2") is None


async def test_a_live_lease_of_another_process_is_never_taken_and_nothing_is_read(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, clock, _, _ = both
    async with store.tx() as tx:
        assert await tx.acquire_lease("d1", OTHER, START, TTL)
    reads: list[str] = []

    async def read(tx: object) -> str:
        reads.append("read")
        return "read"

    clock.advance(TTL - 1)
    assert await lease.take("d1", read) is None
    assert reads == [] and lease.held_until("d1") is None
    assert await owner_of(store, "d1") == (OTHER, START + timedelta(seconds=30))
    clock.advance(2)  # the other's lease has run out
    assert await lease.take("d1", read) == "read"
    assert await owner_of(store, "d1") == (ME, clock.now() + timedelta(seconds=30))


async def test_one_heartbeat_renews_every_lease_held_here_each_third_of_its_lifetime(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, clock, stepper, _ = both
    works = {}
    for did in ("d1", "d2"):
        await read_topic(store, did, lease)
        works[did] = asyncio.create_task(forever())
        lease.hold(did, works[did])
    first = heart(lease)
    await asyncio.sleep(0)
    assert stepper.asked == [10.0], "one heartbeat for both, waiting a third of the lease's lifetime"
    for beat in (1, 2, 3):
        clock.advance(10)
        await stepper.beat(first)
        for did in ("d1", "d2"):
            assert await owner_of(store, did) == (ME, clock.now() + timedelta(seconds=30)), beat
            assert lease.held_until(did) == (clock.now() + timedelta(seconds=30)).timestamp()
    assert stepper.asked == [10.0] * 4
    assert not any(w.done() for w in works.values())
    for w in works.values():
        w.cancel()
    await asyncio.gather(*works.values(), return_exceptions=True)
    renewed = await owner_of(store, "d1")
    clock.advance(10)
    await stepper.beat(first)
    assert first.done(), "with no work held the heartbeat ends"
    assert await owner_of(store, "d1") == renewed, "and renews nothing"
    again = asyncio.create_task(forever())
    lease.hold("d1", again)
    assert heart(lease) is not first, "the next work held starts it again"
    await asyncio.sleep(0)
    assert stepper.asked == [10.0] * 5
    again.cancel()


async def test_a_lease_another_process_took_stops_its_work_at_the_next_beat(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, clock, stepper, _ = both
    works = {}
    for did in ("d1", "d2"):
        await read_topic(store, did, lease)
        works[did] = asyncio.create_task(forever())
        lease.hold(did, works[did])
    async with store.tx() as tx:  # d1 was let go and taken by another process meanwhile
        await tx.release_lease("d1", ME)
        assert await tx.acquire_lease("d1", OTHER, clock.now(), TTL)
    clock.advance(10)
    await stepper.beat(heart(lease))
    await asyncio.sleep(0)
    assert works["d1"].cancelled() and not works["d2"].done()
    assert await owner_of(store, "d1") == (OTHER, START + timedelta(seconds=30))
    assert lease.held_until("d2") == (clock.now() + timedelta(seconds=30)).timestamp()
    works["d2"].cancel()


@contextmanager
def renewals_refused() -> Iterator[list[str]]:
    refused: list[str] = []

    def refuse(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("UPDATE DISCUSSIONS SET LEASE_EXPIRES_AT"):
            refused.append(statement)
            raise RuntimeError("the database is away")

    event.listen(Engine, "before_cursor_execute", refuse)
    try:
        yield refused
    finally:
        event.remove(Engine, "before_cursor_execute", refuse)


async def test_a_refused_renewal_keeps_the_work_only_while_the_lease_outlives_the_next_beat(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept], caplog: pytest.LogCaptureFixture) -> None:
    lease, clock, stepper, _ = both
    await read_topic(store, "d1", lease)  # held until START + 30 s
    work = asyncio.create_task(forever())
    lease.hold("d1", work)
    with renewals_refused() as refused, caplog.at_level(logging.WARNING, logger="core.running.lease"):
        clock.advance(10)
        await stepper.beat(heart(lease))  # next beat at +20 s, before the lease runs out: the work goes on
        await asyncio.sleep(0)
        assert len(refused) == 1 and not work.done()
        assert lease.held_until("d1") == (START + timedelta(seconds=30)).timestamp(), "not renewed"
        clock.advance(10)
        await stepper.beat(heart(lease))  # the next beat would come exactly as it runs out: stopped now
        await asyncio.sleep(0)
        assert len(refused) == 2 and work.cancelled()
    said = [r for r in caplog.records if r.name == "core.running.lease"]
    assert [r.getMessage() for r in said] == ["could not renew the leases on 1 discussion(s)"] * 2
    assert all(r.exc_info is not None and "the database is away" in str(r.exc_info[1]) for r in said), \
        "with the database's error"


async def test_a_lease_given_back_is_free_at_once_and_no_longer_renewed(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, clock, stepper, _ = both
    await read_topic(store, "d1", lease)
    work = asyncio.create_task(forever())
    lease.hold("d1", work)
    await lease.let_go("d1")
    assert await owner_of(store, "d1") == (None, None)
    assert lease.held_until("d1") is None and "d1" not in lease.work
    clock.advance(10)
    await stepper.beat(heart(lease))
    assert heart(lease).done() and await owner_of(store, "d1") == (None, None)
    assert not work.done(), "giving the lease back is the work's own doing, never a cancel"
    work.cancel()


async def test_let_go_leaves_another_process_lease_alone(store: Store,
                                                         both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, _ = both
    async with store.tx() as tx:
        assert await tx.acquire_lease("d1", OTHER, START, TTL)
    await lease.let_go("d1")
    assert await owner_of(store, "d1") == (OTHER, START + timedelta(seconds=30))


async def test_stop_ends_the_heartbeat(store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, _ = both
    await lease.stop()  # none runs: nothing to stop
    await read_topic(store, "d1", lease)
    work = asyncio.create_task(forever())
    lease.hold("d1", work)
    await asyncio.sleep(0)
    await lease.stop()
    assert heart(lease).cancelled() and not work.done()
    work.cancel()


async def test_a_fence_writes_under_the_lease_and_hands_the_discussion_as_it_is(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, kept = both
    await read_topic(store, "d1", lease)
    state = kept.start("d1")
    async with lease.fenced("d1") as (tx, d):
        assert d.id == "d1" and d.topic == "Topic of d1"
        assert state.open == 1 and state.turn.locked(), "one transaction of the driver open, holding its turn"
        d.topic = "Changed under the lease"
        await tx.save_discussion(d, START)
    assert state.open == 0 and not state.turn.locked()
    assert state.workspace == ("slack", "T1")
    async with store.tx() as tx:
        saved = await tx.discussion("d1")
    assert saved is not None and saved.topic == "Changed under the lease"


async def test_a_fence_that_finds_the_lease_gone_writes_nothing_and_stops_the_other_work(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, clock, _, kept = both
    await read_topic(store, "d1", lease)
    state = kept.start("d1")
    work = asyncio.create_task(forever())
    lease.hold("d1", work)
    clock.advance(TTL + 1)  # the lease ran out here
    with pytest.raises(LeaseLost):
        async with lease.fenced("d1") as (tx, d):
            d.topic = "Written without the lease"
            await tx.save_discussion(d, START)
    await asyncio.sleep(0)
    assert work.cancelled(), "the discussion's other work stops too"
    assert state.open == 0 and not state.turn.locked()
    async with store.tx() as tx:
        saved = await tx.discussion("d1")
    assert saved is not None and saved.topic == "Topic of d1"


async def test_the_work_that_finds_its_lease_gone_is_told_not_cancelled(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, clock, _, _ = both
    await read_topic(store, "d1", lease)
    clock.advance(TTL + 1)

    async def work() -> str:
        try:
            async with lease.fenced("d1"):
                return "written"
        except LeaseLost:
            await asyncio.sleep(0)  # a cancel of this very task would land here
            return "told"

    task = asyncio.create_task(work())
    lease.hold("d1", task)
    assert await task == "told"


def running_turn(key: str) -> Turn:
    return Turn(key=key, discussion_id="d1", round=1, step=1, phase=Phase.STATEMENT, persona_key="analyst",
                status=TurnStatus.RUNNING, created_at=START)


async def cost(store: Store) -> float:
    async with store.tx() as tx:
        d = await tx.discussion("d1")
    assert d is not None
    return float(d.cost_usd)


async def test_a_call_is_charged_by_the_fence_only_for_a_turn_known_running_in_a_whole_state(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, kept = both
    await read_topic(store, "d1", lease)
    state = kept.start("d1")
    async with lease.fenced("d1") as (tx, _):
        revision = tx.revision_at_fence
    usage = Usage(cost_usd=0.25)
    async with lease.fenced("d1", charge=("k1", usage)) as (tx, _):
        assert not tx.charged_at_fence, "nothing kept yet: no revision read"
    state.revision = revision
    state.turns.by_key = {"k1": running_turn("k1")}
    state.held["k1"] = (0.1, START)
    async with lease.fenced("d1", charge=("k2", usage)) as (tx, _):
        assert not tx.charged_at_fence, "a turn not known running here"
    async with lease.fenced("d1", charge=("k1", None)) as (tx, _):
        assert not tx.charged_at_fence, "no call to charge"
    assert await cost(store) == 0.0
    async with lease.fenced("d1", charge=("k1", usage)) as (tx, d):
        assert tx.charged_at_fence and d.cost_usd == pytest.approx(0.25)
    assert await cost(store) == pytest.approx(0.25)


async def test_a_fence_reads_the_day_spend_only_when_asked_and_a_day_limit_is_set(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, kept = both
    await read_topic(store, "d1", lease)
    kept.start("d1")
    async with lease.fenced("d1") as (tx, _):
        assert tx.spent_at_fence is None, "not asked"
    async with lease.fenced("d1", spent=True) as (tx, _):
        pass  # the workspace is known from here on (PostgreSQL locks its spend by it)
    async with lease.fenced("d1", spent=True) as (tx, _):
        assert tx.spent_at_fence == (datetime(2026, 3, 2, tzinfo=UTC), 0.0), "since the day's midnight"
    lease.config.limits = Limits(workspace_usd_per_day=0.0)
    async with lease.fenced("d1", spent=True) as (tx, _):
        assert tx.spent_at_fence is None, "no day limit: nothing to read"


async def test_what_a_fenced_transaction_wrote_is_kept_once_it_commits(
        store: Store, both: tuple[Lease, Clock, Stepper, Kept]) -> None:
    lease, _, _, kept = both
    await read_topic(store, "d1", lease)
    state = kept.start("d1")
    state.turns.by_key = {}
    planned = running_turn("k1").model_copy(update={"status": TurnStatus.PLANNED})
    async with lease.fenced("d1") as (tx, _):
        await tx.start_turns([planned])
        assert state.turns.by_key == {}, "not before it commits"
    assert list(state.turns.by_key) == ["k1"]
