"""A digest's day-budget hold and delivery lease; what firing a one-shot or a removed schedule posts."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import pytest

from bot.wiring import App
from core.control import commands as c
from core.models import Phase, Schedule
from tests.core.conftest import C1, settle, start
from tests.core.control import test_schedule_mutants as mutants
from tests.core.control.test_schedule_mutants import (
    LOGGER,
    build,
    digest_prompts,
    set_hourly,
    spend_today,
    steps_until,
)
from tests.core.control.test_schedule_rules import (  # noqa: F401 (app, clock and team: fixtures)
    app,
    clock,
    reminders,
    round_in_an_hour,
    schedules,
    team,
    waiting,
)
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

NO_DAY_BUDGET = {"council_workspace_budget_usd_per_day": 0.0, "council_process_daily_usd": 0.0}
ONE_CALL_A_DAY = [{"council_workspace_budget_usd_per_day": 1.0, "council_process_daily_usd": 0.0},
                  {"council_workspace_budget_usd_per_day": 0.0, "council_process_daily_usd": 1.0}]


def malformed(_answer: object) -> object:
    """The model's answer, unreadable: writing the digest fails after its call was held."""
    raise ValueError("the digest summary came back malformed")


@asynccontextmanager
async def built(url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock,  # noqa: F811
                **settings: object) -> AsyncIterator[App]:
    """An app on `url` with these settings, closed when the block ends."""
    application = await build(url, chat, llm, clock, **settings)
    try:
        yield application
    finally:
        await application.close(grace_s=0)


async def digest_of_one_discussion(app: App) -> Schedule:  # noqa: F811
    """An hourly digest and the one-round discussion it covers, settled: the digest's schedule."""
    s = await set_hourly(app)
    await app.service.handle(start(topic="Which CI provider?", rounds=1))
    await settle(app)
    return s


# a digest's model call in the day's spend ------------------------------------------------------------------
async def test_a_digest_with_no_day_budget_at_all_is_written_by_the_model_and_charged_what_its_call_cost(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock  # noqa: F811
) -> None:
    """Neither the workspace nor the process has a budget for the day: nothing is held, the call is still charged
    (test_schedule_mutants' charging test run with both budgets 0)."""
    await mutants.test_a_digest_written_by_the_model_is_charged_what_its_call_cost_and_no_more(
        sqlite_url, chat, llm, clock, NO_DAY_BUDGET)


@pytest.mark.parametrize(("budget", "whose"), [
    ({"council_workspace_budget_usd_per_day": 5.0}, "this workspace reached its daily budget"),
    ({"council_workspace_budget_usd_per_day": 0.0, "council_process_daily_usd": 5.0},
     "this Council reached the daily budget its operator set for every workspace together"),
])
async def test_a_digest_on_a_spent_day_logs_which_budget_ran_out(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock,  # noqa: F811
    caplog: pytest.LogCaptureFixture, budget: dict[str, float], whose: str
) -> None:
    await mutants.test_a_digest_on_a_spent_day_goes_out_without_the_model_and_logs_why(
        sqlite_url, chat, llm, clock, budget, caplog)
    [why] = [r for r in caplog.records if r.name == LOGGER and "without the model" in r.getMessage()]
    assert isinstance(why.args, tuple)
    assert why.getMessage().startswith(f"digest {why.args[0]} written without the model: {whose} ")


@pytest.mark.parametrize("budget", ONE_CALL_A_DAY)
async def test_two_digests_written_at_once_see_each_others_hold_so_only_one_asks_the_model_when_one_call_fits(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, budget: dict[str, float]  # noqa: F811
) -> None:
    async with built(sqlite_url, chat, llm, clock, **budget) as app:  # noqa: F811
        for channel in ("C1", "C2"):
            await app.service.handle(c.SetDigest(in_channel=channel, user_id="U1", platform="console",
                                                 channel=channel, cadence="cron", cron="0 * * * *"))
            await app.service.handle(c.StartDiscussion(in_channel=channel, topic=f"Which CI provider for {channel}?",
                                                       rounds=1, platform="console", channel=channel, user_id="U1"))
        await settle(app)
        first, second = await schedules(app)
        asked = len(llm.prompts)
        llm.cost_per_call = 0.6  # the day has room for one digest's call, not for two
        clock.advance(hours=1)
        gate = llm.hold()
        writing = asyncio.create_task(app.service.schedules.fire(first.id))
        await steps_until(lambda: llm.waiting == 1, "the first digest inside its model call")
        assert await app.service.schedules.fire(second.id)  # written meanwhile, its neighbour's call on hold
        gate.set()
        assert await writing
        assert await digest_prompts(llm, asked) == 1, "both digests asked the model past the day's budget"
        assert sorted(channel for _, channel, _, _ in chat.announced) == ["C1", "C2"]
        assert await spend_today(app, first) == pytest.approx(0.6)


async def test_a_digest_whose_writing_breaks_gives_its_hold_back_and_is_written_anew_on_the_retry(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock,  # noqa: F811
    caplog: pytest.LogCaptureFixture
) -> None:
    async with built(sqlite_url, chat, llm, clock, council_workspace_budget_usd_per_day=5.0) as app:  # noqa: F811
        s = await digest_of_one_discussion(app)
        before, asked = await spend_today(app, s), len(llm.prompts)
        llm.cost_per_call = 0.5
        llm.rewrite[Phase.DIGEST] = malformed
        clock.advance(hours=1)
        assert await app.service.schedules.fire(s.id)
        assert chat.announced == []
        assert await spend_today(app, s) == pytest.approx(before), "the broken call's hold was kept"
        assert any(r.name == LOGGER and r.levelno == logging.ERROR for r in caplog.records)
        del llm.rewrite[Phase.DIGEST]
        clock.advance(seconds=app.driver.config.lease_ttl + 1)
        assert await app.service.schedules.deliver_digests() == 1
        assert await digest_prompts(llm, asked) == 2, "the retry sent words nobody kept"
        assert await spend_today(app, s) == pytest.approx(before + 0.5)


# a digest's delivery and chart ---------------------------------------------------------------------------
async def test_a_delivery_that_left_the_digest_to_the_one_that_claimed_it_since_counts_it_as_not_sent_by_itself(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock  # noqa: F811
) -> None:
    s = await digest_of_one_discussion(app)
    llm.rewrite[Phase.DIGEST] = malformed  # the firing's own delivery fails before any words are kept
    clock.advance(hours=1)
    assert await app.service.schedules.fire(s.id)
    del llm.rewrite[Phase.DIGEST]
    lease = timedelta(seconds=app.driver.config.lease_ttl + 1)
    clock.advance(lease)
    gate = llm.hold()
    first = asyncio.create_task(app.service.schedules.deliver_digests())
    await steps_until(lambda: llm.waiting == 1, "the first delivery inside its model call")
    clock.advance(lease)  # its lease ran out meanwhile: another delivery claims the digest and writes it too
    second = asyncio.create_task(app.service.schedules.deliver_digests())
    await steps_until(lambda: llm.waiting == 2, "the second delivery inside its model call")
    gate.set()
    assert await asyncio.gather(first, second) == [0, 1]
    assert len(chat.announced) == 1


# what a firing posts ---------------------------------------------------------------------------------------
async def test_a_one_shot_round_resuming_a_paused_discussion_posts_its_reminder_word_for_word(
    app: App, chat: RecordingChat, clock: FakeClock  # noqa: F811
) -> None:
    did = await waiting(app)
    await app.service.handle(c.Pause(**C1, discussion_id=did, user_id="U1", user_name="Dana"))
    await settle(app)
    reminder = await round_in_an_hour(app, chat, clock, did)
    # a one-shot schedule promises no round after this one
    assert reminder.text == ("⏰ Scheduled round 2 starts now. Reply in this thread: the council hears you in this "
                             "round.")


async def test_a_timer_waking_for_a_schedule_removed_meanwhile_fires_nothing(
    app: App, chat: RecordingChat, clock: FakeClock  # noqa: F811
) -> None:
    s = await set_hourly(app)
    await app.service.handle(c.ForgetWorkspace(platform="console", workspace=""))  # the app left the workspace
    clock.advance(hours=1)
    assert not await app.service.schedules.fire(s.id)
    assert chat.announced == []
