"""A heartbeat the database refuses: the work goes on while its lease still outlives the next beat, and stops the
moment it would not (a renewal that cannot reach the database must neither kill work early nor let it run on a
lease that has run out)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sqlalchemy import Engine, event, func, select

from core.models import Post
from core.storage import tables as t
from tests.core.running.test_fencing import TTL, Replica, replica, start_on, take_over, two
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import Beats
from tests.fakes.cluster import until

LIFETIME = 3.0  # seconds of lease on the replica's own clock; it beats every third of it, each second


class Refusing:
    """The database refuses every lease renewal while `on` (a connection dropped, a failover): a fault of the
    database's, raised where its driver would raise it."""

    def __init__(self) -> None:
        self.on, self.refused = False, 0

    def __call__(self, conn: object, cursor: object, statement: str, *args: object) -> None:
        renewal = statement.lstrip().upper().startswith(f"UPDATE {t.discussions.name.upper()} SET LEASE_EXPIRES_AT")
        if self.on and renewal:
            self.refused += 1
            raise ConnectionError("the database is unreachable")


async def one_beat(r: Replica, beats: Beats) -> None:
    r.clock.advance(seconds=LIFETIME / 3)
    await beats.tick()


async def test_a_refused_renewal_keeps_the_work_until_its_lease_would_lapse_before_the_next_beat(db_url: str) -> None:
    a = await replica(db_url, "replica-a", RecordingChat("console"), ttl=LIFETIME)
    beats = Beats()
    a.app.driver.config = replace(a.app.driver.config, beat_wait=beats)
    refusing = Refusing()
    event.listen(Engine, "before_cursor_execute", refusing)
    try:
        a.llm.hold()
        await start_on(a)
        await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
        await one_beat(a, beats)  # renewed: the lease runs until a lifetime after this beat
        refusing.on = True
        await one_beat(a, beats)  # refused, but the lease outlives the next beat by a second: the call goes on
        await asyncio.sleep(0)
        assert refusing.refused == 1 and a.llm.cancelled == 0
        await one_beat(a, beats)  # refused again, and the lease would lapse exactly at the next beat: stop now
        await until(lambda: a.llm.cancelled == 1, 5, "the call stopped by the heartbeat")
        assert refusing.refused == 2
    finally:
        event.remove(Engine, "before_cursor_execute", refusing)
        if a.llm.gate is not None:
            a.llm.gate.set()
        await a.app.close(grace_s=5)


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
