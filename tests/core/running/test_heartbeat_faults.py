"""A heartbeat the database refuses: the work goes on while its lease still outlives the next beat, and stops the
moment it would not (a renewal that cannot reach the database must neither kill work early nor let it run on a
lease that has run out)."""

from __future__ import annotations

import asyncio

from sqlalchemy import func, select

from core.models import Post
from core.storage import tables as t
from tests.core.running.test_lease import TTL, start_on, take_over, two
from tests.fakes.cluster import until


async def test_a_driver_whose_lease_lapsed_mid_queue_sends_none_of_the_posts_behind_the_one_in_flight(
    db_url: str,
) -> None:
    """A is sending the first of two queued notices when B takes the discussion over. A's notice lands; the one
    behind it is B's now: A's claim of it checks the lease and A sends nothing more."""
    async with two(db_url, a_ttl=TTL) as (a, b):
        b.chat.posts_held = b_held = asyncio.Event()  # B's own sending waits: only A's choices are seen
        a.llm.hold()
        b.llm.hold()
        did = await start_on(a)
        await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")

        async def unsent() -> int:
            async with a.app.store.tx() as tx:
                return int((await tx.conn.execute(select(func.count()).select_from(t.outbox).where(
                    t.outbox.c.discussion_id == did, t.outbox.c.sent.is_(False)))).scalar() or 0)

        async def drained() -> bool:
            return await unsent() == 0

        await until(drained, 5, "what A had queued is sent")
        async with a.app.store.tx() as tx:
            for name in ("first", "second"):
                await tx.enqueue(did, Post(kind="notice", key=f"{did}:{name}", text=name), a.clock.now())
        a.chat.posts_held = a_held = asyncio.Event()
        sending = asyncio.create_task(a.app.driver.publish(did))
        await until(lambda: f"{did}:first" in a.chat.sent_keys, 5, "A's first notice is on its way")
        await take_over(a, b)
        a_held.set()  # A's notice lands; the one behind it is not A's to send
        await asyncio.wait_for(sending, 10)
        assert f"{did}:second" not in a.chat.sent_keys, "A sent a post behind the one in flight after losing the lease"
        b_held.set()
