"""When no turn fits the budget (core/running/turns.py): what is dropped or blocked, and what the thread is told."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.deliberation import factcheck
from core.deliberation.flows.council import DEFAULT_ADVISORS, REFEREE
from core.models import Discussion, Status, TurnStatus
from core.ports import ChatPort
from core.running.config import DriverConfig
from core.running.driver import Driver
from core.running.spending import Limits, day_refusal
from core.storage.db import make_engine
from core.storage.store import Store
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM


async def spent_round(app: App, llm: ScriptedLLM, budget: bool = True) -> Discussion:
    """A discussion waiting after its first round, which spent (13 calls at $0.40) all of its $5 budget (`budget`)."""
    llm.cost_per_call = 0.4
    did = (await app.service.handle(start())).discussion_id
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.WAITING and (d.cost_usd >= d.budget_usd) == budget
    return d


async def idle(app: App) -> None:
    """The driver settles: nothing it keeps finding again keeps it busy."""
    async with asyncio.timeout(10):
        await settle(app)


async def say(app: App, did: str, text: str, user: str) -> None:
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text=text, user_id=user, user_name=user,
                                                event_id=f"ev-{user}"))
    await idle(app)


async def test_answers_waiting_between_rounds_are_dropped_once_each_when_the_budget_is_spent(
        app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    d = await spent_round(app, llm)
    asked = len(llm.prompts)
    await say(app, d.id, "What about on-call weeks?", "U2")
    await say(app, d.id, "And contractors?", "U3")
    async with app.store.tx() as tx:
        messages = await tx.human_messages(d.id)
        turns = await tx.turns(d.id)
    assert len(messages) == 2 and all(m.answered for m in messages), "each dropped answer is marked answered"
    dropped = [p for p in chat.posts(d.id) if ":budget:answers:" in p.key]
    assert [(p.kind, p.key) for p in dropped] == [("notice", f"{d.id}:budget:answers:{m.id}") for m in messages]
    assert all("No answer this time: the discussion's budget reached" in p.text for p in dropped)
    assert len(llm.prompts) == asked, "nothing is asked of the model"
    assert not [t for t in turns if t.reply_to is not None], "no answer turn is started"
    after = await discussion(app, d.id)
    assert after.status == Status.WAITING and after.cost_usd == pytest.approx(d.cost_usd)
    assert not [p for p in chat.posts(d.id) if p.kind == "error"], "waiting, the discussion is not stopped"


async def test_a_check_asked_for_with_the_budget_spent_is_skipped_and_says_so_once(
        app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    d = await spent_round(app, llm)
    asked = len(llm.prompts)
    async with app.store.tx() as tx:
        target = next(t for t in await tx.turns(d.id) if factcheck.offered(t))
    await app.service.handle(c.CheckClaims(**C1, discussion_id=d.id, turn_key=target.key, user_id="U2"))
    await idle(app)
    key = factcheck.requested_key(d.id, target.key)
    async with app.store.tx() as tx:
        check = await tx.turn(key)
    assert check is not None and check.status == TurnStatus.SKIPPED
    notes = [p for p in chat.posts(d.id) if p.key.startswith(key)]
    assert [(p.kind, p.key) for p in notes] == [("notice", f"{key}:budget")]
    assert "did not check that post: the discussion's budget reached" in notes[0].text
    assert len(llm.prompts) == asked
    after = await discussion(app, d.id)
    assert after.status == Status.WAITING, "only the check is dropped"
    assert not [p for p in chat.posts(d.id) if ":budget:answers:" in p.key or p.kind == "error"]


async def test_answers_dropped_for_the_workspace_day_give_the_days_reason(sqlite_url: str, chat: RecordingChat,
                                                                         llm: ScriptedLLM) -> None:
    settings = Settings(_env_file=None, database_url=sqlite_url,  # type: ignore[call-arg]
                        council_budget_usd=50.0, council_workspace_budget_usd_per_day=5.2)
    app = await build_app(settings, {"console": cast(ChatPort, chat)}, llm=llm)
    try:
        llm.cost_per_call = 0.4  # round 1's 13 calls spend the workspace's day, far from the discussion's $50
        d = await spent_round(app, llm, budget=False)
        await say(app, d.id, "What about on-call weeks?", "U2")
        async with app.store.tx() as tx:
            [message] = await tx.human_messages(d.id)
        [dropped] = [p for p in chat.posts(d.id) if ":budget:answers:" in p.key]
        assert dropped.key == f"{d.id}:budget:answers:{message.id}" and message.answered
        said = dropped.text.removeprefix("💸 No answer this time: ")
        assert said.startswith(day_refusal(Limits(workspace_usd_per_day=5.2), 5.2, 0.0, FakeClock().now())[:40])
        assert "the discussion's" not in said, "the day's budget is not the discussion's"
        assert (await discussion(app, d.id)).status == Status.WAITING
    finally:
        await app.close(grace_s=0)


async def test_a_discussion_blocked_for_the_day_on_two_days_says_so_each_time(sqlite_url: str) -> None:
    store, chat, llm, clock = Store(make_engine(sqlite_url)), RecordingChat("slack"), ScriptedLLM(), FakeClock()
    llm.cost_per_call = 0.10
    driver = Driver(store, llm, {"slack": cast(ChatPort, chat)}, clock,
                    DriverConfig(owner="me", send_lands_s=0.0, limits=Limits(workspace_usd_per_day=0.20)))
    now = clock.now()
    try:
        async with store.tx() as tx:
            await tx.add_discussion(Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack",
                                               workspace="T1", channel="C1", created_at=now, updated_at=now,
                                               status=Status.RUNNING, flow="council", budget_usd=50.0,
                                               created_by="U1"))
            await tx.set_personas("d1", [*DEFAULT_ADVISORS, REFEREE])
        blocked_at = []
        for _ in range(2):  # the day's budget blocks it; the next day, Retry, and the new day's budget blocks it
            async with asyncio.timeout(10):  # the driver settles: a discussion left running would keep it busy
                await driver.kick("d1")
                await driver.idle()
            async with store.tx() as tx:
                d = await tx.discussion("d1", for_update=True)
                assert d is not None and d.status == Status.BLOCKED
                blocked_at.append(clock.now().isoformat())
                d.status, d.blocked_reason = Status.RUNNING, ""  # Retry
                await tx.save_discussion(d, clock.now())
            clock.advance(days=1)
        blocked = [(p.kind, p.key) for p in chat.posts("d1") if ":blocked:" in p.key]
        assert blocked == [("error", f"d1:blocked:step:{at}") for at in blocked_at]
    finally:
        async with asyncio.timeout(10):  # a driver still busy with it would not stop either
            await driver.shutdown()
        await store.close()


async def test_a_discussion_starting_in_a_workspace_whose_day_is_spent_starts_nothing(db_url: str) -> None:
    """The day's spend is read where the step's fence could not read it (on PostgreSQL, the first step a driver
    takes for a discussion), so a new discussion sees what the others in its workspace spent today."""
    store, chat, llm, clock = Store(make_engine(db_url)), RecordingChat("slack"), ScriptedLLM(), FakeClock()
    llm.cost_per_call = 0.10

    def driver() -> Driver:
        return Driver(store, llm, {"slack": cast(ChatPort, chat)}, clock,
                      DriverConfig(owner="me", send_lands_s=0.0, limits=Limits(workspace_usd_per_day=0.20)))

    now = clock.now()
    try:
        async with store.tx() as tx:
            for did in ("d1", "d2"):
                await tx.add_discussion(Discussion(id=did, topic="Adopt trunk-based development?",
                                                   platform="slack", workspace="T1", channel="C1", created_at=now,
                                                   updated_at=now, status=Status.RUNNING, flow="council",
                                                   budget_usd=50.0, created_by="U1"))
                await tx.set_personas(did, [*DEFAULT_ADVISORS, REFEREE])
        for did in ("d1", "d2"):  # one after the other, each by a driver of its own (as after a restart)
            running = driver()
            try:
                async with asyncio.timeout(10):
                    await running.kick(did)
                    await running.idle()
            finally:
                async with asyncio.timeout(10):
                    await running.shutdown()
        async with store.tx() as tx:
            first, second = await tx.discussion("d1"), await tx.discussion("d2")
            started = await tx.turns("d2")
        assert first is not None and first.status == Status.BLOCKED and first.cost_usd == pytest.approx(0.20)
        assert second is not None and second.status == Status.BLOCKED and "workspace" in second.blocked_reason
        assert started == [] and second.cost_usd == 0.0, "nothing of the spent day is spent again"
        assert [p.key for p in chat.posts("d2") if ":blocked:" in p.key] == [
            f"d2:blocked:step:{clock.now().isoformat()}"]
    finally:
        await store.close()
