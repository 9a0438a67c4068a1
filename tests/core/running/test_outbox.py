"""The outbox (core/running/outbox.py): posts the platform refuses are retried with exponential backoff, the
starter told privately, never-landing posts given up on until Retry (on an injected clock); and its fences between
two replicas: publish calls asked together share one drain, and a drain that lost its lease sends nothing more."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, func, select, update

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Discussion, Phase, Post, Status
from core.ports import RateLimited
from core.storage import tables as t
from tests.core.conftest import C1, discussion, settle, start
from tests.core.running.test_lease import TTL, Replica, start_on, take_over, two
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.cluster import until
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[App]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    application = await build_app(settings, {"console": chat}, llm=llm, clock=clock)
    yield application
    await application.close()


async def sweep(app: App) -> list[str]:
    ids = await app.driver.sweep()
    await settle(app)
    return ids


async def test_a_refused_post_is_retried_with_exponential_backoff_then_the_starter_is_told(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    chat.fail_next(10_000)  # the platform refuses every post
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await settle(app)
    assert chat.publish_calls == 1
    async with app.store.tx() as tx:
        assert await tx.turns(did) == [], "no turns are spent while nobody can see them"

    for delay in (2, 4, 8, 16, 32):  # seconds before each next try
        calls = chat.publish_calls
        clock.advance(seconds=delay - 1)
        await sweep(app)
        assert chat.publish_calls == calls, f"tried again before its {delay} s backoff ran out"
        clock.advance(seconds=1)
        await sweep(app)
        assert chat.publish_calls == calls + 1
    d = await discussion(app, did)
    assert d.status == Status.BLOCKED
    assert d.blocked_reason == "the chat platform keeps refusing posts (ChatDown); still trying"
    [(where, who, dm)] = chat.told
    assert (where, who) == (did, "U1") and "is blocked" in dm.text
    assert [a.id for a in dm.actions] == ["fail:retry", "fail:stop"]
    assert "keeps refusing posts" in await app.service.guard.status_text(did)

    # Still tried, ever more rarely: the next try waits 64 s.
    clock.advance(seconds=63)
    assert await sweep(app) == []
    clock.advance(seconds=1)
    chat.recover()  # the platform is back
    assert await sweep(app) == [did]
    assert chat.keys(did) == [f"{did}:header"] and len(chat.told) == 1
    await app.service.handle(c.RetryTurns(**C1, discussion_id=did, user_id="U1", user_name="Dana"))
    await settle(app)
    keys = chat.keys(did)
    assert (await discussion(app, did)).status == Status.DONE and len(keys) == len(set(keys))


async def test_a_post_that_can_never_land_stops_being_retried_and_the_discussion_says_why(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    async def archive() -> None:
        chat.gone = "the channel is archived"

    llm.on_phase[Phase.STATEMENT] = archive  # the channel is archived mid-discussion
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.BLOCKED and "the channel is archived" in d.blocked_reason
    assert [who for _, who, _ in chat.told] == ["U1"]
    calls = chat.publish_calls
    clock.advance(hours=6)
    assert await sweep(app) == [] and chat.publish_calls == calls, "a dead post is not retried by every sweep"
    assert "the channel is archived" in await app.service.guard.status_text(did)

    chat.gone = ""  # unarchived: Retry sends everything that waited, in order, then goes on
    await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1", user_name="Dana"))
    await settle(app)
    keys = chat.keys(did)
    assert (await discussion(app, did)).status == Status.DONE and len(keys) == len(set(keys))
    assert keys.index(f"{did}:r1:s0:moderator") < keys.index(f"{did}:r1:s2:contrarian")


async def test_a_post_accepted_before_a_crash_is_found_not_reposted(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    chat.fail_next(1, after_post=True)  # the header is posted, then the ref is lost as if the process died
    reply = await app.service.handle(start(rounds=1))
    await settle(app)
    clock.advance(seconds=2)
    assert await sweep(app) == [reply.discussion_id]
    keys = chat.keys(reply.discussion_id)
    assert keys.count(f"{reply.discussion_id}:header") == 1 and len(keys) == len(set(keys))
    assert chat.find_calls == 1, "recovery looks the post up once instead of posting it again"
    assert (await discussion(app, reply.discussion_id)).status == Status.DONE


async def test_the_recording_chat_finds_a_post_only_in_one_page_of_recent_messages_as_slack_does(
    chat: RecordingChat,
) -> None:
    """The fake must not recall what the platform cannot: a post older than one page is not found."""
    now = datetime(2026, 3, 2, tzinfo=UTC)
    d = Discussion(id="d1", topic="Monorepo or polyrepo?", channel="C1", created_at=now, updated_at=now)
    refs = [await chat.publish(d, Post(kind="notice", key=f"d1:n{i}", text="")) for i in range(16)]
    other = d.model_copy(update={"id": "d2"})
    await chat.publish(other, Post(kind="notice", key="d2:n0", text=""))  # another thread's message takes no room
    assert await chat.find(d, "d1:n0") is None
    assert await chat.find(d, "d1:n1") == refs[1] and await chat.find(d, "d1:n15") == refs[15]
    assert await chat.find(other, "d1:n15") is None, "only the discussion's own thread is read"


class SlowsDownOnTheFirstStatement(RecordingChat):
    """The platform asks to slow down once, on the first expert's statement: the post waits out Retry-After."""

    def __init__(self) -> None:
        super().__init__("console")
        self.refused = ""

    async def publish(self, discussion: Discussion, post: Post) -> str:
        if post.kind == "turn" and ":r1:s1:" in post.key and not self.refused:  # the experts' statements' step
            self.refused = post.key
            raise RateLimited("slow down", retry_after=0.01)
        return await super().publish(discussion, post)


async def test_a_post_waiting_out_a_slow_down_is_not_overtaken_by_the_turns_recorded_behind_it(
    tmp_path: Path, llm: ScriptedLLM, clock: FakeClock
) -> None:
    """The statements of one step record one after another. On SQLite the fence of a recording said nothing was
    queued whatever was, so each statement recorded after the first one's post was told to slow down went out
    at once, ahead of it: the thread read out of order."""
    chat = SlowsDownOnTheFirstStatement()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": chat}, llm=llm, clock=clock)
    try:
        did = (await app.service.handle(start(rounds=1))).discussion_id
        await settle(app)
        assert chat.refused, "the platform slowed a statement down"
        for _ in range(5):  # its Retry-After passes, and the discussion goes on
            clock.advance(seconds=1)
            await sweep(app)
        async with app.store.tx() as tx:
            queued = [p.key for p, _ in await tx.posts(did)]  # in the order queued
        sent = [k for k in chat.keys(did) if k in queued]
        assert (await discussion(app, did)).status == Status.DONE
        assert sent == [k for k in queued if k in sent], "posts went out in another order than queued"
        assert chat.refused in sent
    finally:
        await app.close()


# The fenced outbox between two replicas: rules the lease's scenarios leave unpinned.


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
