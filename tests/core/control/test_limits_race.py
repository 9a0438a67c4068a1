"""Limits under concurrency, through the real service and store on both backends: starts counted and inserted
atomically, and each running turn's cost reserved in its workspace's spend while it runs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.replies import UserError
from core.models import Status
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

Make = Callable[..., Any]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))


@pytest.fixture
async def make_app(db_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[Make]:
    apps: list[App] = []

    async def make(**settings: Any) -> App:
        s = Settings(_env_file=None, database_url=db_url, **settings)  # type: ignore[call-arg]
        apps.append(await build_app(s, {"console": chat}, llm=llm, clock=clock))
        return apps[-1]

    yield make
    for app in apps:
        await app.driver.shutdown()
        await app.close()


def start(user: str = "U1", **kw: Any) -> c.StartDiscussion:
    return c.StartDiscussion(**{"topic": "Trunk-based development?", "platform": "console", "workspace": "T1",
                                "channel": "C1", "in_channel": "C1", "user_id": user, "user_name": "Dana",
                                "rounds": 1, **kw})


async def test_twelve_concurrent_starts_under_a_limit_of_two_let_exactly_two_through(
    make_app: Make, llm: ScriptedLLM
) -> None:
    app = await make_app(council_starts_per_user_per_hour=2, council_workspace_budget_usd_per_day=0)
    gate = llm.hold()  # the discussions that do start wait on the model: only the starts are raced here
    results = await asyncio.gather(*(app.service.handle(start()) for _ in range(12)), return_exceptions=True)
    started = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, UserError)]
    assert len(started) == 2, results
    assert len(refused) == 10 and all("STARTS_PER_USER_PER_HOUR = 2" in str(r) for r in refused)
    async with app.store.tx() as tx:
        assert len(await tx.discussions(limit=50)) == 2
    gate.set()
    await app.driver.idle()


async def test_ten_parallel_discussions_reserve_their_turns_within_the_daily_budget(
    make_app: Make, llm: ScriptedLLM, clock: FakeClock
) -> None:
    app = await make_app(council_workspace_budget_usd_per_day=0.05, council_turn_estimate_usd=0.01,
                         council_starts_per_user_per_hour=0)
    llm.cost_per_call = 0.01
    gate = llm.hold()
    results = await asyncio.gather(*(app.service.handle(start(user=f"U{i}")) for i in range(10)),
                                   return_exceptions=True)
    ids = [r.discussion_id for r in results if not isinstance(r, BaseException)]
    # A start that came after five turns had reserved the whole budget is refused for it, like any start then.
    assert all("daily budget" in str(r) for r in results if isinstance(r, BaseException))
    assert len(ids) >= 5
    for _ in range(500):  # every driver has reached its first step: a turn waiting on the model, or blocked
        await asyncio.sleep(0)
        async with app.store.tx() as tx:
            blocked = [(await tx.discussion(i)).status for i in ids].count(Status.BLOCKED)  # type: ignore[union-attr]
        if llm.waiting + blocked == len(ids):
            break
    async with app.store.tx() as tx:
        reserved = await tx.workspace_spend("console", "T1", datetime(2026, 3, 2, tzinfo=UTC))
        held = [t.key for i in ids for t in await tx.turns(i)]
    # Five turns of $0.01 reserve the whole $0.05 while they run; nothing has been spent yet.
    assert llm.waiting == 5 and blocked == len(ids) - 5 and len(held) == 5
    assert reserved == pytest.approx(0.05)
    gate.set()
    await app.driver.idle()
    async with app.store.tx() as tx:
        spent = await tx.workspace_spend("console", "T1", datetime(2026, 3, 2, tzinfo=UTC))
        costs = [(await tx.discussion(i)).cost_usd for i in ids]  # type: ignore[union-attr]
        held_after = [t.key for i in ids for t in await tx.turns(i) if t.status.value == "running"]
    # Settled: the spend is what the model calls cost, never more than the budget plus one turn.
    assert spent == pytest.approx(sum(costs)) and not held_after
    assert spent <= 0.05 + 0.01 + 1e-9


async def test_the_process_cap_spans_workspaces_and_names_itself_when_reached(
    make_app: Make, llm: ScriptedLLM, clock: FakeClock
) -> None:
    app = await make_app(council_workspace_budget_usd_per_day=0, council_process_daily_usd=0.05,
                         council_starts_per_user_per_hour=0, council_turn_estimate_usd=0.01)
    llm.cost_per_call = 0.01
    gate = llm.hold()
    results = await asyncio.gather(*(app.service.handle(start(user=f"U{i}", workspace=f"T{i}", channel=f"C{i}",
                                                              in_channel=f"C{i}")) for i in range(10)),
                                   return_exceptions=True)
    ids = [r.discussion_id for r in results if not isinstance(r, BaseException)]
    for _ in range(500):  # every driver has reached its first step: a turn waiting on the model, or blocked
        await asyncio.sleep(0)
        async with app.store.tx() as tx:
            blocked = [d for i in ids if (d := await tx.discussion(i)) and d.status == Status.BLOCKED]
        if llm.waiting + len(blocked) == len(ids):
            break
    # Ten workspaces, none with a cap of its own: five turns of $0.01 hold the process's whole $0.05 between them.
    assert llm.waiting == 5 and len(blocked) == len(ids) - 5
    assert all("COUNCIL_PROCESS_DAILY_USD = $0.05" in d.blocked_reason for d in blocked)
    gate.set()
    await app.driver.idle()
    async with app.store.tx() as tx:
        spent = await tx.process_spend(datetime(2026, 3, 2, tzinfo=UTC))
    assert spent <= 0.05 + 0.01 + 1e-9
    with pytest.raises(UserError, match="every workspace together"):
        await app.service.handle(start(user="U99", workspace="T99", channel="C99", in_channel="C99"))
