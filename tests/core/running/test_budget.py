"""The rate budget's rules: final work first, live text from what is left, a 429 pauses, pacing per channel; each
rule kept alike in one process's memory and by replicas leasing tokens from a row per bucket (on both backends).
The leases themselves are tested in test_rate_leases."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from core.running.budget import Buckets, LeasedBuckets, LocalBuckets, RateBudget, buckets_for
from core.storage.db import make_engine
from core.storage.store import Store
from tests.conftest import pg_database, release_pg_database

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
async def kind(request: pytest.FixtureRequest) -> AsyncIterator[Kind]:
    """Buckets in this process's memory, or leased from rows of the store (one replica): the same rules hold."""
    if request.param == "memory":
        yield lambda _wall: LocalBuckets()
        return
    pg = None if request.param == "sqlite" else await pg_database(request.getfixturevalue("pg_template"))
    store = Store(make_engine(pg or request.getfixturevalue("sqlite_url")))
    made: list[LeasedBuckets] = []

    def leased(wall: Wall) -> LeasedBuckets:
        made.append(LeasedBuckets(store, wall=wall))
        made[-1].FLUSH_S = 3600  # no write-back but at close
        return made[-1]

    try:
        yield leased
    finally:
        for b in made:
            await b.close()
        await store.close()
        if pg is not None:
            await release_pg_database(pg)


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




async def test_one_process_keeps_its_buckets_in_memory_and_replicas_lease_from_the_database(db_url: str) -> None:
    store = Store(make_engine(db_url))
    try:
        kind = buckets_for(store)
        assert isinstance(kind, LocalBuckets if db_url.startswith("sqlite") else LeasedBuckets)
        if isinstance(kind, LeasedBuckets):  # in that database, its leases timed on the budget's clock
            sped = buckets_for(store, scale=20)
            assert (kind.store, kind.scale) == (store, 1.0) and isinstance(sped, LeasedBuckets) and sped.scale == 20
    finally:
        await store.engine.dispose()
