"""Posts the platform refuses: retried with exponential backoff, the starter told privately, never-landing posts
given up on until Retry; on an injected clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Discussion, Phase, Post, Status
from core.ports import RateLimited
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
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
