"""Outbox rules (core/running/outbox.py), one at a time on both stores and a fixed clock, through the driver's own
outbox: posts go out in order under the lease, once each; a refused post waits 2, 4, 8 … seconds (up to ten
minutes, or what the platform asks) and the rest wait behind it; six refusals of one post block the discussion and
tell its starter; a post that can never land buries the queue and blocks at once; a slow-down is waited out and
never counts; a post tried before is looked up before it is sent again; an edit goes to the message it replaces;
a header gives the discussion its thread, a poll its message, an ending's header lets its rows go."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta

import pytest
from sqlalchemy import event, select

from core.models import Discussion, Poll, PollView, Post, Status
from core.ports import RateLimited
from core.running.config import DriverConfig
from core.running.driver import Driver
from core.running.outbox import retry_delay
from core.showing.pages import PageLinks
from core.storage import tables as t
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

ME, OTHER = "this-process", "another-process"
TTL = 60.0


class Refusing(RecordingChat):
    """The recording chat, refusing the next posts with the exceptions in `refusals`, in turn."""

    def __init__(self) -> None:
        super().__init__("slack")
        self.refusals: list[Exception] = []
        self.held: asyncio.Event | None = None
        self.arrived = asyncio.Event()
        self.tries = 0  # posts asked of the platform, refused ones included
        self.threads: list[str] = []  # the thread each post was asked into, in order
        self.edited_in: list[str] = []  # the discussion of each edit

    async def publish(self, discussion: Discussion, post: Post) -> str:
        self.tries += 1
        self.threads.append(discussion.thread_ref)
        self.arrived.set()
        if self.held is not None:
            await self.held.wait()
        if self.refusals:
            raise self.refusals.pop(0)
        return await super().publish(discussion, post)

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        self.edited_in.append(discussion.id)
        await super().update(discussion, ref, post)


class Slow(Exception):
    """A refusal that says when to come back, as discord.py's rate limit does."""

    def __init__(self, retry_after: float) -> None:
        super().__init__("slow")
        self.retry_after = retry_after


class Rig:
    def __init__(self, store: Store, chat: Refusing | None = None, *, send_lands_s: float = 0.0,
                 pages: PageLinks | None = None) -> None:
        self.store, self.chat, self.clock = store, chat or Refusing(), FakeClock()
        self.driver = Driver(store, ScriptedLLM(), {"slack": self.chat}, self.clock,
                             DriverConfig(owner=ME, lease_ttl=TTL, send_lands_s=send_lands_s,
                                          pages=pages or PageLinks()))
        self.outbox = self.driver.outbox

    async def add(self, *posts: Post | str, status: Status = Status.RUNNING, leased: bool = True) -> None:
        now = self.clock.now()
        async with self.store.tx() as tx:
            await tx.add_discussion(Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack",
                                               workspace="T1", channel="C1", created_at=now, updated_at=now,
                                               status=status, created_by="U1"))
            if leased:
                assert await tx.acquire_lease("d1", ME, now, TTL)
        await self.queue(*posts)

    async def queue(self, *posts: Post | str) -> None:
        async with self.store.tx() as tx:
            for p in posts:
                await tx.enqueue("d1", p if isinstance(p, Post) else Post(kind="notice", key=p, text=p),
                                 self.clock.now())

    async def renew(self) -> None:
        async with self.store.tx() as tx:
            assert await tx.acquire_lease("d1", ME, self.clock.now(), TTL)

    async def rows(self) -> list[dict[str, object]]:
        async with self.store.tx() as tx:
            got = (await tx.conn.execute(select(t.outbox).order_by(t.outbox.c.id))).mappings().all()
        return [dict(r) for r in got]

    async def due(self) -> datetime | None:
        async with self.store.tx() as tx:
            return (await tx.queue("d1"))[1]

    async def d(self) -> Discussion:
        async with self.store.tx() as tx:
            d = await tx.discussion("d1")
        assert d is not None
        return d


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    """SQLite only: the claims' row locks are PostgreSQL's, and test_outbox.py races two replicas on it."""
    s = Store(make_engine(sqlite_url))
    yield s
    await s.close()


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "core.running.outbox"]


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    r = Rig(store)
    yield r
    if r.chat.held is not None:
        r.chat.held.set()
    await r.driver.shutdown()


def test_a_refused_post_waits_two_seconds_doubling_up_to_ten_minutes() -> None:
    assert [retry_delay(a) for a in (0, 1, 2, 3, 4)] == [2.0, 2.0, 4.0, 8.0, 16.0]
    assert retry_delay(9) == 512.0 and retry_delay(10) == 600.0 and retry_delay(40) == 600.0


async def test_posts_go_out_in_order_once_each_under_the_lease(rig: Rig) -> None:
    await rig.add("d1:a", "d1:b", "d1:c")
    assert await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a", "d1:b", "d1:c"]
    assert await rig.outbox.publish("d1"), "nothing queued: nothing to do"
    assert rig.chat.keys("d1") == ["d1:a", "d1:b", "d1:c"]
    rows = await rig.rows()
    assert [r["sent"] for r in rows] == [True] * 3
    assert [r["ref"] for r in rows] == [rig.chat.by_key[k].ref for k in ("d1:a", "d1:b", "d1:c")]
    assert {r["sent_at"].replace(tzinfo=None) for r in rows} == {rig.clock.now().replace(tzinfo=None)}


async def test_without_the_lease_nothing_is_sent(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1:a", leased=False)
    with caplog.at_level(logging.INFO, logger="core.running.outbox"):
        assert not await rig.outbox.publish("d1")
    assert said(caplog) == ["d1 is no longer driven here; its posts are left to the driver that has it"]
    async with rig.store.tx() as tx:
        assert await tx.acquire_lease("d1", OTHER, rig.clock.now(), TTL)
    assert not await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == [] and [r["attempts"] for r in await rig.rows()] == [0]


async def test_a_refused_post_waits_out_its_backoff_and_the_rest_wait_behind_it(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1:a", "d1:b")
    rig.chat.refusals = [RuntimeError("down"), RuntimeError("down")]
    start = rig.clock.now()
    with caplog.at_level(logging.INFO, logger="core.running.outbox"):
        assert not await rig.outbox.publish("d1")
    assert said(caplog) == ["could not publish d1:a; trying again in 2 s"]
    assert caplog.records[-1].exc_info is not None and str(caplog.records[-1].exc_info[1]) == "down"
    assert await rig.due() == start + timedelta(seconds=2)
    assert [r["last_error"] for r in await rig.rows()] == ["RuntimeError: down", ""]
    rig.clock.advance(seconds=1.9)
    assert not await rig.outbox.publish("d1"), "not before it is due"
    assert rig.chat.tries == 1
    rig.clock.advance(seconds=0.1)
    assert not await rig.outbox.publish("d1")
    assert await rig.due() == rig.clock.now() + timedelta(seconds=4), "the second refusal waits twice as long"
    rig.clock.advance(seconds=4)
    assert await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert (await rig.d()).status == Status.RUNNING


async def test_a_platform_that_says_when_to_come_back_is_believed(rig: Rig) -> None:
    await rig.add("d1:a")
    rig.chat.refusals = [Slow(30.0), Slow(0.5)]
    assert not await rig.outbox.publish("d1")
    assert await rig.due() == rig.clock.now() + timedelta(seconds=30)
    rig.clock.advance(seconds=30)
    assert not await rig.outbox.publish("d1")
    assert await rig.due() == rig.clock.now() + timedelta(seconds=4), "never sooner than the backoff"


async def test_six_refusals_of_one_post_block_the_discussion_and_tell_its_starter(rig: Rig) -> None:
    await rig.add("d1:a")
    rig.chat.refusals = [RuntimeError("down")] * 6
    for refusal in range(1, 7):
        assert not await rig.outbox.publish("d1")
        d = await rig.d()
        assert d.status == (Status.BLOCKED if refusal == 6 else Status.RUNNING), refusal
        assert rig.chat.tries == refusal
        rig.clock.advance(seconds=600)
        await rig.renew()
    assert "keeps refusing posts (RuntimeError)" in d.blocked_reason
    [(did, user, post)] = rig.chat.told
    assert (did, user) == ("d1", "U1") and post.actions, "told privately, with a Retry button"


async def test_a_paused_discussion_is_never_blocked_by_its_posts(rig: Rig) -> None:
    await rig.add("d1:a", status=Status.PAUSED)
    rig.chat.gone = "channel archived"
    assert not await rig.outbox.publish("d1")
    assert (await rig.d()).status == Status.PAUSED and rig.chat.told == []


async def test_a_post_that_can_never_land_buries_the_queue_and_blocks_at_once(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1:a", "d1:b", status=Status.WAITING)
    rig.chat.gone = "channel archived"
    with caplog.at_level(logging.INFO, logger="core.running.outbox"):
        assert not await rig.outbox.publish("d1")
    assert said(caplog) == ["d1:a can never be posted: channel archived"]
    d = await rig.d()
    assert d.status == Status.BLOCKED and d.blocked_reason == "it cannot post any more: channel archived"
    assert [(r["dead"], r["last_error"]) for r in await rig.rows() if r["key"] in ("d1:a", "d1:b")] == [
        (True, "channel archived")] * 2
    assert len(rig.chat.told) == 1


async def test_a_slow_down_is_waited_out_and_never_counts_toward_blocking(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1:a")
    rig.chat.refusals = [RateLimited("slow down", 7.0) for _ in range(8)]
    with caplog.at_level(logging.INFO, logger="core.running.outbox"):
        assert not await rig.outbox.publish("d1")
    assert said(caplog) == ["d1:a: the platform asked to slow down; trying again in 7.0 s"]
    rig.clock.advance(seconds=7)
    for _ in range(7):
        assert not await rig.outbox.publish("d1")
        assert await rig.due() == rig.clock.now() + timedelta(seconds=7)
        rig.clock.advance(seconds=7)
    row = (await rig.rows())[0]
    assert row["attempts"] == 0 and row["last_error"] == "rate limited: slow down"
    assert rig.driver._later == {"d1": 7.0}, "the driver comes back once the wait is over"
    assert (await rig.d()).status == Status.RUNNING
    assert await rig.outbox.publish("d1") and rig.chat.find_calls == 0, "never tried: nothing to look up"


async def test_a_post_tried_before_is_looked_up_and_not_sent_twice(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1:a", "d1:b")
    rig.chat.fail_next(after_post=True)  # the platform took it, the answer was lost
    assert not await rig.outbox.publish("d1")
    rig.clock.advance(seconds=2)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="core.running.outbox"):
        assert await rig.outbox.publish("d1")
    assert said(caplog) == [], "no wait for a send to land when none is configured"
    assert rig.chat.edited_in == ["d1"], "the post found is brought up to date in its own discussion"
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert rig.chat.find_calls == 1, "only the post tried before is looked up"
    assert [r["ref"] for r in await rig.rows()] == [rig.chat.by_key["d1:a"].ref, rig.chat.by_key["d1:b"].ref]


async def test_a_post_whose_lease_ran_out_on_its_way_is_left_to_the_next_owner(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1:a")
    await rig.driver.lease.take("d1", lambda tx: tx.placeholders("d1"))  # held here until a lifetime from now
    rig.chat.held = asyncio.Event()
    rig.chat.held.set()

    async def late_find(discussion: Discussion, key: str) -> str | None:
        rig.clock.advance(seconds=TTL)  # the look-up outlasted the lease
        return None

    rig.chat.fail_next()
    assert not await rig.outbox.publish("d1")
    rig.clock.advance(seconds=2)
    async with rig.store.tx() as tx:  # renewed: the claim's fence holds
        assert await tx.acquire_lease("d1", ME, rig.clock.now(), TTL)
    rig.chat.find = late_find  # type: ignore[method-assign]
    calls = rig.chat.tries
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="core.running.outbox"):
        assert not await rig.outbox.publish("d1")
    assert rig.chat.tries == calls, "never sent once the lease held here has run out"
    assert said(caplog)[-1] == "d1:a is being sent by another driver"


async def test_an_edit_goes_to_the_message_it_replaces(rig: Rig) -> None:
    await rig.add("d1:a")
    assert await rig.outbox.publish("d1")
    ref = rig.chat.by_key["d1:a"].ref
    await rig.queue(Post(kind="notice", key="d1:a:v2", text="edited", replaces="d1:a"),
                    Post(kind="notice", key="d1:gone:v2", text="edited", replaces="d1:gone"))
    assert await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a"], "edits, never new messages"
    assert rig.chat.edited_in == ["d1"]
    assert [p.text for p in rig.chat.by_ref[ref].updates] == ["edited"]
    rows = await rig.rows()
    assert [r["ref"] for r in rows] == [ref, ref, ""], "an edit of a message never sent edits nothing"


async def test_an_edit_finds_its_message_after_a_takeover(rig: Rig) -> None:
    await rig.add("d1:a")
    assert await rig.outbox.publish("d1")
    ref = rig.chat.by_key["d1:a"].ref
    rig.driver.kept.start("d1")  # a new lease: nothing sent under it yet
    await rig.queue(Post(kind="notice", key="d1:a:v2", text="edited", replaces="d1:a"))
    assert await rig.outbox.publish("d1")
    assert [p.text for p in rig.chat.by_ref[ref].updates] == ["edited"]
    kept = rig.driver.kept.get("d1")
    assert kept is not None and kept.refs["d1:a"] == ref, "kept for the next edit"


async def test_a_header_gives_the_discussion_its_thread_and_an_ending_lets_its_rows_go(rig: Rig) -> None:
    await rig.add(Post(kind="header", key="d1:header", text="Topic"))
    assert await rig.outbox.publish("d1")
    header = rig.chat.by_key["d1:header"].ref
    assert (await rig.d()).thread_ref == header
    async with rig.store.tx() as tx:
        await tx.live_text_shown("d1", "d1:r1:s1:analyst", "words", rig.clock.now())
        d = await tx.discussion("d1")
        assert d is not None
        d.status = Status.DONE
        await tx.save_discussion(d, rig.clock.now())
    await rig.queue(Post(kind="header", key="d1:header:done", text="Done", replaces="d1:header"))
    assert await rig.outbox.publish("d1")
    assert (await rig.d()).thread_ref == header, "the thread stays where it began"
    async with rig.store.tx() as tx:
        assert await tx.live_texts("d1") == {}


async def test_a_header_while_running_keeps_the_words_so_far(rig: Rig) -> None:
    await rig.add(Post(kind="header", key="d1:header", text="Topic"))
    async with rig.store.tx() as tx:
        await tx.live_text_shown("d1", "d1:r1:s1:analyst", "words", rig.clock.now())
    assert await rig.outbox.publish("d1")
    async with rig.store.tx() as tx:
        assert await tx.live_texts("d1") == {"d1:r1:s1:analyst": "words"}


async def test_a_poll_post_gives_the_poll_its_message(rig: Rig) -> None:
    await rig.add()
    async with rig.store.tx() as tx:
        poll = await tx.add_poll(Poll(discussion_id="d1", key="d1:r1:poll", round=1, question="Which?",
                                      options=["A", "B"], created_at=rig.clock.now()))
    assert poll is not None
    view = PollView(poll_id=poll.id, question="Which?", options=["A", "B"], counts=[0, 0])
    await rig.queue(Post(kind="poll", key="d1:r1:poll", text="Which?", poll=view))
    assert await rig.outbox.publish("d1")
    async with rig.store.tx() as tx:
        [stored] = await tx.polls("d1")
    assert stored.message_ref == rig.chat.by_key["d1:r1:poll"].ref


async def test_publish_calls_asked_while_a_drain_sends_are_served_by_it(rig: Rig) -> None:
    await rig.add("d1:a")
    rig.chat.held = asyncio.Event()
    first = asyncio.create_task(rig.outbox.publish("d1"))
    await asyncio.wait_for(rig.chat.arrived.wait(), 5)
    await rig.queue("d1:b")
    second = asyncio.create_task(rig.outbox.publish("d1"))  # asked while the first drain sends
    await asyncio.sleep(0)
    rig.chat.held.set()
    assert await first and await second
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert [r["attempts"] for r in await rig.rows()] == [1, 1], "each claimed once"


async def test_a_fenced_transaction_posts_what_it_queued_once_it_commits(rig: Rig) -> None:
    await rig.add()
    async with rig.outbox.sending("d1") as (tx, d):
        await tx.enqueue(d.id, Post(kind="notice", key="d1:a", text="a"), rig.clock.now())
        assert rig.chat.keys("d1") == []
    assert rig.chat.keys("d1") == ["d1:a"]
    assert [r["attempts"] for r in await rig.rows()] == [1]


async def test_a_fenced_transaction_behind_a_running_drain_leaves_its_posts_to_it(rig: Rig) -> None:
    await rig.add("d1:a")
    rig.chat.held = asyncio.Event()
    first = asyncio.create_task(rig.outbox.publish("d1"))
    await asyncio.wait_for(rig.chat.arrived.wait(), 5)
    assert await rig.outbox.take("d1") is None, "one drain at a time"

    async def write() -> None:
        async with rig.outbox.sending("d1") as (tx, d):
            await tx.enqueue(d.id, Post(kind="notice", key="d1:b", text="b"), rig.clock.now())

    writing = asyncio.create_task(write())
    await asyncio.sleep(0)
    rig.chat.held.set()
    await asyncio.gather(first, writing)
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    drain = await rig.outbox.take("d1")
    assert drain is not None, "released once sent"
    drain.release()


async def test_a_forgotten_discussion_starts_its_tickets_again(rig: Rig) -> None:
    await rig.add("d1:a")
    assert await rig.outbox.publish("d1")
    rig.outbox.forget("d1")
    assert rig.outbox._asked == {} and rig.outbox._served == {} and rig.outbox._locks == {}
    await rig.queue("d1:b")
    assert await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]


class Mute(Refusing):
    """A chat that cannot message the starter privately either."""

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        raise RuntimeError("direct messages are closed")


async def test_a_starter_who_cannot_be_told_still_finds_the_discussion_blocked(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    r = Rig(store, Mute())
    try:
        await r.add("d1:a")
        r.chat.gone = "bot removed"
        with caplog.at_level(logging.WARNING, logger="core.running.outbox"):
            assert not await r.outbox.publish("d1")
        assert (await r.d()).status == Status.BLOCKED
        assert said(caplog)[-1] == "could not tell U1 that d1 is blocked"
        exc_info = caplog.records[-1].exc_info
        assert exc_info and str(exc_info[1]) == "direct messages are closed", "logged with why"
    finally:
        await r.driver.shutdown()


@contextlib.contextmanager
def outbox_reads(store: Store) -> Iterator[list[str]]:
    """The statements that read rows of the outbox (the queue, a post's discussion), while the block runs."""
    seen: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_: object) -> None:
        if sql.lstrip().startswith("SELECT outbox."):
            seen.append(sql)

    event.listen(store.engine.sync_engine, "before_cursor_execute", count)
    try:
        yield seen
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", count)


async def test_a_queue_of_three_is_read_once_and_each_post_claimed_without_reading_it_again(rig: Rig) -> None:
    await rig.add("d1:a", "d1:b", "d1:c")
    with outbox_reads(rig.store) as reads:
        assert await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a", "d1:b", "d1:c"]
    assert len(reads) == 1, "the queue, once: each claim names its discussion, and the next post is claimed " \
                            "in the statement that marks the one before it sent"


async def test_what_a_fenced_transaction_queued_goes_out_whole_in_order_with_no_queue_read(rig: Rig) -> None:
    await rig.add()
    with outbox_reads(rig.store) as reads:
        async with rig.outbox.sending("d1") as (tx, d):
            for key in ("d1:a", "d1:b", "d1:c"):
                await tx.enqueue(d.id, Post(kind="notice", key=key, text=key), rig.clock.now())
    assert rig.chat.keys("d1") == ["d1:a", "d1:b", "d1:c"], "every post it queued, right after it commits"
    assert reads == [], "the transaction knows what it queued after a fence that saw nothing queued"
    assert [r["sent"] for r in await rig.rows()] == [True] * 3


async def test_a_publish_asked_while_a_fenced_transaction_sends_is_served_by_its_drain(rig: Rig) -> None:
    await rig.add()
    rig.chat.held = asyncio.Event()

    async def write() -> None:
        async with rig.outbox.sending("d1") as (tx, d):
            await tx.enqueue(d.id, Post(kind="notice", key="d1:a", text="a"), rig.clock.now())

    with outbox_reads(rig.store) as reads:
        writing = asyncio.create_task(write())
        await asyncio.wait_for(rig.chat.arrived.wait(), 5)  # its drain is sending
        await rig.queue("d1:b")
        asked = asyncio.create_task(rig.outbox.publish("d1"))  # waits behind that drain
        await asyncio.sleep(0)
        rig.chat.held.set()
        await writing
        assert await asked
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert len(reads) == 1, "the drain reads the queue again for it; the publish itself then has nothing to do"


async def test_a_sweep_that_found_nothing_queued_never_answers_for_a_later_publish(rig: Rig) -> None:
    await rig.add()
    assert await rig.outbox.drain("d1"), "nothing queued: nothing to do"
    await rig.queue("d1:a")
    assert await rig.outbox.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a"]


async def test_forgetting_a_discussion_this_process_never_sent_for_is_harmless(rig: Rig) -> None:
    await rig.add("d1:a", leased=False)
    assert not await rig.outbox.publish("d1"), "not driven here: no drain served it"
    rig.outbox.forget("d1")
    rig.outbox.forget("d2")
    assert rig.outbox._asked == {} and rig.outbox._served == {} and rig.outbox._locks == {}


async def test_a_post_tried_before_waits_for_a_send_still_landing_before_it_is_looked_up(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    r = Rig(store, send_lands_s=0.001)  # a thousandth of a second: the wait is logged, and kept short
    try:
        await r.add("d1:a")
        r.chat.fail_next(after_post=True)
        assert not await r.outbox.publish("d1")
        r.clock.advance(seconds=2)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="core.running.outbox"):
            assert await r.outbox.publish("d1")
        assert said(caplog) == ["d1:a was tried before; looking for it on the platform in 0 s"]
        assert r.chat.keys("d1") == ["d1:a"] and r.chat.find_calls == 1
    finally:
        await r.driver.shutdown()


async def test_a_header_and_the_final_synthesis_go_out_with_the_page_link_signed_as_they_are_sent(
        store: Store) -> None:
    pages = PageLinks(base_url="https://council.example", secret="s" * 32)
    r = Rig(store, pages=pages)
    try:
        await r.add(Post(kind="header", key="d1:header", text="Topic"), "d1:note")
        r.clock.advance(seconds=30)  # queued earlier, sent now
        assert await r.outbox.publish("d1")
        header, note = r.chat.posts("d1")
        assert header.page_url == pages.url("d1", r.clock.now()) and note.page_url == ""
    finally:
        await r.driver.shutdown()


async def test_posts_after_the_header_go_into_its_thread_and_a_notice_before_it_makes_no_thread(rig: Rig) -> None:
    await rig.add("d1:early", Post(kind="header", key="d1:header", text="Topic"), "d1:a")
    assert await rig.outbox.publish("d1")
    header = rig.chat.by_key["d1:header"].ref
    assert rig.chat.threads == ["", "", header], "the post after the header, in the same drain, goes into it"
    assert (await rig.d()).thread_ref == header


async def test_each_post_is_marked_sent_in_the_statement_that_claims_the_next(rig: Rig) -> None:
    await rig.add("d1:a", "d1:b", "d1:c")
    writes: list[str] = []

    def count(_conn: object, _cursor: object, sql: str, *_: object) -> None:
        if sql.lstrip().startswith("UPDATE outbox"):
            writes.append(sql)

    event.listen(rig.store.engine.sync_engine, "before_cursor_execute", count)
    try:
        assert await rig.outbox.publish("d1")
    finally:
        event.remove(rig.store.engine.sync_engine, "before_cursor_execute", count)
    assert len(writes) == 4, "the first claim, then one statement a post"
    assert [r["attempts"] for r in await rig.rows()] == [1, 1, 1]


async def test_a_sweep_drains_a_queue_nobody_asked_for_reading_it_once(rig: Rig) -> None:
    await rig.add("d1:a", "d1:b")
    with outbox_reads(rig.store) as reads:
        assert await rig.outbox.drain("d1")
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert len(reads) == 1


async def test_an_edit_under_the_same_lease_finds_its_message_without_reading_it(rig: Rig) -> None:
    await rig.add("d1:a")
    rig.driver.kept.start("d1")
    assert await rig.outbox.publish("d1")
    ref = rig.chat.by_key["d1:a"].ref
    await rig.queue(Post(kind="notice", key="d1:a:v2", text="edited", replaces="d1:a"))
    with outbox_reads(rig.store) as reads:
        assert await rig.outbox.publish("d1")
    assert [p.text for p in rig.chat.by_ref[ref].updates] == ["edited"]
    assert len(reads) == 1, "the queue only: the message's ref is kept from when it was sent"


async def test_a_lease_that_runs_out_at_the_very_moment_of_sending_sends_nothing(rig: Rig) -> None:
    await rig.add("d1:a")
    await rig.driver.lease.take("d1", lambda tx: tx.placeholders("d1"))
    expires = rig.driver.lease.held_until("d1")
    assert expires is not None
    rig.chat.fail_next()
    assert not await rig.outbox.publish("d1")
    rig.clock.advance(seconds=2)
    await rig.renew()

    async def on_the_dot(discussion: Discussion, key: str) -> None:
        rig.clock.set(datetime.fromtimestamp(expires, rig.clock.now().tzinfo))
        return None

    rig.chat.find = on_the_dot  # type: ignore[method-assign,assignment]
    calls = rig.chat.tries
    assert not await rig.outbox.publish("d1")
    assert rig.chat.tries == calls
