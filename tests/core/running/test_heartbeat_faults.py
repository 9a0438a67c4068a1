"""A heartbeat the database refuses: the work goes on while its lease still outlives the next beat, and stops the
moment it would not (a renewal that cannot reach the database must neither kill work early nor let it run on a
lease that has run out)."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from sqlalchemy import Engine, event

from core.storage import tables as t
from tests.core.running.test_fencing import Replica, replica, start_on
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
