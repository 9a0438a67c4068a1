"""The shared rate budgets' rows, rule by rule, on both backends: a bucket's first row is written once; rows come
back by key, all three values, missing keys left out; a swap writes only over the row it last read, all three
values; a save under the lock writes all three."""

from __future__ import annotations

from core.storage.store import Store


async def test_a_buckets_first_row_is_written_once(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.make_bucket("slack:T1:chat.postMessage", (5.0, 100.0, 0.0))
        assert not await tx.make_bucket("slack:T1:chat.postMessage", (1.0, 200.0, 300.0))  # another made it first
        assert await tx.make_bucket("slack:T2:chat.postMessage", (7.0, 101.0, 250.0))
        rows = await tx.lock_buckets(["slack:T2:chat.postMessage", "slack:T1:chat.postMessage", "slack:T9:x"])
    assert rows == {"slack:T1:chat.postMessage": (5.0, 100.0, 0.0), "slack:T2:chat.postMessage": (7.0, 101.0, 250.0)}
    assert list(rows) == ["slack:T1:chat.postMessage", "slack:T2:chat.postMessage"]  # in key order


async def test_a_swap_writes_only_over_the_row_last_read(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("k", (5.0, 100.0, 0.0))
        assert await tx.swap_bucket("k", (5.0, 100.0, 0.0), (4.0, 101.0, 150.0))
        assert await tx.lock_buckets(["k"]) == {"k": (4.0, 101.0, 150.0)}
        # Another replica changed it since: any one of the three values differing refuses the swap.
        for stale in ((5.0, 101.0, 150.0), (4.0, 100.0, 150.0), (4.0, 101.0, 0.0)):
            assert not await tx.swap_bucket("k", stale, (1.0, 1.0, 1.0))
        assert not await tx.swap_bucket("other", (4.0, 101.0, 150.0), (1.0, 1.0, 1.0))
        assert await tx.lock_buckets(["k"]) == {"k": (4.0, 101.0, 150.0)}


async def test_a_save_under_the_lock_writes_all_three_values_of_that_bucket(store: Store) -> None:
    async with store.tx() as tx:
        await tx.make_bucket("a", (5.0, 100.0, 0.0))
        await tx.make_bucket("b", (5.0, 100.0, 0.0))
        await tx.lock_buckets(["a"])
        await tx.save_bucket("a", (2.5, 130.0, 160.0))
        assert await tx.lock_buckets(["a", "b"]) == {"a": (2.5, 130.0, 160.0), "b": (5.0, 100.0, 0.0)}
