"""Rules of the driver's fenced outbox that the fencing scenarios leave unpinned."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest
from sqlalchemy import Engine, event, update

from core.models import Post
from core.storage import tables as t
from tests.core.running.test_lease import TTL, Replica, start_on, two
from tests.fakes.cluster import until


@pytest.fixture
async def pair(pg_url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    # PostgreSQL only: SQLite's transactions run on the event loop itself, so each drain ends before the next publish
    # call asks, and calls asked together never overlap there.
    async with two(pg_url, a_ttl=TTL) as both:
        yield both


@contextlib.contextmanager
def statements() -> Iterator[list[str]]:
    """The SQL statements run while the block runs, on any engine."""
    seen: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        seen.append(statement)

    event.listen(Engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:  # the listener is on every engine of the test run: never left behind
        event.remove(Engine, "before_cursor_execute", count)


async def statements_of(calls: int, r: Replica, discussion_id: str) -> int:
    """The statements `calls` publish calls asked together cost."""
    with statements() as seen:
        assert all(await asyncio.gather(*(r.app.driver.publish(discussion_id) for _ in range(calls))))
    return len(seen)


async def inside_a_model_call(a: Replica) -> str:
    """A discussion whose driver on A waits inside a model call, everything it queued before sent."""
    a.llm.hold()
    d = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside a model call, its queue sent")
    return d


async def out_sending(a: Replica, d: str) -> tuple[Post, Post, asyncio.Task[bool]]:
    """A drain on A out sending a first post, which the platform has not answered yet; and a second post, to be
    queued behind it."""
    a.chat.posts_held = asyncio.Event()
    first, second = (Post(kind="notice", key=f"{d}:{name}", text=name) for name in ("first", "second"))
    async with a.app.store.tx() as tx:
        await tx.enqueue(d, first, a.clock.now())
    draining = asyncio.create_task(a.app.driver.publish(d))
    await until(lambda: first.key in a.chat.sent_keys, 5, "the drain is out sending the first post")
    return first, second, draining


async def test_publish_calls_asked_together_are_served_by_one_drain(pair: tuple[Replica, Replica]) -> None:
    """Parallel turns each ask to publish; the first drain reads the queue after all of them asked and so serves
    every one asked before it read: the first call's drain reads before the others ask, the second call's serves
    the third, which returns without reading the queue again."""
    a, _ = pair
    d = await inside_a_model_call(a)
    one = await statements_of(1, a, d)
    assert one > 0
    assert await statements_of(3, a, d) == 2 * one


async def test_a_post_queued_while_the_drain_sends_is_claimed_under_the_lease_and_sent_by_that_drain(
    pair: tuple[Replica, Replica],
) -> None:
    """A turn recorded while the drain is out sending (its publish call waits behind the drain) is read by the
    transaction that marks the last post sent, claimed there under this driver's lease, and sent by the same drain:
    the first call reports every post sent, and the waiting call has nothing left to do."""
    a, _ = pair
    d = await inside_a_model_call(a)
    first, second, draining = await out_sending(a, d)
    async with a.app.store.tx() as tx:
        await tx.enqueue(d, second, a.clock.now())
    waiting = asyncio.create_task(a.app.driver.publish(d))
    await asyncio.sleep(0)  # the second call has asked, and waits for the drain
    a.chat.posts_held.set()
    assert await draining, "the drain sent the post queued behind it"
    assert await waiting
    assert [k for k in a.chat.sent_keys if k in (first.key, second.key)] == [first.key, second.key]
    async with a.app.store.tx() as tx:
        pending, _ = await tx.queue(d)
        refs = [await tx.post_ref(p.key) for p in (first, second)]
    assert pending == [] and all(refs)


async def test_a_drain_that_lost_its_lease_while_sending_does_not_send_what_was_queued_behind_it(
    pair: tuple[Replica, Replica],
) -> None:
    """Another replica took the discussion while this drain was out sending: the post marked sent keeps its ref
    (the platform has it), but the post queued meanwhile is claimed only under a lease this driver still holds,
    so it is left to the driver that has the discussion now."""
    a, _ = pair
    d = await inside_a_model_call(a)
    first, second, draining = await out_sending(a, d)
    async with a.app.store.tx() as tx:  # the lease passes to another replica, and a turn of its queues a post
        await tx.conn.execute(update(t.discussions).where(t.discussions.c.id == d).values(lease_owner="replica-c"))
        await tx.enqueue(d, second, a.clock.now())
    waiting = asyncio.create_task(a.app.driver.publish(d))
    await asyncio.sleep(0)
    a.chat.posts_held.set()
    assert not await draining, "the drain reports the post it left"
    await waiting
    assert second.key not in a.chat.sent_keys
    async with a.app.store.tx() as tx:
        pending, _ = await tx.queue(d)
        ref = await tx.post_ref(first.key)
    assert [p.key for _, p, _, _ in pending] == [second.key] and ref


async def test_a_drain_reads_the_queue_once(pair: tuple[Replica, Replica]) -> None:
    """The transaction that opens a drain reads the queue and claims its first post from what it read: the queue
    is not read a second time to find that post."""
    a, _ = pair
    d = await inside_a_model_call(a)
    async with a.app.store.tx() as tx:
        await tx.enqueue(d, Post(kind="notice", key=f"{d}:late", text="Late notice"), a.clock.now())
    with statements() as seen:
        assert await a.app.driver.publish(d)
    reads = [s for s in seen if s.lstrip().upper().startswith("SELECT") and "FROM outbox" in s
             and "outbox.payload" in s]
    assert len(reads) == 1, reads
