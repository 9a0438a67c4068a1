"""Spending limits on an injected clock: starts per person per hour, the workspace's daily budget, and a parallel
step that reserves its cost so no budget is overshot by more than one turn."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.replies import UserError
from core.models import Phase, Status
from core.running.spending import turns_that_fit
from tests.core.conftest import discussion, settle
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

Make = Callable[..., Any]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 3, 2, 22, 0, tzinfo=UTC))


@pytest.fixture
async def make_app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM,
                   clock: FakeClock) -> AsyncIterator[Make]:
    apps: list[App] = []

    async def make(**settings: Any) -> App:
        s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", **settings)  # type: ignore[call-arg]
        apps.append(await build_app(s, {"console": chat}, llm=llm, clock=clock))
        return apps[-1]

    yield make
    for app in apps:
        await app.close()


def start(user: str = "U1", workspace: str = "T1", **kw: Any) -> c.StartDiscussion:
    return c.StartDiscussion(**{"topic": "Trunk-based development?", "platform": "console", "workspace": workspace,
                                "channel": "C1", "in_channel": "C1", "user_id": user, "user_name": "Dana",
                                "rounds": 1, **kw})


async def test_a_third_start_in_an_hour_is_refused_with_the_reason(make_app: Make, clock: FakeClock) -> None:
    app = await make_app(council_starts_per_user_per_hour=2)
    await app.service.handle(start())
    clock.advance(minutes=20)
    await app.service.handle(start())
    clock.advance(minutes=20)
    with pytest.raises(UserError, match=r"started 2 discussions in the last hour.*STARTS_PER_USER_PER_HOUR = 2"):
        await app.service.handle(start())
    await app.service.handle(start(user="U2"))  # someone else may
    clock.advance(minutes=21)  # the first start is now more than an hour old
    await app.service.handle(start())
    await settle(app)


async def test_the_daily_workspace_budget_stops_running_discussions_and_refuses_starts(
    make_app: Make, llm: ScriptedLLM, chat: RecordingChat, clock: FakeClock
) -> None:
    app = await make_app(council_workspace_budget_usd_per_day=0.05)
    llm.cost_per_call = 0.01
    did = (await app.service.handle(start())).discussion_id
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.BLOCKED and "COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY = $0.05" in d.blocked_reason
    assert 0.05 <= d.cost_usd <= 0.05 + 0.01 + 1e-9, "overshoots by at most one turn"
    said = chat.posts(did)[-1]
    assert "daily budget" in said.text and "resets at Tue 3 Mar 00:00 (UTC)" in said.text
    with pytest.raises(UserError, match=r"daily budget \(COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY = \$0.05.*resets at"):
        await app.service.handle(start(user="U2"))
    await app.service.handle(start(workspace="T2"))  # another workspace has its own budget
    await settle(app)

    clock.advance(hours=2)  # a new budget day: Retry continues the blocked discussion
    await app.service.handle(c.RetryTurns(discussion_id=did, user_id="U1", platform="console", workspace="T1",
                                          in_channel="C1"))
    await settle(app)
    assert (await discussion(app, did)).cost_usd > d.cost_usd


async def test_a_parallel_step_reserves_its_cost_before_it_runs(make_app: Make, llm: ScriptedLLM) -> None:
    app = await make_app(council_budget_usd=0.025, council_workspace_budget_usd_per_day=0)
    llm.cost_per_call = 0.01
    did = (await app.service.handle(start(experts=4))).discussion_id
    await settle(app)
    d = await discussion(app, did)
    statements = [p for p in llm.prompts if p.purpose.phase == Phase.STATEMENT]
    # Roster and opening spent $0.02; $0.005 is left: one statement, not four, then the stop.
    assert d.status == Status.STOPPED and len(statements) == 1
    assert d.cost_usd == pytest.approx(0.03)


def test_turns_that_fit() -> None:
    assert turns_that_fit(4, 1.0, 0.0) == 4  # nothing known yet: no reservation
    assert turns_that_fit(4, 0.25, 0.1) == 2
    assert turns_that_fit(4, 0.05, 0.1) == 1  # at least one while anything remains
    assert turns_that_fit(4, 0.0, 0.1) == 0


async def test_paid_answers_between_rounds_are_paced_per_person(
    make_app: Make, llm: ScriptedLLM, clock: FakeClock
) -> None:
    app = await make_app(council_answer_interval_s=180)
    did = (await app.service.handle(start(rounds=None))).discussion_id
    await settle(app)

    async def say(text: str, user: str = "U2") -> str:
        reply = await app.service.handle(c.PostHumanMessage(discussion_id=did, text=text, user_id=user,
                                                            user_name=user, platform="console", workspace="T1",
                                                            in_channel="C1"))
        await settle(app)
        return reply.text

    def answers() -> int:
        return sum(p.purpose.phase == Phase.ANSWER for p in llm.prompts)

    await say("What about on-call weeks?")
    assert answers() == 1
    clock.advance(minutes=1)
    assert "heard in the next answer or the next round" in await say("And support rotations?")
    assert answers() == 1
    await say("Does this hold for contractors?", user="U3")  # another person has their own pace
    assert answers() == 2
    clock.advance(minutes=2, seconds=1)
    await say("One more: holidays?")
    assert answers() == 3
    last = next(p for p in reversed(llm.prompts) if p.purpose.phase == Phase.ANSWER)
    assert "And support rotations?" in "".join(b.text for b in last.shared), "the paced message is folded in"
