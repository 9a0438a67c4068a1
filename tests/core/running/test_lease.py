"""The lease (core/running/lease.py), between two drivers on one discussion (two apps on one database, as two
replicas would be): the one that lost its lease mid-step records no turn, changes no state and sends no post; a
failed heartbeat stops its model call, and one the database refuses keeps the work only while its lease outlives
the next beat."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest
from sqlalchemy import Engine, event, func, select
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Discussion, Post, Status
from core.running.driver import SEND_LANDS_S
from core.storage import tables as t
from core.storage.rows import aware
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import Beats, FakeClock
from tests.fakes.cluster import until
from tests.fakes.llm import ScriptedLLM

TTL = 60.0


class Seat(RecordingChat):
    """One replica's connection to the one shared chat: the platform is the same, who sent what is noted."""

    def __init__(self, platform_: RecordingChat) -> None:
        super().__init__("console")
        self.platform_ = platform_
        self.sent_keys: list[str] = []  # posts and edits this replica made
        self.edits_held: asyncio.Event | None = None
        self.posts_held: asyncio.Event | None = None
        self.finds_held: asyncio.Event | None = None
        self.finds = 0  # look-ups this replica made

    async def publish(self, discussion: Discussion, post: Post) -> str:
        self.sent_keys.append(post.key)
        if self.posts_held is not None:
            await self.posts_held.wait()  # a slow post: the request is out, the platform has not shown it yet
        return await self.platform_.publish(discussion, post)

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        self.sent_keys.append(post.key)
        if self.edits_held is not None:
            await self.edits_held.wait()  # a slow edit: the request is out, the platform has not applied it yet
        await self.platform_.update(discussion, ref, post)

    async def find(self, discussion: Discussion, key: str) -> str | None:
        self.finds += 1
        found = await self.platform_.find(discussion, key)
        if self.finds_held is not None:
            await self.finds_held.wait()  # a slow look-up: the platform has answered, the answer is on its way back
        return found


class Replica:
    def __init__(self, app: App, chat: Seat, llm: ScriptedLLM, clock: FakeClock) -> None:
        self.app, self.chat, self.llm, self.clock = app, chat, llm, clock


async def replica(url: str, owner: str, platform: RecordingChat, *, ttl: float = TTL) -> Replica:
    settings = Settings(_env_file=None, database_url=url, council_lease_ttl_s=ttl)  # type: ignore[call-arg]
    chat, llm, clock = Seat(platform), ScriptedLLM(), FakeClock()
    app = await build_app(settings, {"console": chat}, llm=llm, clock=clock, owner=owner)
    return Replica(app, chat, llm, clock)


@contextlib.asynccontextmanager
async def two(url: str, *, a_ttl: float) -> AsyncIterator[tuple[Replica, Replica]]:
    platform = RecordingChat("console")
    a = await replica(url, "replica-a", platform, ttl=a_ttl)
    b = await replica(url, "replica-b", platform)
    try:
        yield a, b
    finally:
        for r in (a, b):
            if r.llm.gate is not None:
                r.llm.gate.set()
            await r.app.close(grace_s=5)


@pytest.fixture
async def pair(db_url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    """A's heartbeat would not run before the test ends (a minute): only the fence can stop A."""
    async with two(db_url, a_ttl=TTL) as both:
        yield both


@pytest.fixture
async def quick_pair(db_url: str) -> AsyncIterator[tuple[Replica, Replica]]:
    """A's lease lifetime, on its own clock, is 0.3 s: a test steps its heartbeat (`stepped`), a third of it a beat."""
    async with two(db_url, a_ttl=0.3) as both:
        yield both


def stepped(r: Replica) -> Beats:
    """The replica's heartbeat, stepped by the test one beat at a time instead of every 0.1 s of real time."""
    beats = Beats()
    r.app.driver.config.beat_wait = beats  # the config the driver's parts share
    return beats


async def beat(r: Replica, beats: Beats, times: int) -> None:
    """`times` heartbeats, each a third of A's lease lifetime (0.1 s) later on A's own clock."""
    for _ in range(times):
        r.clock.advance(seconds=0.1)
        await beats.tick()


async def start_on(a: Replica, rounds: int | None = 1) -> str:
    reply = await a.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", platform="console", channel="C1", user_id="U1",
        user_name="Dana", rounds=rounds))
    return reply.discussion_id


async def take_over(a: Replica, b: Replica) -> None:
    """B's clock is past A's lease: B's sweep claims the discussion as it would after A stopped renewing."""
    b.clock.set(a.clock.now() + timedelta(seconds=TTL + 1))

    async def claimed() -> bool:
        # B sweeps again, as a replica does every interval: a sweep skips a row A's heartbeat has locked.
        return bool(await b.app.driver.sweep())

    await until(claimed, 5, "B took the lease")


async def test_the_driver_that_lost_its_lease_mid_step_writes_and_posts_nothing(
    pair: tuple[Replica, Replica],
) -> None:
    a, b = pair
    a.llm.cost_per_call, b.llm.cost_per_call = 1.0, 0.001  # whose answers were recorded shows in the cost
    gate = a.llm.hold()
    b_gate = b.llm.hold()  # B waits too, so A's late answer comes back while B is the owner mid-step
    discussion_id = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
    sent_by_a = len(a.chat.sent_keys)
    await take_over(a, b)
    await until(lambda: b.llm.waiting == 1, 5, "B is running the same step")

    gate.set()  # A's model answers after A lost the lease
    await until(lambda: a.llm.waiting == 0, 5, "A's call returned")
    await a.app.driver.idle()
    b_gate.set()
    await b.app.driver.idle()

    assert a.chat.sent_keys[sent_by_a:] == [], "the loser sent nothing after losing its lease"
    async with b.app.store.tx() as tx:
        d = await tx.discussion(discussion_id)
        turns = await tx.turns(discussion_id)
        usage_rows = (await tx.conn.execute(select(func.count()).select_from(t.usage))).scalar()
    assert d is not None and d.status == Status.DONE
    # Every usage row is one of B's calls: A's answer was never recorded.
    assert len(a.llm.prompts) == 1
    assert usage_rows == len(b.llm.prompts) and d.cost_usd == pytest.approx(0.001 * len(b.llm.prompts))
    assert all(turn.status.value == "published" for turn in turns)
    keys = Counter(a.chat.platform_.keys())
    assert [k for k, n in keys.items() if n > 1] == [], "nothing posted twice"


async def test_a_driver_that_lost_its_lease_leaves_the_queued_posts_to_the_new_owner(
    pair: tuple[Replica, Replica],
) -> None:
    """A post queued after A lost the lease (B owns the discussion now, mid-step): when A is asked to publish it,
    A's drain checks the lease before it claims the post, and sends nothing."""
    a, b = pair
    gate, b_gate = a.llm.hold(), b.llm.hold()  # both inside a model call: neither records nor drains meanwhile
    discussion_id = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
    await take_over(a, b)
    await until(lambda: b.llm.waiting == 1, 5, "B is running the same step")
    async with b.app.store.tx() as tx:
        d = await tx.discussion(discussion_id)
        assert d is not None
        await tx.enqueue(discussion_id, Post(kind="notice", key=f"{discussion_id}:late", text="Late notice"),
                         b.clock.now())
    sent_by_a = len(a.chat.sent_keys)
    await a.app.driver.publish(discussion_id)
    assert a.chat.sent_keys[sent_by_a:] == [], "A sent a post of a discussion it no longer drives"
    gate.set()
    b_gate.set()
    await a.app.driver.idle()
    await b.app.driver.idle()
    assert f"{discussion_id}:late" in b.chat.sent_keys, "B, the owner, sent it"


async def test_a_post_the_lapsed_owner_is_still_sending_is_found_not_sent_again(db_url: str) -> None:
    """A's lease lapses while its post is on its way to the platform (its loop was slow to renew); B takes the
    discussion over, finds the post claimed and unsent, and looks for it on the platform. Seen under load with three
    replicas: B looked before A's post landed, found nothing, and posted it a second time."""
    async with two(db_url, a_ttl=TTL) as (a, b):
        sole = db_url.startswith("sqlite")  # A opened the file first: no other live process can be using it
        assert a.app.driver.config.send_lands_s == (0.0 if sole else SEND_LANDS_S)
        assert b.app.driver.config.send_lands_s == SEND_LANDS_S  # A may be sending
        b.app.driver.config.send_lands_s = 1.0  # the test's own time: well beyond its post's way to the platform
        a.chat.posts_held = held = asyncio.Event()
        await start_on(a)
        await until(lambda: bool(a.chat.sent_keys), 5, "A's first post is on its way")
        await take_over(a, b)

        async def b_claimed() -> bool:  # B counted its own attempt at A's post: from here on it may look it up
            async with b.app.store.tx() as tx:
                tries = (await tx.conn.execute(select(func.max(t.outbox.c.attempts)))).scalar()
            return (tries or 0) >= 2

        await until(b_claimed, 5, "B claimed the post A is sending")
        held.set()  # A's post lands, well within the time B gives it
        await a.app.driver.idle()
        await b.app.driver.idle()
        keys = Counter(a.chat.platform_.keys())
        assert [k for k, n in keys.items() if n > 1] == [], "nothing posted twice"
        assert b.chat.platform_.find_calls >= 1, "B looked for the post A had claimed"


async def test_a_driver_whose_lease_ran_out_before_it_sent_a_claimed_post_leaves_it_to_the_new_owner(
    db_url: str,
) -> None:
    """A claims a post tried before and looks for it on the platform; the look-up is slow, and A's lease runs out
    meanwhile (its heartbeat starved). B takes the discussion over, claims the post, finds nothing and sends it.
    A's look-up then comes back empty: A must not send the post as well, on a lease it no longer holds."""
    async with two(db_url, a_ttl=TTL) as (a, b):
        a.llm.hold()
        b.llm.hold()
        a.app.driver.config.send_lands_s = b.app.driver.config.send_lands_s = 0.01  # the test's own time
        did = await start_on(a)
        await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")

        async def unsent() -> list[int]:
            async with a.app.store.tx() as tx:
                return [row[3] for row in await tx.pending_posts(did)]

        async def drained() -> bool:
            return await unsent() == []

        await until(drained, 5, "what A had queued is sent")
        key = f"{did}:retry"
        async with a.app.store.tx() as tx:  # a post a process tried before it died: attempts 1, not sent
            await tx.enqueue(did, Post(kind="notice", key=key, text="Tried before"), a.clock.now())
            await tx.conn.execute(t.outbox.update().where(t.outbox.c.key == key).values(attempts=1))
        a.chat.finds_held = held = asyncio.Event()
        sending = asyncio.create_task(a.app.driver.publish(did))
        await until(lambda: a.chat.finds == 1, 5, "A is looking for the post it claimed")
        a.clock.advance(seconds=TTL + 1)  # A's lease ran out while it waited (its heartbeat never came)
        await take_over(a, b)
        await until(lambda: key in b.chat.sent_keys, 5, "B sent the post it found nowhere")
        held.set()  # A's look-up comes back: nothing was there when the platform looked
        await asyncio.wait_for(sending, 10)
        assert key not in a.chat.sent_keys, "A sent a claimed post after its lease ran out"
        assert Counter(a.chat.platform_.keys())[key] == 1


async def test_a_failed_heartbeat_stops_the_model_call_in_flight(quick_pair: tuple[Replica, Replica]) -> None:
    a, b = quick_pair
    beats = stepped(a)
    a.llm.hold()  # never released: only the heartbeat can end A's step
    b_gate = b.llm.hold()  # B's first call waits too: the lease is B's while it runs
    did = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
    await take_over(a, b)
    assert a.llm.cancelled == 0, "nothing but A's heartbeat stops A's call"
    await beat(a, beats, 1)  # A's next renewal finds the lease is B's: it cancels the call at once
    await until(lambda: a.llm.cancelled == 1, 5, "A's call cancelled by its heartbeat")
    await asyncio.wait_for(a.app.driver.idle(), 10.0)
    assert (await lease_of(a, did))[0] == "replica-b", "A never took the lease back"
    b_gate.set()
    await asyncio.wait_for(b.app.driver.idle(), 10.0)
    async with b.app.store.tx() as tx:
        d = await tx.discussion(did)
        owner, _ = await tx.lease_owner(did)
    assert d is not None and d.status == Status.DONE and owner is None, "B finished it and gave the lease back"
    assert a.llm.cancelled == 1 and b.llm.cancelled == 0


async def test_one_heartbeat_renews_every_lease_the_process_holds_in_one_statement(
    quick_pair: tuple[Replica, Replica]
) -> None:
    """A process driving many discussions renews their leases together: a statement per discussion every few
    seconds was a transaction per discussion, and hundreds of them were the database's busiest work."""
    a, _ = quick_pair
    beats = stepped(a)
    a.llm.hold()
    renewals: list[str] = []

    def count(conn: object, cursor: object, statement: str, *args: object) -> None:
        if statement.lstrip().upper().startswith("UPDATE DISCUSSIONS SET LEASE_EXPIRES_AT"):
            renewals.append(statement)

    event.listen(Engine, "before_cursor_execute", count)  # every engine: renewals have a connection of their own
    try:
        for channel in ("C1", "C2", "C3"):
            await a.app.service.handle(c.StartDiscussion(topic=f"Trunk-based development in {channel}?",
                                                         platform="console", channel=channel, user_id="U1",
                                                         user_name="Dana", rounds=1))
        await until(lambda: a.llm.waiting == 3, 5, "A is inside a model call in each discussion")
        renewals.clear()
        await beat(a, beats, 4)
    finally:  # the listener is on every engine of the test run: never left behind
        event.remove(Engine, "before_cursor_execute", count)
    assert len(renewals) == 4, renewals  # a statement a beat, whatever the number of discussions
    assert a.llm.cancelled == 0, "every lease was renewed in time"
    async with a.app.store.tx() as tx:
        owners = {await tx.lease_owner(d.id) for d in await tx.discussions()}
    assert {owner for owner, _ in owners} == {"replica-a"}


async def test_a_heartbeat_renews_in_time_while_every_pooled_connection_is_busy(
    quick_pair: tuple[Replica, Replica]
) -> None:
    """Under load every pooled connection can be busy with the work the leases protect (seen: a renewal waited
    9.6 s for one with 100 discussions on a 10 s lease; the leases lapsed, turns ran again and a post went out
    twice). The renewal must not queue behind that work."""
    a, _ = quick_pair
    beats = stepped(a)
    a.llm.hold()
    did = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
    busy = []
    try:
        while True:  # every connection the pool will hand out, held as a busy process's transactions hold them
            try:
                busy.append(await asyncio.wait_for(a.app.store.engine.connect(), 0.5))
            except TimeoutError:
                break
        await beat(a, beats, 3)  # each beat must end (renewed) with every pooled connection still busy
        owner, expires = await lease_of(a, did)
    finally:
        for conn in busy:
            await conn.close()
    assert a.llm.cancelled == 0 and owner == "replica-a"
    assert expires is not None and expires > a.clock.now(), "renewed ahead of A's clock, a lease lifetime on"


async def lease_of(r: Replica, discussion_id: str) -> tuple[str | None, datetime | None]:
    """The lease as the database has it, read on a connection of the test's own (the app's pool is all busy)."""
    engine = create_async_engine(r.app.store.engine.url, poolclass=NullPool)
    try:
        async with engine.connect() as conn:
            row = (await conn.execute(select(t.discussions.c.lease_owner, t.discussions.c.lease_expires_at)
                                      .where(t.discussions.c.id == discussion_id))).first()
    finally:
        await engine.dispose()
    assert row is not None
    return row[0], aware(row[1])


async def test_shutdown_releases_the_lease_at_once_for_another_replica(pair: tuple[Replica, Replica]) -> None:
    a, b = pair
    a.llm.hold()  # a model call in flight when the process is told to stop
    discussion_id = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
    await asyncio.wait_for(a.app.driver.shutdown(), 2.0)  # what SIGTERM does: no waiting for the turn
    assert a.llm.cancelled == 1
    b.clock.set(a.clock.now())  # no time has passed: nothing expired, the lease was given back
    assert await b.app.driver.sweep() == [discussion_id]
    await b.app.driver.idle()
    async with b.app.store.tx() as tx:
        d = await tx.discussion(discussion_id)
    assert d is not None and d.status == Status.DONE


async def test_a_vote_on_one_replica_and_the_close_on_another_never_bring_the_buttons_back(
    pair: tuple[Replica, Replica],
) -> None:
    a, b = pair
    discussion_id = await start_on(a, rounds=None)  # one round, then it waits with its poll open
    await a.app.driver.idle()
    async with a.app.store.tx() as tx:
        (poll,) = await tx.polls(discussion_id)
    a.chat.edits_held = held = asyncio.Event()  # A's edits are slow to land
    vote = a.app.service.handle(c.CastBallot(in_channel="C1", poll_id=poll.id, choice=0, user_id="U2",
                                             user_name="Sam"))
    await asyncio.wait_for(vote, 5)  # answered at once: the edit goes out through the outbox
    b.clock.set(a.clock.now())
    await b.app.service.handle(c.ClosePoll(in_channel="C1", poll_id=poll.id, user_id="U1"))  # the starter, on B
    await b.app.driver.idle()
    held.set()
    await a.app.driver.idle()
    await b.app.driver.sweep()
    await b.app.driver.idle()
    platform = a.chat.platform_
    shown = platform.by_ref[poll.message_ref].updates[-1]
    assert shown.poll is not None and shown.poll.closed and shown.actions == [], "closed, without buttons"
    assert shown.poll.counts[:2] == [1, 0] and sum(shown.poll.counts) == shown.poll.total == 1, \
        "Sam's vote, counted once"


async def test_a_heartbeat_that_renews_keeps_a_long_model_call_alive_and_the_lease_held(
    quick_pair: tuple[Replica, Replica]
) -> None:
    a, _ = quick_pair
    beats = stepped(a)
    gate = a.llm.hold()
    did = await start_on(a)
    await until(lambda: a.llm.waiting == 1, 5, "A is inside its first model call")
    await beat(a, beats, 3)  # three lifetimes' thirds: without a renewal the 0.3 s lease would have run out
    async with a.app.store.tx() as tx:
        owner, expires = await tx.lease_owner(did)
    assert a.llm.cancelled == 0 and owner == "replica-a"
    assert expires is not None and expires > a.clock.now(), "renewed ahead of A's clock, a lease lifetime on"
    gate.set()
    await asyncio.wait_for(a.app.driver.idle(), 10.0)
    async with a.app.store.tx() as tx:
        d = await tx.discussion(did)
    assert d is not None and d.status == Status.DONE and a.llm.cancelled == 0  # its one round and synthesis


# A heartbeat the database refuses: a renewal that cannot reach the database must neither kill work early nor let
# it run on a lease that has run out.
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
    a.app.driver.config.beat_wait = beats  # the config the driver's parts share
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
