"""The rate budget's rules: final work first, live text from what is left, a 429 pauses, pacing per channel; each
rule kept alike in one process's memory and by replicas leasing tokens from a row per bucket (on both backends).
The leases themselves are tested in test_rate_leases."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import event, text

from core.running.budget import Buckets, LocalBuckets, RateBudget, SharedBuckets, buckets_for
from core.storage.db import make_engine, migrate
from core.storage.store import Store
from tests.fakes.clock import Beats

TIER3 = {"chat.update": 50}


class Wall:
    """The wall clock the budget reads, moved by the budget's own waits: nothing really sleeps."""

    def __init__(self) -> None:
        self.t = 1_000_000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.t

    async def sleep(self, s: float) -> None:
        self.slept.append(s)


def budget(wall: Wall, buckets: Buckets | None = None) -> RateBudget:
    return RateBudget(buckets or LocalBuckets(), TIER3, wall=wall, sleep=wall.sleep)


Kind = Callable[[Wall], Buckets]


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def kind_url(request: pytest.FixtureRequest) -> str:
    """No database (buckets in memory), or a migrated database of either backend."""
    if request.param == "memory":
        return ""
    return str(request.getfixturevalue("sqlite_url" if request.param == "sqlite" else "pg_url"))


@pytest.fixture
async def kind(kind_url: str) -> AsyncIterator[Kind]:
    """Buckets in this process's memory, or leased from rows of the store by one replica that holds none (held,
    they are in its memory as well): the same rules hold."""
    if not kind_url:
        yield lambda _wall: LocalBuckets()
        return
    store = Store(make_engine(kind_url))
    made: list[SharedBuckets] = []

    def leased(wall: Wall) -> SharedBuckets:
        made.append(SharedBuckets(store, holds=False, wall=wall))
        made[-1].FLUSH_S = 3600  # no write-back but at close
        return made[-1]

    try:
        yield leased
    finally:
        for b in made:
            await b.close()
        await store.close()


async def test_live_text_takes_only_a_call_a_full_bucket_would_lose_and_finals_never_wait_for_it(kind: Kind) -> None:
    """With many discussions in a workspace, final work (headers, polls) keeps coming all round long: every call
    live text took above a partial reserve delayed it (with 100 discussions, live text took 66 to 109 edits of a
    round that needed 400, each a Tier-3 call the round waited for). So live text takes a call only when the
    bucket is full: one nothing else would use."""
    wall = Wall()
    b = budget(wall, kind(wall))
    live = 0
    while await b.spend_left("T1", "chat.update"):
        live += 1
    assert live == 1  # a full bucket holds 5 calls; after one, it is no longer full
    for _ in range(4):
        await b.spend("T1", "chat.update")
    assert wall.slept == []  # the final posts found their calls ready
    await b.spend("T1", "chat.update")
    assert wall.slept and 0 < wall.slept[-1] <= 60 / 44 + 1e-9  # the next one waits for the refill (44 a minute)...
    assert not await b.spend_left("T1", "chat.update")  # ...and live text gets nothing meanwhile
    wall.t += 60
    assert await b.spend_left("T1", "chat.update")  # a minute later, the bucket has refilled
    assert await b.spend_left("T2", "chat.update")  # another workspace has a budget of its own


async def test_a_turns_first_live_words_take_a_call_above_a_smaller_reserve(kind: Kind) -> None:
    """Under the full-bucket rule alone, a turn written beside another showed its first words 2 s late in a quiet
    workspace (the other turn's words had just taken the bucket's top call): people see a turn start at once
    unless final work needs the calls."""
    wall = Wall()
    b = budget(wall, kind(wall))
    assert await b.spend_left("T1", "chat.update")  # one turn's words: the bucket is no longer full
    assert not await b.spend_left("T1", "chat.update")
    first = 0
    while await b.spend_left("T1", "chat.update", first=True):
        first += 1
    assert first == 2  # of the 4 left, 1.5 (and the one under) stay for final work


async def test_a_minute_of_calls_never_exceeds_the_tier_whatever_the_mix(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    stamps: list[float] = []
    for i in range(200):
        wall.t += 0.25
        if i % 3 == 0:
            before = len(wall.slept)
            await b.spend("T1", "chat.update")
            stamps.append(wall.t + sum(wall.slept[before:]))  # the call goes out after its wait
        elif await b.spend_left("T1", "chat.update"):
            stamps.append(wall.t)
    stamps.sort()
    assert max(sum(1 for s in stamps if start <= s < start + 60) for start in stamps) <= 50


async def test_a_429_pauses_live_text_and_final_posts_wait_it_out(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    await b.refused("T1", "chat.update", retry_after_s=30)
    assert not await b.spend_left("T1", "chat.update")
    await b.spend("T1", "chat.update")
    assert wall.slept[-1] >= 30
    wall.t += 31
    assert not await b.spend_left("T1", "chat.update")  # the bucket counts itself empty after a refusal
    wall.t += 60
    assert await b.spend_left("T1", "chat.update")


async def test_a_429_on_any_method_pauses_the_workspaces_live_text(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    await b.refused("T1", "chat.postMessage", retry_after_s=5, channel="C1")  # a channel's posts, not chat.update
    assert not await b.spend_left("T1", "chat.update")
    assert await b.spend_left("T2", "chat.update")  # another workspace goes on
    wall.t += 5
    assert await b.spend_left("T1", "chat.update"), "live text goes on as the pause ends"
    assert await b.spend_left("T1", "users.info"), "a method with no budget is never short"


async def test_a_bucket_is_idle_only_while_it_holds_half_its_burst_and_is_not_paused(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))  # Tier 3: a burst of 5 calls, 0.733 a second back
    assert await b.idle("T1", "chat.update"), "a bucket never used is full"
    for _ in range(2):
        await b.spend("T1", "chat.update")
    assert await b.idle("T1", "chat.update"), "3 of 5 left: at least half"
    await b.spend("T1", "chat.update")
    assert not await b.idle("T1", "chat.update"), "2 of 5 left"
    assert wall.slept == [], "asking takes nothing and waits for nothing"
    wall.t += 1
    assert await b.idle("T1", "chat.update"), "refilled past half"
    await b.refused("T1", "chat.update", retry_after_s=30)
    wall.t += 29
    assert not await b.idle("T1", "chat.update"), "paused by the platform"
    assert await RateBudget(LocalBuckets(), TIER3).idle("T1", "users.info"), "a method with no budget is never busy"
    even = RateBudget(LocalBuckets(), {"m": 40}, wall=wall, sleep=wall.sleep)  # a burst of 4
    for _ in range(2):
        await even.spend("T1", "m")
    assert await even.idle("T1", "m"), "exactly half its burst is still idle"


async def test_a_spare_call_is_taken_only_if_one_is_there_now_down_to_the_last(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    assert [await b.spend_spare("T1", "chat.update") for _ in range(6)] == [True] * 5 + [False]
    assert wall.slept == [] and b.spent[("chat.update", "spare")] == 5 and b.spent[("chat.update", "skipped")] == 1
    wall.t += 2
    assert await b.spend_spare("T1", "chat.update")
    assert await b.spend_spare("T1", "users.info"), "a method with no budget is always there"


async def test_a_429_keeps_the_calls_already_promised_and_the_next_waits_for_them_after_the_pause(kind: Kind) -> None:
    """Posts already waiting for their slots still go out: a refusal does not wipe the queue they are in."""
    wall = Wall()
    b = budget(wall, kind(wall))  # Tier 3: a burst of 5, 0.733 a second back
    for _ in range(7):  # two of them wait for a refill
        await b.spend("T1", "chat.update")
    await b.refused("T1", "chat.update", retry_after_s=1)
    await b.spend("T1", "chat.update")
    assert wall.slept[-1] == pytest.approx(1 + 3 / (0.88 * 50 / 60))  # the pause, then the two before it and itself
    for _ in range(3):  # a channel's posts, a second apart: two wait
        await b.pace("T1", "C1", 1.0)
    wall.t += 0.5
    await b.refused("T1", "chat.postMessage", retry_after_s=1, channel="C1")
    await b.pace("T1", "C1", 1.0)
    assert wall.slept[-1] == pytest.approx(1 + 2.5)  # the pause, then what the two before it still wait for


async def test_spare_calls_are_counted_per_workspace(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    assert [await b.spend_spare("T1", "chat.update") for _ in range(6)] == [True] * 5 + [False]
    assert await b.spend_spare("T2", "chat.update")


async def test_a_429_on_a_channels_post_pauses_that_channel_and_not_the_workspaces_method(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    await b.refused("T1", "chat.postMessage", retry_after_s=5, channel="C1")
    await b.pace("T1", "C1", 1.0)
    # The refusal's 5 s, then the channel's interval: the bucket counts itself empty from the end of the pause.
    assert wall.slept == [6.0], "the channel's next post waits out the refusal"
    await b.pace("T1", "C2", 1.0)
    assert wall.slept == [6.0], "another channel is not held"
    assert await b.spend_spare("T1", "chat.update"), "the workspace's edits are not paused by a channel's 429"
    assert b.spent[("chat.postMessage", "refused")] == 1


async def test_every_call_is_counted_by_what_it_was_spent_on(kind: Kind) -> None:
    """The counts a bench reads to say where a workspace's calls went: final work, live text, skipped, refused."""
    wall = Wall()
    b = budget(wall, kind(wall))
    assert await b.spend_left("T1", "chat.update", first=True)
    assert await b.spend_left("T1", "chat.update", first=True)
    await b.spend("T1", "chat.update")
    await b.spend("T1", "chat.update")
    assert not await b.spend_left("T1", "chat.update")
    assert not await b.spend_left("T1", "chat.update")
    for _ in range(2):
        await b.refused("T1", "chat.update", retry_after_s=1)
    assert dict(b.spent) == {("chat.update", "final"): 2, ("chat.update", "live"): 2,
                             ("chat.update", "skipped"): 2, ("chat.update", "refused"): 2}


async def test_a_refusal_keeps_live_text_paused_until_the_later_of_two_pauses(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    await b.refused("T1", "chat.postMessage", retry_after_s=30)  # the workspace's new messages: not chat.update
    await b.refused("T1", "chat.postMessage", retry_after_s=5, channel="C1")  # a shorter one after it
    wall.t += 6
    assert not await b.spend_left("T1", "chat.update", first=True), "the first pause still holds"
    wall.t += 25
    assert await b.spend_left("T1", "chat.update", first=True)


async def test_new_messages_are_paced_per_channel_in_the_order_asked(kind: Kind) -> None:
    wall = Wall()
    b = budget(wall, kind(wall))
    for _ in range(4):
        await b.pace("T1", "C1", 1.0)
    await b.pace("T1", "C2", 1.0)
    assert wall.slept == [1.0, 2.0, 3.0]  # C1's second, third and fourth slots; C2's first is free
    await b.pace("T1", "C1", 0.0)
    assert wall.slept == [1.0, 2.0, 3.0], "no interval: no pace"


async def test_the_time_scale_shortens_every_wait_alike() -> None:
    wall = Wall()
    b = RateBudget(LocalBuckets(), TIER3, scale=10.0, wall=wall, sleep=wall.sleep)
    await b.pace("T1", "C1", 1.0)
    await b.pace("T1", "C1", 1.0)
    assert wall.slept == [0.1]





async def test_one_process_keeps_its_buckets_in_memory_and_replicas_share_them_in_the_database(db_url: str) -> None:
    store = Store(make_engine(db_url))
    try:
        kind = buckets_for(store)
        assert isinstance(kind, LocalBuckets if db_url.startswith("sqlite") else SharedBuckets)
        if isinstance(kind, SharedBuckets):  # in that database, its holds timed on the budget's clock
            sped = buckets_for(store, scale=20)
            assert (kind.store, kind.scale) == (store, 1.0) and isinstance(sped, SharedBuckets) and sped.scale == 20
    finally:
        await store.engine.dispose()


async def test_replicas_share_one_budget_through_the_database(db_url: str) -> None:
    wall = Wall()
    stores = [Store(make_engine(db_url)), Store(make_engine(db_url))]
    await migrate(stores[0].engine)
    try:
        one, two = (budget(wall, SharedBuckets(s)) for s in stores)
        taken = await asyncio.gather(*(r.spend_left("T1", "chat.update") for r in (one, two) for _ in range(4)))
        assert sum(taken) == 1  # the one call a full bucket holds beyond final work, whichever replica asked
        await one.pace("T1", "C1", 1.0)
        await two.pace("T1", "C1", 1.0)
        assert wall.slept == [1.0]  # the second replica's post waits for the first one's second
    finally:
        for s in stores:
            await s.close()


def sent(store: Store) -> list[str]:
    """What the store's connections send the server from now on: each statement's verb, and BEGIN and COMMIT as
    asyncpg sends them (SQLAlchemy's own begin event also fires for a statement that commits on its own)."""
    seen: list[str] = []

    @event.listens_for(store.engine.sync_engine, "connect")
    def _log(dbapi_connection: Any, _record: object) -> None:
        dbapi_connection.driver_connection.add_query_logger(lambda q: seen.append(q.query.split()[0].upper()))

    event.listen(store.engine.sync_engine, "before_cursor_execute",
                 lambda _c, _cur, statement, *_: seen.append(statement.split()[0]))
    return seen


@pytest.fixture
async def watched(pg_url: str) -> AsyncIterator[tuple[Store, list[str]]]:
    """One replica's store on a migrated PostgreSQL database, and what its connections send from now on."""
    store = Store(make_engine(pg_url))
    seen = sent(store)
    await migrate(store.engine)
    try:
        yield store, seen
    finally:
        await store.close()


async def test_a_replica_leases_a_batch_in_one_statement_spends_it_in_memory_and_never_undoes_another(
        pg_url: str) -> None:
    wall = Wall()
    stores = [Store(make_engine(pg_url)), Store(make_engine(pg_url))]
    seen = sent(stores[0])
    await migrate(stores[0].engine)
    try:
        one, two = (budget(wall, SharedBuckets(s, holds=False, wall=wall)) for s in stores)
        await one.spend("T1", "chat.update")  # the workspace's buckets made, and a first lease of one
        seen.clear()
        await asyncio.gather(*(one.spend("T1", "chat.update") for _ in range(2)))  # they queue here for one lease
        assert seen == ["INSERT"]  # a batch of two, in one statement, no transaction; none read
        await two.spend("T1", "chat.update")  # the other replica spends meanwhile
        seen.clear()
        await one.spend("T1", "chat.update")  # what this replica knows is stale: its lease is counted in the row
        assert seen == ["INSERT"]
        tokens = (await tokens_in(stores[0], "T1:chat.update"))[0]
        assert tokens == 5 - 5  # a full Tier 3 bucket holds 5 calls; five were taken at the same instant
    finally:
        for s in stores:
            await s.close()


async def test_a_workspaces_buckets_are_made_together_and_held_at_its_first_call_in_one_statement(
        watched: tuple[Store, list[str]]) -> None:
    """Made one by one as first used, a workspace's buckets (one a method) cost 0.37 statements a model call with
    100 discussions on PostgreSQL, once holds had taken the rest."""
    store, seen = watched
    wall = Wall()
    seen.clear()
    buckets = SharedBuckets(store, wall=wall)
    spending = RateBudget(buckets, {"chat.update": 50, "users.info": 100}, wall=wall, sleep=wall.sleep)
    await spending.spend("T1", "chat.update")  # no replica has met this workspace yet
    assert await spending.spend_left("T1", "users.info")
    assert {s.rstrip(";") for s in seen} == {"INSERT"} and len(seen) <= 2, seen  # one, as each of both sees it
    for key, full in (("T1:chat.update", 5), ("T1:users.info", 10), ("T1:live", 0)):
        assert await tokens_in(store, key) == (full, buckets.me)  # made as they start, held
    await buckets.flush()
    assert await tokens_in(store, "T1:chat.update") == (5 - 1, buckets.me)  # the call taken, written back
    await buckets.close()


async def made_elsewhere(store: Store, wall: Wall) -> None:
    """T1's `chat.update` bucket made, and one call taken from it, by another replica (one without holds)."""
    await budget(wall, SharedBuckets(store, holds=False, wall=wall)).spend("T1", "chat.update")


async def test_a_bucket_another_replica_made_is_read_under_its_lock_after_the_insert_found_it(
        watched: tuple[Store, list[str]]) -> None:
    store, seen = watched
    wall = Wall()
    await made_elsewhere(store, wall)
    seen.clear()
    buckets = SharedBuckets(store, wall=wall)  # another replica, which has not met the bucket
    await budget(wall, buckets).spend("T1", "chat.update")
    assert [s for s in seen if s.rstrip(";") not in ("BEGIN", "COMMIT")] == ["INSERT", "SELECT", "UPDATE"], seen
    assert await tokens_in(store, "T1:chat.update") == (5 - 2, buckets.me)
    await buckets.close()


async def test_two_replicas_meeting_a_new_bucket_at_once_take_turns_and_neither_starts_it_afresh(pg_url: str) -> None:
    stores = [Store(make_engine(pg_url)), Store(make_engine(pg_url))]
    await migrate(stores[0].engine)
    watcher = make_engine(pg_url)
    try:
        one = budget(Wall(), SharedBuckets(stores[0]))
        async with stores[1].tx() as tx:  # the other replica makes the bucket, one call taken, not yet committed
            assert await tx.make_bucket("T1:chat.update", (4.0, Wall()(), 0.0))
            spending = asyncio.create_task(one.spend("T1", "chat.update"))
            # Until this replica's own first write waits for the other's row: each look is a query the server
            # answers, and between two looks the spending task runs; no clock is waited for.
            for _ in range(5000):
                async with watcher.connect() as c:
                    if (await c.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                             "AND datname = current_database()"))).scalar():
                        break
                await asyncio.sleep(0)
            else:
                raise AssertionError("the replica never waited for the other's row")
        await spending
        tokens = (await tokens_in(stores[0], "T1:chat.update"))[0]
        assert tokens == 5 - 2  # both calls taken from one bucket
    finally:
        await watcher.dispose()
        for s in stores:
            await s.close()


async def test_live_text_on_buckets_held_by_none_costs_a_lease_of_one_statement_and_no_transaction(
        watched: tuple[Store, list[str]]) -> None:
    store, seen = watched
    wall = Wall()
    spending = budget(wall, SharedBuckets(store, holds=False, wall=wall))  # a bucket held by none (see below)
    # Turns' first words (above the smaller reserve), so that both calls are taken from a bucket starting full.
    assert await spending.spend_left("T1", "chat.update", first=True)  # buckets new to this replica: read and locked
    seen.clear()
    assert await spending.spend_left("T1", "chat.update", first=True)
    assert seen == ["INSERT"]  # the call leased; the pause read took nothing, so wrote nothing


async def test_a_look_that_takes_nothing_writes_nothing_and_the_next_take_counts_the_time_it_let_pass(
        watched: tuple[Store, list[str]]) -> None:
    """Every Slack call asked whether the workspace was idle or live text paused, and each such look wrote its
    bucket back (3.5 of 4.9 bucket writes a model call on PostgreSQL), though all it changed was the time."""
    store, seen = watched
    wall = Wall()
    buckets = SharedBuckets(store, holds=False, wall=wall)
    spending = budget(wall, buckets)
    await spending.spend("T1", "chat.update")  # the bucket new to this replica: made, one call leased
    await spending.spend_left("T1", "chat.update")  # and the live bucket
    seen.clear()
    assert await spending.idle("T1", "chat.update")  # 4 of 5 left: idle, taking nothing
    assert not await spending.spend_left("T1", "chat.update")  # above the reserve? no: refused, nothing taken
    assert seen == []
    wall.t += 60  # a minute: the bucket is full again, counted from the row as last written
    for _ in range(5):
        await spending.spend("T1", "chat.update")
    await buckets.close()  # what it leased and did not spend, handed back
    tokens = (await tokens_in(store, "T1:chat.update"))[0]
    assert tokens == 0  # five taken from a full bucket of five: the looks lost no refill and took no call


async def test_past_the_buckets_it_remembers_a_replica_forgets_them_and_reads_each_again(
        watched: tuple[Store, list[str]]) -> None:
    store, seen = watched
    wall = Wall()
    buckets = SharedBuckets(store, holds=False, wall=wall)
    buckets.KNOWN_MAX = 3
    spending = budget(wall, buckets)
    await spending.spend("T1", "chat.update")  # two buckets remembered: the method's and live text's
    await spending.spend("T2", "chat.update")  # a third, then a fourth, past the limit: the memory starts over
    seen.clear()
    await spending.spend("T1", "chat.update")
    assert "SELECT" in seen  # forgotten: read (and locked) again, not written blind


async def tokens_in(store: Store, key: str) -> tuple[float, str | None]:
    """A bucket's tokens and holder as its row reads them."""
    async with store.tx() as tx:
        found = await tx.lock_held_bucket(key)
    assert found is not None
    return found[0][0], found[1][0]


def held(store: Store, wall: Wall, flush_s: float = 0.05) -> SharedBuckets:
    buckets = SharedBuckets(store, wall=wall)
    buckets.FLUSH_S = flush_s  # a write-back this often (a second in production)
    return buckets


@dataclass
class Holder:
    """One replica on a migrated PostgreSQL database, holding its buckets, written back only when a test asks."""

    store: Store
    seen: list[str]
    wall: Wall
    buckets: SharedBuckets
    spending: RateBudget


@pytest.fixture
async def holder(watched: tuple[Store, list[str]]) -> AsyncIterator[Holder]:
    store, seen = watched
    wall = Wall()
    buckets = held(store, wall, flush_s=3600)
    try:
        yield Holder(store, seen, wall, buckets, budget(wall, buckets))
    finally:
        await buckets.close()


@pytest.fixture
async def pair(pg_url: str) -> AsyncIterator[tuple[Store, Store, list[SharedBuckets]]]:
    """Two replicas' stores on one migrated PostgreSQL database; the buckets a test puts in the list are closed
    (their holds let go) before the stores."""
    stores = (Store(make_engine(pg_url)), Store(make_engine(pg_url)))
    await migrate(stores[0].engine)
    opened: list[SharedBuckets] = []
    try:
        yield stores[0], stores[1], opened
    finally:
        for b in opened:
            await b.close()
        for s in stores:
            await s.close()


async def test_a_replica_alone_spends_from_the_buckets_it_holds_with_no_statement_and_writes_them_back_together(
        holder: Holder) -> None:
    """A replica's Slack calls cost a bucket write each (4.1 of 8.1 transactions a model call with 100 discussions
    on PostgreSQL) though no other replica used those buckets."""
    store, seen, wall, buckets, spending = holder.store, holder.seen, holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")  # new: read and made, held by this replica
    await spending.pace("T1", "C1", 1.0)
    assert not await spending.spend_left("T1", "chat.update")  # and live text's pause: 4 left is the reserve
    seen.clear()
    for _ in range(3):
        await spending.spend("T1", "chat.update")
        await spending.pace("T1", "C1", 1.0)
    assert not await spending.spend_left("T1", "chat.update")
    assert seen == []  # all in this replica's memory
    assert await tokens_in(store, "T1:chat.update") == (5.0, buckets.me)  # the row: as the hold was taken
    seen.clear()
    await buckets.flush()
    verbs = [s.rstrip(";") for s in seen]
    assert verbs.count("BEGIN") == 1 and set(verbs) == {"BEGIN", "UPDATE", "COMMIT"}  # one transaction
    assert await tokens_in(store, "T1:chat.update") == (1.0, buckets.me)
    assert wall.slept == [1.0, 2.0, 3.0]  # the channel's posts paced from memory as from the row
    await buckets.close()
    assert await tokens_in(store, "T1:chat.update") == (1.0, None)  # let go at close, as written


async def test_a_replica_needing_a_bucket_another_holds_gets_it_at_the_next_write_back_and_neither_holds_it_after(
        pair: tuple[Store, Store, list[SharedBuckets]]) -> None:
    store, other, opened = pair
    wall = Wall()
    first, second = held(store, wall), held(other, wall)
    opened += [first, second]
    one, two = budget(wall, first), budget(wall, second)
    await one.spend("T1", "chat.update")
    await one.spend("T1", "chat.update")  # in the first replica's memory: the row still reads 4
    await asyncio.wait_for(two.spend("T1", "chat.update"), 5)  # waits for the first to let it go
    assert await tokens_in(store, "T1:chat.update") == (2.0, None)  # three taken, none lost; held by none
    assert "T1:chat.update" not in first._held and "T1:chat.update" not in second._held
    for spender in (one, two, one):  # row by row now, each replica's calls counted by the other
        await spender.spend("T1", "chat.update")
    assert await tokens_in(store, "T1:chat.update") == (-1.0, None)
    assert wall.slept == [pytest.approx(60 / (0.88 * 50))]  # the sixth call of five waits for its refill
    wall.t += SharedBuckets.SHARED_S - 1
    seen = sent(store)
    await one.spend("T1", "chat.update")  # still shared: leased, one statement
    assert seen == ["INSERT"]
    wall.t += 1
    await one.spend("T1", "chat.update")  # a minute on: held again, by the replica that uses it (though the row
    assert (await tokens_in(store, "T1:chat.update"))[1] == first.me  # still reads as it wrote it)
    await first.flush()  # and kept: nobody wants it
    assert (await tokens_in(store, "T1:chat.update"))[1] == first.me


async def test_a_hold_whose_replica_stopped_runs_out_and_the_next_replica_counts_the_bucket_empty_until_then(
        pair: tuple[Store, Store, list[SharedBuckets]]) -> None:
    store, other, opened = pair
    wall = Wall()
    stopped, alive = held(store, wall, flush_s=3600), held(other, wall)
    opened += [stopped, alive]
    for _ in range(5):  # the whole bucket spent, in memory; the row reads 5 left, as it was made
        await budget(wall, stopped).spend("T1", "chat.update")
    await budget(wall, stopped).refused("T1", "chat.postMessage", retry_after_s=60)  # live text paused a minute
    await stopped.flush()  # written back once
    wall.t += SharedBuckets.HOLD_S + 1  # the hold ran out a second ago
    await budget(wall, alive).spend("T1", "chat.update")
    assert wall.slept == [pytest.approx(1 / (0.88 * 50 / 60) - 1)]  # empty when the hold ended: a refill's wait
    assert (await tokens_in(store, "T1:chat.update"))[1] == alive.me
    wall.t += 5  # enough refilled for a turn's first words, but live text is still paused
    assert not await budget(wall, alive).spend_left("T1", "chat.update", first=True)  # the pause it left holds


async def test_a_hold_nothing_changed_for_five_minutes_is_let_go_at_the_next_write_back(
        holder: Holder) -> None:
    store, wall, buckets, spending = holder.store, holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")
    await spending.spend("T2", "chat.update")
    wall.t += SharedBuckets.IDLE_S - 1
    await spending.spend("T2", "chat.update")
    wall.t += 1
    await buckets.flush()
    assert (await tokens_in(store, "T1:chat.update"))[1] is None  # five minutes unused: let go
    assert await tokens_in(store, "T2:chat.update") == (4.0, buckets.me)  # used a second ago (full again, one taken)
    assert "T1:chat.update" not in buckets._held and "T2:chat.update" in buckets._held
    await spending.spend("T1", "chat.update")  # used again: held again, not changed row by row from now on
    assert (await tokens_in(store, "T1:chat.update"))[1] == buckets.me


async def test_a_holder_not_written_back_for_half_a_hold_renews_it_through_its_row_keeping_what_it_spent(
        holder: Holder) -> None:
    """Clocks of replicas may differ: a holder stops spending from memory alone half a hold before its hold
    ends (here, its write-backs have not come), and renews it with what its memory says, not what the row said."""
    store, seen, wall, buckets, spending = holder.store, holder.seen, holder.wall, holder.buckets, holder.spending
    await spending.pace("T1", "C1", 60.0)  # a post a minute: the first now, held with the row reading 0 left
    await spending.pace("T1", "C1", 60.0)  # the next a minute on, from memory
    wall.t += SharedBuckets.HOLD_S / 2
    seen.clear()
    await spending.pace("T1", "C1", 60.0)  # two minutes on from the first, less the 5 s gone
    assert "SELECT" in seen and "UPDATE" in seen  # read under its lock and written back, the hold renewed
    assert wall.slept == [60.0, pytest.approx(115.0)]
    assert await tokens_in(store, "T1:post:C1") == (pytest.approx(-2.0 + 5 / 60), buckets.me)


async def test_a_replica_never_writes_over_a_bucket_another_holds_even_one_it_wrote_last(
        pair: tuple[Store, Store, list[SharedBuckets]]) -> None:
    store, other, opened = pair
    wall = Wall()
    holding, by_row = held(store, wall), SharedBuckets(other, holds=False, wall=wall)
    opened += [holding, by_row]
    one, two = budget(wall, holding), budget(wall, by_row)
    await two.spend("T1", "chat.update")  # the row reads 4, as this replica wrote it
    assert await one.idle("T1", "chat.update")  # the other takes a hold, taking no call: the row still reads 4
    await one.spend("T1", "chat.update")  # in its memory: 3
    await asyncio.wait_for(two.spend("T1", "chat.update"), 5)  # not over the held row: after the hold ends
    assert await tokens_in(store, "T1:chat.update") == (2.0, None)


async def test_a_write_back_writes_only_the_buckets_changed_and_renews_the_holds_every_quarter_hold(
        holder: Holder) -> None:
    store, wall, buckets, spending = holder.store, holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")
    async with store.tx() as tx:  # a row this replica holds but never changed: not what a write-back writes
        await tx.save_bucket("T1:live", (7.0, wall.t, 0.0), (buckets.me, wall.t + 10, False, 0.0))
    assert not await spending.spend_left("T1", "chat.update")  # looks at both, taking nothing: nothing to write
    await buckets.flush()
    assert await tokens_in(store, "T1:live") == (7.0, buckets.me)
    assert await tokens_in(store, "T1:chat.update") == (4.0, buckets.me)

    async def held_until() -> float:
        async with store.tx() as tx:
            return (await tx.lock_held_bucket("T1:chat.update") or ((), (None, 0.0)))[1][1]

    assert await held_until() == wall.t + SharedBuckets.HOLD_S  # renewed at the first write-back
    wall.t += SharedBuckets.RENEW_S - 1
    await buckets.flush()
    assert await held_until() == wall.t - (SharedBuckets.RENEW_S - 1) + SharedBuckets.HOLD_S  # not due yet
    wall.t += 1
    await buckets.flush()
    assert await held_until() == wall.t + SharedBuckets.HOLD_S
    async with store.tx() as tx:  # another replica wants it, between renewals
        await tx.want_bucket("T1:chat.update")
    wall.t += 1
    await buckets.flush()
    assert await tokens_in(store, "T1:chat.update") == (4.0, None)
    assert "T1:chat.update" not in buckets._held and "T1:live" in buckets._held
    assert await spending.spend_left("T1", "chat.update")  # full again; live text's renewed hold read from memory


async def test_a_bucket_its_holder_never_changed_goes_to_the_replica_that_wants_it_held_with_no_minute_shared(
        pair: tuple[Store, Store, list[SharedBuckets]]) -> None:
    """A workspace installed through one replica and run on another: the first made and held all its buckets at
    its first call, and the other, wanting each, changed it row by row for a minute (0.3 statements a model call
    with three replicas), though the two never both used it."""
    store, other, opened = pair
    wall = Wall()
    installer, runner = held(store, wall), held(other, wall)
    opened += [installer, runner]
    limits = {"chat.update": 50, "users.info": 100}
    await RateBudget(installer, limits, wall=wall, sleep=wall.sleep).spend("T1", "users.info")  # makes them all
    running = RateBudget(runner, limits, wall=wall, sleep=wall.sleep)
    await asyncio.wait_for(running.spend("T1", "chat.update"), 5)  # waits for the installer's write-back
    assert await tokens_in(store, "T1:chat.update") == (5.0 - 1, runner.me)  # held by the replica using it
    assert "T1:chat.update" in runner._held and "T1:chat.update" not in installer._held
    await asyncio.wait_for(running.spend("T1", "users.info"), 5)  # the installer used this one: shared a minute
    assert await tokens_in(store, "T1:users.info") == (10.0 - 2, None)


async def test_a_bucket_the_first_call_did_not_make_is_made_held_in_one_statement_of_its_own(holder: Holder) -> None:
    """A channel's pace is no method of the workspace's: its bucket is made at the channel's first post."""
    store, seen, wall, buckets, spending = holder.store, holder.seen, holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")  # the workspace's buckets
    seen.clear()
    await spending.pace("T1", "C1", 60.0)
    assert {s.rstrip(";") for s in seen} == {"INSERT"} and len(seen) <= 2, seen  # as each of both sees it
    async with store.tx() as tx:
        found = await tx.lock_held_bucket("T1:post:C1")
    assert found is not None and found[1][:2] == (buckets.me, wall.t + SharedBuckets.HOLD_S)  # held, made as taken
    assert found[0][0] == 1.0 - 1
    seen.clear()
    await spending.pace("T1", "C1", 60.0)  # held: from memory
    assert seen == [] and wall.slept == [60.0]


async def test_without_holds_a_bucket_made_at_its_first_change_is_held_by_none_and_leased_from(
        watched: tuple[Store, list[str]]) -> None:
    store, seen = watched
    wall = Wall()
    spending = budget(wall, SharedBuckets(store, holds=False, wall=wall))
    await spending.spend("T1", "chat.update")
    seen.clear()
    await spending.pace("T1", "C1", 60.0)
    assert {s.rstrip(";") for s in seen} == {"INSERT"}, seen
    assert await tokens_in(store, "T1:post:C1") == (0.0, None)
    seen.clear()
    await spending.pace("T1", "C1", 60.0)  # leased from the row, in one statement
    assert seen == ["INSERT"] and wall.slept == [60.0]
    assert await tokens_in(store, "T1:post:C1") == (-1.0, None)


async def renamed(store: Store, old: str, new: str) -> None:
    async with store.engine.begin() as conn:
        await conn.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))


async def test_a_write_back_that_fails_is_logged_and_the_next_one_writes_what_it_could_not(
        pg_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """The database away for a moment: the holds stay in memory and the next write-back (a second later) writes
    them; nothing spent is lost, and the write-backs do not stop. The write-backs' seconds are stepped."""
    store = Store(make_engine(pg_url))
    wall, beats = Wall(), Beats()
    buckets = SharedBuckets(store, wall=wall, sleep=beats)
    try:
        spending = budget(wall, buckets)
        await spending.spend("T1", "chat.update")
        await renamed(store, "rate_budget", "rate_budget_away")
        await spending.spend("T1", "chat.update")
        await beats.tick()
        failed = [r for r in caplog.records if "could not write back" in r.getMessage()]
        assert failed and failed[0].exc_info  # logged, with why
        await renamed(store, "rate_budget_away", "rate_budget")
        await beats.tick()
        assert await tokens_in(store, "T1:chat.update") == (5.0 - 2, buckets.me)
    finally:
        await buckets.close()
        await store.close()


async def test_close_lets_every_hold_go_and_a_failure_to_is_logged_not_raised(
        pair: tuple[Store, Store, list[SharedBuckets]], caplog: pytest.LogCaptureFixture) -> None:
    store, other, _ = pair
    wall = Wall()
    one, two = held(store, wall), held(other, wall, flush_s=3600)
    await budget(wall, one).spend("T1", "chat.update")
    await budget(wall, two).spend("T2", "chat.update")
    writing = one._flusher
    await one.close()
    assert writing is not None and writing.cancelled() and one._flusher is None  # no write-back left running
    assert await tokens_in(store, "T1:chat.update") == (5.0 - 1, None)  # written back and let go
    await renamed(store, "rate_budget", "rate_budget_away")
    try:
        await two.close()  # at shutdown: logged, and the hold runs out on its own
    finally:
        await renamed(store, "rate_budget_away", "rate_budget")
    failed = [r for r in caplog.records if "let go" in r.getMessage()]
    assert [r.getMessage() for r in failed] == ["could not let go of 2 rate budget bucket(s)"]  # method, live text
    assert failed[0].exc_info  # with what failed
    assert (await tokens_in(store, "T2:chat.update"))[1] == two.me
    await two.close()


async def test_whatever_a_workspaces_first_call_is_its_buckets_are_made_then_and_the_next_call_costs_nothing(
        holder: Holder) -> None:
    store, seen, wall = holder.store, holder.seen, holder.wall
    spending = RateBudget(holder.buckets, {"chat.update": 50, "users.info": 100}, wall=wall, sleep=wall.sleep)
    firsts = {"T1": lambda: spending.refused("T1", "chat.postMessage", 5, channel="C1"),
              "T2": lambda: spending.pace("T2", "C1", 1.0), "T3": lambda: spending.spend_spare("T3", "chat.update"),
              "T4": lambda: spending.spend_left("T4", "chat.update")}
    for scope, first in firsts.items():
        await first()
        seen.clear()
        assert await spending.idle(scope, "users.info")  # another method's bucket, made with the first call's
        assert seen == [], scope
    assert await tokens_in(store, "T1:chat.update") == (5.0, holder.buckets.me)


async def test_two_changes_of_a_bucket_new_here_at_once_make_it_once_and_the_second_goes_by_memory(
        holder: Holder) -> None:
    seen, spending = holder.seen, holder.spending
    await spending.spend("T1", "chat.update")
    seen.clear()
    await asyncio.gather(spending.pace("T1", "C1", 60.0), spending.pace("T1", "C1", 60.0))
    assert {s.rstrip(";") for s in seen} == {"INSERT"}, seen  # made by the first; the second took it from memory
    assert holder.wall.slept == [60.0]


async def test_a_bucket_let_go_and_used_again_is_read_and_held_with_no_attempt_to_make_it(holder: Holder) -> None:
    store, seen, wall, buckets, spending = holder.store, holder.seen, holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")  # made with the workspace's
    await spending.pace("T1", "C1", 60.0)  # made on its own
    wall.t += SharedBuckets.IDLE_S
    await buckets.flush()
    for use in (lambda: spending.spend("T1", "chat.update"), lambda: spending.pace("T1", "C1", 60.0)):
        seen.clear()
        await use()
        assert [s.rstrip(";") for s in seen if s.rstrip(";") not in ("BEGIN", "COMMIT")] == ["SELECT", "UPDATE"], seen
    assert await tokens_in(store, "T1:chat.update") == (5.0 - 1, buckets.me)


async def test_a_bucket_whose_row_was_deleted_is_made_again_as_new(holder: Holder) -> None:
    store, wall, buckets, spending = holder.store, holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")
    wall.t += SharedBuckets.IDLE_S
    await buckets.flush()  # let go
    async with store.engine.begin() as conn:
        await conn.execute(text("DELETE FROM rate_budget WHERE key = 'T1:chat.update'"))
    await spending.spend("T1", "chat.update")
    assert await tokens_in(store, "T1:chat.update") == (5.0 - 1, buckets.me)


async def test_holds_and_a_refusals_pause_are_timed_on_the_budgets_clock(watched: tuple[Store, list[str]]) -> None:
    """Benches run Slack's seconds 20 times faster: a hold of ten seconds lasts ten of those."""
    store, _ = watched
    wall = Wall()
    buckets = SharedBuckets(store, scale=20, wall=wall)
    buckets.FLUSH_S = 3600
    spending = RateBudget(buckets, TIER3, scale=20, wall=wall, sleep=wall.sleep)
    try:
        await spending.pace("T1", "C1", 60.0)  # made on its own, held
        await spending.refused("T1", "chat.update", retry_after_s=30)
        await buckets.flush()
        async with store.tx() as tx:
            paced, live = await tx.lock_held_bucket("T1:post:C1"), await tx.lock_held_bucket("T1:live")
        now = wall.t * 20
        assert paced is not None and paced[1][:2] == (buckets.me, now + SharedBuckets.HOLD_S * 20)
        assert live is not None and live[0] == (0.0, now, now + 30)  # live text paused from now, for 30 s
        wall.t += SharedBuckets.IDLE_S
        await buckets.flush()  # let go; the next use reads it and holds it again, for as long
        await spending.pace("T1", "C1", 60.0)
        async with store.tx() as tx:
            again = await tx.lock_held_bucket("T1:post:C1")
        assert again is not None and again[1][:2] == (buckets.me, wall.t * 20 + SharedBuckets.HOLD_S * 20)
    finally:
        await buckets.close()


async def test_a_replica_without_holds_reads_a_bucket_another_made_once_then_leases_from_it_in_one_statement(
        watched: tuple[Store, list[str]]) -> None:
    store, seen = watched
    wall = Wall()
    await made_elsewhere(store, wall)
    by_row = budget(wall, SharedBuckets(store, holds=False, wall=wall))  # another replica: its rows are there
    await by_row.spend("T1", "chat.update")  # read under its lock
    seen.clear()
    await by_row.spend("T1", "chat.update")
    assert seen == ["INSERT"]  # a lease


async def test_a_replica_keeps_nothing_of_the_holds_it_let_go(holder: Holder) -> None:
    """A replica serving many workspaces lets go of thousands of holds a day; what it kept of each must go too."""
    wall, buckets, spending = holder.wall, holder.buckets, holder.spending
    await spending.spend("T1", "chat.update")
    await spending.pace("T1", "C1", 60.0)
    wall.t += SharedBuckets.IDLE_S
    await buckets.flush()
    assert (buckets._held, buckets._held_until, buckets._used, buckets._dirty, buckets._untouched) == (
        {}, {}, {}, set(), set())
