"""The shared rate budgets' rows, rule by rule, on both backends: a bucket's first row is written once, held or
not, and many are made at once where they are not there; a row comes back with who holds it, a missing one as None;
a swap writes only over the row it last read, all three values, and never over a held row; a save under the lock
writes all three and who holds it; a holder's write-back and renewal reach only its own rows and say which another
replica wants; letting go clears the hold."""

from __future__ import annotations

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


async def test_a_swap_writes_only_over_the_row_last_read_and_held_by_none(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("k", (5.0, 100.0, 0.0))
        assert await tx.swap_bucket("k", (5.0, 100.0, 0.0), (4.0, 101.0, 150.0))
        assert (await tx.lock_held_bucket("k") or ((),))[0] == (4.0, 101.0, 150.0)
        # Another replica changed it since: any one of the three values differing refuses the swap.
        for stale in ((5.0, 101.0, 150.0), (4.0, 100.0, 150.0), (4.0, 101.0, 0.0)):
            assert not await tx.swap_bucket("k", stale, (1.0, 1.0, 1.0))
        assert not await tx.swap_bucket("other", (4.0, 101.0, 150.0), (1.0, 1.0, 1.0))
        assert (await tx.lock_held_bucket("k") or ((),))[0] == (4.0, 101.0, 150.0)
        await tx.make_bucket("held", (5.0, 100.0, 0.0), "another", 200.0)
        assert not await tx.swap_bucket("held", (5.0, 100.0, 0.0), (1.0, 1.0, 1.0))  # its holder's memory rules it


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
