"""Replicas leasing a shared rate budget held by none a batch of tokens at a time, through the real store on both
backends: a replica never spends more than it leased, what it does not spend goes back, a stopped replica's lease
does not hold the others, the replicas together stay within the tier, a 429 reaches every replica, and the bucket's
row is written once a batch, not once a call. Time is a fake wall clock the test steps: nothing waits."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from sqlalchemy import event, text

from core.running.budget import LocalBuckets, RateBudget, SharedBuckets
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.clock import Beats

TIER3 = {"chat.update": 50}
PER_S, BURST = 0.88 * 50 / 60, 5.0  # Tier 3 as the budget spends it: 44 calls a minute, a burst of 5
KEY = "T1:chat.update"


class Wall:
    """The wall clock every replica reads; it moves only when the test moves it. Each budget's waits are recorded
    on its own list (see `Replica`)."""

    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


@dataclass
class Replica:
    buckets: SharedBuckets
    budget: RateBudget
    slept: list[float] = field(default_factory=list)

    async def final(self) -> float:
        """A call of work people must see: when it goes out (now, plus the wait the budget asked for)."""
        before = len(self.slept)
        await self.budget.spend("T1", "chat.update")
        return sum(self.slept[before:])


@dataclass
class Cluster:
    store: Store
    wall: Wall
    writes: list[str]  # the statements on the budget's rows, as sent
    replicas: list[Replica] = field(default_factory=list)

    def replica(self, flush_s: float = 3600, holds: bool = False) -> Replica:
        """A replica that leases (that holds buckets, with `holds`)."""
        buckets = SharedBuckets(self.store, holds=holds, wall=self.wall)
        buckets.FLUSH_S = flush_s  # no write-back but when the test asks for one
        slept: list[float] = []

        async def sleep(s: float) -> None:
            slept.append(s)

        self.replicas.append(Replica(buckets, RateBudget(buckets, TIER3, wall=self.wall, sleep=sleep), slept))
        return self.replicas[-1]

    async def row(self, key: str = KEY) -> tuple[float, float, float]:
        async with self.store.tx() as tx:
            found = await tx.lock_held_bucket(key)
        assert found is not None
        return found[0]


@pytest.fixture
async def cluster(db_url: str) -> AsyncIterator[Cluster]:
    """Replicas on one migrated database of each backend (sharing its store: each keeps its own leases)."""
    store = Store(make_engine(db_url))
    writes: list[str] = []

    @event.listens_for(store.engine.sync_engine, "before_cursor_execute")
    def _count(_c: object, _cur: object, statement: str, *_: object) -> None:
        if "rate_budget" in statement:
            writes.append(statement.split()[0])

    made = Cluster(store, Wall(), writes)
    try:
        yield made
    finally:
        for r in made.replicas:
            await r.buckets.close()
        await store.close()


def most_in_a_minute(stamps: list[float]) -> int:
    stamps = sorted(stamps)
    return max((sum(1 for s in stamps if start <= s < start + 60) for start in stamps), default=0)


async def test_replicas_at_one_instant_share_one_burst_and_wait_in_turn_for_the_rest(cluster: Cluster) -> None:
    """No refill at one instant: whatever each replica leased, together they get the burst and no more, and every
    final call past it waits its turn for the refill."""
    replicas = [cluster.replica() for _ in range(3)]
    spares = [await r.budget.spend_spare("T1", "chat.update") for _ in range(4) for r in replicas]
    assert sum(spares) == BURST
    outs = sorted([await r.final() for _ in range(4) for r in replicas])
    for k, out in enumerate(outs, start=1):  # the k-th call past the burst waits for k refills
        assert out >= k / PER_S - 1e-6, (k, outs)


async def test_a_replica_spends_in_memory_what_it_leased_and_leases_again_only_when_it_ran_out(
        cluster: Cluster) -> None:
    """The row's `taken` says what each lease took: between two leases the replica makes exactly that many
    calls."""
    one = cluster.replica()
    took: list[float] = []
    calls_between: list[int] = []
    for _ in range(12):
        before = len(cluster.writes)
        await one.final()
        if len(cluster.writes) > before:  # this call leased
            async with cluster.store.tx() as tx:
                took.append(float((await tx.conn.execute(text(
                    "SELECT taken FROM rate_budget WHERE key = 'T1:chat.update'"))).scalar_one()))
            calls_between.append(0)
        calls_between[-1] += 1
    assert calls_between[:-1] == took[:-1]  # each lease's tokens, spent to the last, and then the next lease
    assert calls_between[-1] <= took[-1]


async def test_unspent_tokens_go_back_when_their_time_runs_out_and_at_close(cluster: Cluster) -> None:
    one = cluster.replica()
    for _ in range(4):  # leases of 1, 2, then 4 (alone on the bucket: ahead of the refill), one of them spent
        await one.final()
    spent = 4
    assert (await cluster.row())[0] < BURST - spent  # the row counts the whole last lease taken
    later = 2 / PER_S + SharedBuckets.LEASE_S + 0.5  # the time of the last of them, leased ahead, ran out too
    cluster.wall.t += later
    await one.buckets.flush()
    # The row reads as if only the calls spent had been taken from it, refilled since.
    after = BURST - spent + later * PER_S
    assert (await cluster.row())[0] == pytest.approx(after)
    two = cluster.replica()  # its first call reads the row under its lock; then leases of 1, 2 and 4
    for _ in range(5):
        await two.final()
    before = (await cluster.row())[0]
    await two.buckets.close()  # at close, before their time ran out
    assert (await cluster.row())[0] > before
    assert (await cluster.row())[0] == pytest.approx(after - 5)


async def test_a_stopped_replicas_lease_holds_the_others_only_until_its_tokens_would_have_been_spent(
        cluster: Cluster) -> None:
    """A replica that stops hands nothing back: its tokens count as spent when leased, and the bucket refills from
    there, so the others have the whole rate back within a burst's refill, and never wait on its lease."""
    stopped = cluster.replica()
    for _ in range(4):  # its last lease took 4, ahead of the refill: 3 left unspent, two of them not yet there
        await stopped.final()
    cluster.replicas.remove(stopped)  # stopped: never closed, nothing handed back
    alive = cluster.replica()
    first_minute = [await alive.final() for _ in range(int(BURST + 60 * PER_S))]
    assert max(first_minute) <= 60 + 7 / PER_S  # the stopped lease cost at most its 7 tokens' refill
    cluster.wall.t += 120
    second = [await alive.final() for _ in range(int(60 * PER_S))]
    assert max(second) <= 60, "a minute on, the whole rate is back"


async def test_a_token_not_spent_within_its_time_is_never_spent_and_goes_back(cluster: Cluster) -> None:
    """The bucket counted a leased token when it was leased (or when it would have had it): spent later than
    `LEASE_S` after that, a minute's calls could pass the limit (see `SharedBuckets`)."""
    one = cluster.replica()
    assert await one.budget.spend_spare("T1", "chat.update")  # a lease of one
    assert await one.budget.spend_spare("T1", "chat.update")  # a lease of two, one of them left unspent
    cluster.wall.t += SharedBuckets.LEASE_S + 0.01
    before = len(cluster.writes)
    assert await one.budget.spend_spare("T1", "chat.update")
    assert len(cluster.writes) == before + 1, "the one left was too old to spend: a new lease, the old one in it"
    row, taken = await cluster.row(), await taken_by_last_lease(cluster)
    # A full bucket less the 2 calls spent, refilled since: the old token went back with the lease.
    assert row[0] + taken == pytest.approx(BURST - 2 + (SharedBuckets.LEASE_S + 0.01) * PER_S)


async def taken_by_last_lease(cluster: Cluster) -> float:
    async with cluster.store.tx() as tx:
        return float((await tx.conn.execute(text(
            "SELECT taken FROM rate_budget WHERE key = 'T1:chat.update'"))).scalar_one())


async def test_several_replicas_together_never_exceed_the_tier_whatever_the_mix(cluster: Cluster) -> None:
    """Three replicas on one workspace, each asking for final calls, live text and spare calls at random, for three
    minutes: in no minute do they make more than the tier's 50 calls."""
    replicas = [cluster.replica(), cluster.replica(), cluster.replica()]
    draw = random.Random(7)
    stamps: list[float] = []
    for step in range(1800):
        cluster.wall.t += 0.1
        if step == 900:
            await replicas[0].budget.refused("T1", "chat.update", retry_after_s=5)
        for r in replicas:
            ask = draw.random()
            if ask < 0.04:
                stamps.append(cluster.wall.t + await r.final())
            elif ask < 0.15 and await r.budget.spend_left("T1", "chat.update", first=ask < 0.1):
                stamps.append(cluster.wall.t)
            elif ask < 0.25 and await r.budget.spend_spare("T1", "chat.update"):
                stamps.append(cluster.wall.t)
            elif ask < 0.3:
                await r.budget.idle("T1", "chat.update")
        if step % 10 == 0:
            for r in replicas:
                await r.buckets.flush()
    assert len(stamps) > 3 * 40  # the tier was used: not a test of doing nothing
    assert most_in_a_minute(stamps) <= 50


async def test_a_429_seen_by_one_replica_pauses_the_others(cluster: Cluster) -> None:
    one, two = cluster.replica(), cluster.replica()
    assert await two.budget.spend_left("T1", "chat.update", first=True)  # two has met the workspace's live text
    await one.budget.refused("T1", "chat.update", retry_after_s=30)
    assert await two.final() >= 30, "the next lease reads the pause in the row"
    await two.buckets.flush()  # the write-back reads live text's pause
    assert not await two.budget.spend_left("T1", "chat.update", first=True)
    cluster.wall.t += 31 + 60
    await two.buckets.flush()
    assert await two.budget.spend_left("T1", "chat.update", first=True)


async def test_the_row_is_written_once_a_batch_not_once_a_call(cluster: Cluster) -> None:
    """Three replicas on one workspace, each making final calls as fast as the tier allows between them, and one
    replica alone: a statement on the bucket's row for several calls (each row write was a call's before)."""
    alone = cluster.replica()
    for _ in range(100):  # a queue of posts: more than the refill brings
        cluster.wall.t += 0.5 / PER_S
        await alone.final()
    assert len(cluster.writes) <= 100 / 4, cluster.writes  # batches of the burst, or near it
    await alone.buckets.close()
    cluster.replicas.remove(alone)
    cluster.writes.clear()
    replicas = [cluster.replica() for _ in range(3)]
    calls = 0
    for step in range(60):  # each replica in turn a turn's three calls at once, as fast as the tier allows
        cluster.wall.t += 3 / PER_S
        for _ in range(3):
            await replicas[step % 3].final()
            calls += 1
        assert await replicas[step % 3].budget.idle("T1", "chat.update") in (True, False)  # a look: no statement
        if step % 10 == 0:
            for r in replicas:
                await r.buckets.flush()
    assert len(cluster.writes) <= calls / 2, (len(cluster.writes), calls)


async def test_a_write_back_that_fails_is_logged_and_the_next_hands_back_what_it_could_not(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    beats = Beats()
    one = cluster.replica(flush_s=1.0)
    one.buckets._sleep = beats
    for _ in range(4):  # the last lease's 3 unspent, two of them ahead of the refill
        await one.final()
    later = 2 / PER_S + SharedBuckets.LEASE_S + 0.5  # their time ran out
    cluster.wall.t += later
    await renamed(cluster.store, "rate_budget", "rate_budget_away")
    try:
        await beats.tick()
    finally:
        await renamed(cluster.store, "rate_budget_away", "rate_budget")
    failed = [r for r in caplog.records if "could not write back" in r.getMessage()]
    assert failed and failed[0].exc_info  # logged, with why
    await beats.tick()
    assert (await cluster.row())[0] == pytest.approx(BURST - 4 + later * PER_S)


async def test_close_hands_back_and_a_failure_to_is_logged_not_raised(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    one = cluster.replica(flush_s=1.0)
    one.buckets._sleep = Beats()
    for _ in range(4):
        await one.final()
    writing = one.buckets._flusher
    await renamed(cluster.store, "rate_budget", "rate_budget_away")
    try:
        await one.buckets.close()
    finally:
        await renamed(cluster.store, "rate_budget_away", "rate_budget")
    assert writing is not None and writing.cancelled() and one.buckets._flusher is None
    failed = [r for r in caplog.records if "let go" in r.getMessage()]
    assert [r.getMessage() for r in failed] == ["could not let go of 1 rate budget bucket(s)"]
    assert failed[0].exc_info
    await one.buckets.close()  # the tokens kept, and handed back now
    assert (await cluster.row())[0] == pytest.approx(BURST - 4)


async def test_a_replica_forgets_the_buckets_nothing_used_for_a_while(cluster: Cluster) -> None:
    one = cluster.replica()
    await one.final()
    await one.budget.spend_left("T1", "chat.update")
    cluster.wall.t += SharedBuckets.IDLE_S - 1
    await one.buckets.flush()
    assert set(one.buckets._leases) == {KEY}
    cluster.wall.t += 1
    await one.buckets.flush()
    assert one.buckets._leases == {}


async def renamed(store: Store, old: str, new: str) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))


def test_a_lease_may_wait_past_its_tokens_readiness_only_as_long_as_the_tiers_margin_allows() -> None:
    """The burst and a minute's refill are 98% of the limit: a token spent `LEASE_S` after the bucket counted it
    adds at most LEASE_S of refill to a minute's calls, which must stay under the limit, for every tier whose burst
    is a tenth of it (Tier 1's one call a minute is a burst of one, as before)."""
    for limit in (20, 50, 100, 300):
        rate = RateBudget(LocalBuckets(), {"m": limit}).rate("m")
        assert rate is not None
        assert rate.burst + 60 * rate.per_s + SharedBuckets.LEASE_S * rate.per_s <= limit
