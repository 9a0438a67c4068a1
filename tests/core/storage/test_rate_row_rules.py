"""The shared rate budgets' rows, rule by rule, on both backends: a bucket's first row is written once, held or
not, and many are made at once where they are not there; a row comes back with who holds it, a missing one as None;
a lease refills the row to now, adds what is handed back up to the burst, takes what its kind of work may, makes a
row not there full, and leaves a held row alone; a hand-back adds to rows held by none; a save under the lock
writes all three values and who holds it; a holder's write-back and renewal reach only its own rows and say which
another replica wants; letting go clears the hold."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from core.storage.db import make_engine, migrate
from core.storage.store import Store


async def test_a_buckets_first_row_is_written_once(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.make_bucket("slack:T1:chat.postMessage", (5.0, 100.0, 0.0))
        assert not await tx.make_bucket("slack:T1:chat.postMessage", (1.0, 200.0, 300.0), "me", 9.0)  # made first
        assert await tx.make_bucket("slack:T2:chat.postMessage", (7.0, 101.0, 250.0), "me", 110.0)
        assert await tx.lock_held_bucket("slack:T1:chat.postMessage") == ((5.0, 100.0, 0.0), (None, 0.0, False, 0.0))
        assert await tx.lock_held_bucket("slack:T2:chat.postMessage") == ((7.0, 101.0, 250.0),
                                                                          ("me", 110.0, False, 0.0))
        assert await tx.lock_held_bucket("slack:T9:x") is None


async def test_a_save_under_the_lock_writes_all_three_values_of_that_bucket_and_who_holds_it(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("a", (5.0, 100.0, 0.0))
        await tx.make_bucket("b", (5.0, 100.0, 0.0))
        await tx.lock_held_bucket("a")
        await tx.save_bucket("a", (2.5, 130.0, 160.0))
        assert await tx.lock_held_bucket("a") == ((2.5, 130.0, 160.0), (None, 0.0, False, 0.0))
        await tx.save_bucket("a", (2.0, 131.0, 161.0), ("me", 141.0, False, 190.0))
        assert await tx.lock_held_bucket("a") == ((2.0, 131.0, 161.0), ("me", 141.0, False, 190.0))
        assert await tx.lock_held_bucket("b") == ((5.0, 100.0, 0.0), (None, 0.0, False, 0.0))


async def test_a_save_under_the_lock_writes_whether_another_replica_wants_the_bucket(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("a", (5.0, 100.0, 0.0), "me", 110.0)
        await tx.save_bucket("a", (4.0, 101.0, 0.0), ("me", 111.0, True, 0.0))
        assert await tx.lock_held_bucket("a") == ((4.0, 101.0, 0.0), ("me", 111.0, True, 0.0))
        await tx.save_bucket("a", (3.0, 102.0, 0.0), ("other", 112.0, False, 150.0))
        assert await tx.lock_held_bucket("a") == ((3.0, 102.0, 0.0), ("other", 112.0, False, 150.0))


async def test_many_buckets_made_at_once_keep_each_ones_pause(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.make_buckets({"a": (0.0, 100.0, 250.0), "b": (2.0, 100.0, 0.0)}, None, 0.0) == {"a", "b"}
        assert await tx.lock_held_bucket("a") == ((0.0, 100.0, 250.0), (None, 0.0, False, 0.0))
        assert await tx.lock_held_bucket("b") == ((2.0, 100.0, 0.0), (None, 0.0, False, 0.0))


async def test_on_postgresql_a_bucket_read_with_who_holds_it_stays_locked_until_the_transaction_ends(
        pg_url: str) -> None:
    engine = make_engine(pg_url)
    await migrate(engine)
    store = Store(engine)
    other = "SELECT tokens FROM rate_budget WHERE key = 'a' FOR UPDATE NOWAIT"
    try:
        async with store.tx() as tx:
            await tx.make_bucket("a", (5.0, 100.0, 0.0))
        async with store.tx() as tx:
            assert await tx.lock_held_bucket("a") == ((5.0, 100.0, 0.0), (None, 0.0, False, 0.0))
            async with engine.connect() as conn:  # another replica's transaction
                with pytest.raises(DBAPIError, match="lock"):
                    await conn.execute(text(other))
        async with engine.connect() as conn:  # ended: free again
            assert (await conn.execute(text(other))).scalar() == 5.0
    finally:
        await store.close()


async def test_many_buckets_are_made_at_once_and_only_those_not_there(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("there", (1.0, 90.0, 0.0))
        made = await tx.make_buckets({"a": (5.0, 100.0, 0.0), "there": (5.0, 100.0, 0.0), "b": (0.0, 100.0, 0.0)},
                                     "me", 110.0)
        assert made == {"a", "b"}
        assert await tx.lock_held_bucket("a") == ((5.0, 100.0, 0.0), ("me", 110.0, False, 0.0))
        assert await tx.lock_held_bucket("b") == ((0.0, 100.0, 0.0), ("me", 110.0, False, 0.0))
        assert await tx.lock_held_bucket("there") == ((1.0, 90.0, 0.0), (None, 0.0, False, 0.0))


async def test_a_write_back_reaches_only_the_holders_rows_and_says_which_are_wanted(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("mine", (5.0, 100.0, 0.0), "me", 110.0)
        await tx.make_bucket("wanted", (5.0, 100.0, 0.0), "me", 110.0)
        await tx.make_bucket("taken", (5.0, 100.0, 0.0), "another", 120.0)  # the hold ran out; another has it now
        await tx.want_bucket("wanted")
        await tx.write_held("me", {"mine": (3.0, 105.0, 0.0), "wanted": (2.0, 106.0, 107.0),
                                   "taken": (1.0, 108.0, 0.0)})
        assert await tx.wanted_held("me") == {"wanted"}
        assert await tx.wanted_held("another") == set()
        assert await tx.lock_held_bucket("mine") == ((3.0, 105.0, 0.0), ("me", 110.0, False, 0.0))
        assert await tx.lock_held_bucket("wanted") == ((2.0, 106.0, 107.0), ("me", 110.0, True, 0.0))
        assert await tx.lock_held_bucket("taken") == ((5.0, 100.0, 0.0), ("another", 120.0, False, 0.0))
        assert await tx.renew_held("me", 115.0) == {"mine": False, "wanted": True}
        assert (await tx.lock_held_bucket("mine") or ((), ()))[1] == ("me", 115.0, False, 0.0)
        assert (await tx.lock_held_bucket("taken") or ((), ()))[1] == ("another", 120.0, False, 0.0)
        await tx.release_held("me", ["wanted", "taken"], 175.0)
        assert await tx.lock_held_bucket("wanted") == ((2.0, 106.0, 107.0), (None, 115.0, False, 175.0))
        assert await tx.lock_held_bucket("taken") == ((5.0, 100.0, 0.0), ("another", 120.0, False, 0.0))
        await tx.release_held("me", ["mine"])
        assert await tx.lock_held_bucket("mine") == ((3.0, 105.0, 0.0), (None, 115.0, False, 0.0))


RATE = (0.5, 5.0)  # half a token a second, a burst of five


async def leased(store: Store, key: str, want: float, **kw: float | bool) -> tuple[tuple[float, float, float], float]:
    async with store.tx() as tx:
        found = await tx.lease_bucket(key, kw.pop("now", 100.0), RATE, want, **kw)  # type: ignore[arg-type]
    assert found is not None
    return found


async def test_a_lease_of_a_bucket_not_there_makes_it_full_and_takes_what_its_work_may(store: Store) -> None:
    assert await leased(store, "a", 3.0) == ((2.0, 100.0, 0.0), 3.0)  # work that must be done: all it asks
    assert await leased(store, "b", 7.0) == ((4.0, 100.0, 0.0), 1.0)  # more than the burst, not alone: one
    assert await leased(store, "c", 7.0, alone=5.0) == ((-2.0, 100.0, 0.0), 7.0)  # alone: into debt
    assert await leased(store, "d", 2.0, must=False, keep=3.0) == ((3.0, 100.0, 0.0), 2.0)  # leaving 3
    assert await leased(store, "e", 3.0, must=False, keep=3.0) == ((4.0, 100.0, 0.0), 1.0)  # one leaves 4
    assert await leased(store, "f", 2.0, must=False, keep=4.5) == ((5.0, 100.0, 0.0), 0.0)  # none leaves 4.5
    async with store.tx() as tx:
        assert await tx.lock_held_bucket("c") == ((-2.0, 100.0, 0.0), (None, 0.0, False, 0.0))  # held by none


async def test_a_lease_refills_the_row_to_now_adds_what_is_handed_back_and_takes_from_that(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("k", (1.0, 100.0, 0.0))
        await tx.make_bucket("paused", (0.0, 130.0, 130.0))  # paused until 130: `at` ahead of now
    assert await leased(store, "k", 2.0, now=104.0) == ((1.0, 104.0, 0.0), 2.0)  # 1 + 4 s x 0.5 = 3, less 2
    assert await leased(store, "k", 1.0, now=105.0, back=1.0) == ((1.5, 105.0, 0.0), 1.0)  # 1 + 0.5 + 1 back
    assert await leased(store, "k", 1.0, now=200.0, back=3.0) == ((4.0, 200.0, 0.0), 1.0)  # never past the burst
    assert await leased(store, "k", 3.0, now=200.0) == ((1.0, 200.0, 0.0), 3.0)  # 4 held: the 3 asked
    assert await leased(store, "k", 3.0, now=200.0) == ((0.0, 200.0, 0.0), 1.0)  # 1 held, not alone: one
    assert await leased(store, "k", 3.0, now=200.0, alone=-1e-6) == ((-3.0, 200.0, 0.0), 3.0)  # as left: debt
    assert await leased(store, "k", 3.0, now=200.0, alone=-2.5) == ((-4.0, 200.0, 0.0), 1.0)  # another took
    assert await leased(store, "paused", 1.0, now=120.0) == ((-1.0, 130.0, 130.0), 1.0)  # no refill; ready at 130
    assert await leased(store, "paused", 1.0, now=120.0, must=False, keep=-9.0) == ((-1.0, 130.0, 130.0), 0.0)
    assert await leased(store, "paused", 1.0, now=140.0, must=False, keep=-9.0) == ((3.0, 140.0, 130.0), 1.0)


async def test_a_lease_or_a_hand_back_leaves_a_row_another_replica_holds_as_it_is(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("held", (5.0, 100.0, 0.0), "another", 200.0)
        await tx.make_bucket("free", (1.0, 100.0, 0.0))
        assert await tx.lease_bucket("held", 100.0, RATE, 1.0) is None
        await tx.give_back(104.0, {"held": (0.5, 5.0, 2.0), "free": (0.5, 5.0, 1.5)})
        assert await tx.lock_held_bucket("held") == ((5.0, 100.0, 0.0), ("another", 200.0, False, 0.0))
        assert (await tx.lock_held_bucket("free") or ((),))[0] == (4.5, 104.0, 0.0)  # 1 + 2 refilled + 1.5 back
        await tx.give_back(300.0, {"free": (0.5, 5.0, 3.0)})
        assert (await tx.lock_held_bucket("free") or ((),))[0] == (5.0, 300.0, 0.0)  # never past the burst


async def test_must_work_takes_all_it_asks_when_the_bucket_holds_exactly_that_or_exactly_what_it_left(
        store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("exact", (1.0, 100.0, 0.0))
        await tx.make_bucket("as_left", (1.0, 100.0, 0.0))
    assert await leased(store, "exact", 3.0, now=104.0) == ((0.0, 104.0, 0.0), 3.0)  # 1 + 2 refilled = 3 asked
    assert await leased(store, "as_left", 3.0, now=102.0, alone=2.0) == ((-1.0, 102.0, 0.0), 3.0)  # 2, as left
    assert await leased(store, "as_left", 3.0, now=102.0, alone=-0.5) == ((-2.0, 102.0, 0.0), 1.0)  # -1: one
    assert await leased(store, "fresh", 5.0) == ((0.0, 100.0, 0.0), 5.0)  # made full: exactly the 5 asked


async def test_other_work_takes_all_it_asks_only_if_that_leaves_keep_else_one_if_that_does_else_none(
        store: Store) -> None:
    async with store.tx() as tx:
        for key in ("all", "exactly", "one", "none"):
            await tx.make_bucket(key, (3.0, 100.0, 0.0))
    assert await leased(store, "all", 2.0, must=False) == ((1.0, 100.0, 0.0), 2.0)  # keeps none by default
    assert await leased(store, "exactly", 2.0, must=False, keep=1.0) == ((1.0, 100.0, 0.0), 2.0)  # leaves 1
    assert await leased(store, "one", 2.0, must=False, keep=1.5) == ((2.0, 100.0, 0.0), 1.0)  # 2 would leave 1
    assert await leased(store, "none", 1.0, must=False, keep=2.5) == ((3.0, 100.0, 0.0), 0.0)  # one leaves 2
    assert await leased(store, "one", 1.0, must=False, keep=1.0) == ((1.0, 100.0, 0.0), 1.0)  # leaves exactly 1
    assert await leased(store, "one", 1.0, must=False) == ((0.0, 100.0, 0.0), 1.0)  # the last one: keep 0
    assert await leased(store, "one", 1.0, must=False) == ((0.0, 100.0, 0.0), 0.0)  # empty


async def test_other_work_leasing_a_bucket_not_there_leaves_keep_to_the_token(store: Store) -> None:
    assert await leased(store, "a", 1.0, must=False, keep=4.0) == ((4.0, 100.0, 0.0), 1.0)  # 5 - 1 leaves 4
    assert await leased(store, "b", 1.0, must=False, keep=4.5) == ((5.0, 100.0, 0.0), 0.0)  # 4 < 4.5: none
    assert await leased(store, "c", 5.0, must=False) == ((0.0, 100.0, 0.0), 5.0)  # keeps none by default


async def test_a_pause_holds_other_work_off_until_its_second_and_no_longer(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("p", (3.0, 130.0, 130.0))
    assert await leased(store, "p", 1.0, now=129.0, must=False) == ((3.0, 130.0, 130.0), 0.0)  # paused still
    assert await leased(store, "p", 1.0, now=130.0, must=False) == ((2.0, 130.0, 130.0), 1.0)  # over at 130
