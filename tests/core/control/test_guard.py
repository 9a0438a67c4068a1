"""The guard's answers, exactly as people read them: a discussion's status line, the admins' usage view, the
pace of paid answers, the asker's list, and "nothing to stop"; through the real service on an injected clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.permissions import Refused
from core.control.replies import UserError
from core.models import NextAction, Status
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
HERE = {"platform": "console", "workspace": "T1", "in_channel": "C1"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[App]:
    s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                 council_workspace_budget_usd_per_day=0.9, council_starts_per_user_per_hour=3,
                 council_answer_interval_s=60, council_default_tz="Europe/Berlin")
    application = await build_app(s, {"console": chat}, llm=llm, clock=clock)
    yield application
    await application.close()


async def waiting(app: App, topic: str = "Trunk-based development?", user: str = "U1", **kw: object) -> str:
    did = (await app.service.handle(c.StartDiscussion(topic=topic, channel=str(kw.pop("channel", "C1")),
                                                      user_id=user, user_name="Dana", **{**HERE, **kw}))).discussion_id  # type: ignore[arg-type]
    await app.driver.idle()
    return did


async def test_the_status_line(app: App, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01
    did = await waiting(app)
    line = await app.service.guard.status_text(did, c.Command(user_id="U2", **HERE))
    assert line == f"`{did}` “Trunk-based development?”: waiting, round 1, $0.13 of $5.00 spent, 1 open poll(s)"
    assert await app.service.guard.status_text(f"  {did} ") == line  # the operator, from anywhere
    with pytest.raises(UserError, match="I can't find a discussion with id `nope`"):
        await app.service.guard.status_text("nope")
    await app.service.handle(c.ScheduleRound(discussion_id=did, when="tomorrow 09:00", user_id="U1",
                                             tz="Europe/Berlin", **HERE))
    scheduled = await app.service.guard.status_text(did)
    at = int(datetime(2026, 3, 3, 8, 0, tzinfo=UTC).timestamp())  # 09:00 in Berlin
    assert scheduled == line + f"; next scheduled round ⟦t:{at}:Europe/Berlin:R⟧"  # each reader's zone
    await app.service.handle(c.Stop(discussion_id=did, user_id="U1", **HERE))
    stopped = await app.service.guard.status_text(did)
    assert stopped == f"`{did}` “Trunk-based development?”: stopped, round 1, $0.13 of $5.00 spent"


async def test_a_discussion_without_a_budget_shows_what_it_spent_alone(
    tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    for budget, shown in ((0, "$0.13 spent"), (0.5, "$0.13 of $0.50 spent")):
        app = await make(tmp_path, chat, llm, clock, council_budget_usd=budget)
        try:
            llm.cost_per_call = 0.01
            did = await waiting(app)
            assert f"round 1, {shown}, 1 open poll(s)" in await app.service.guard.status_text(did)
        finally:
            await app.close()


async def test_a_blocked_discussion_says_why_and_how_to_go_on(app: App, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 1.0  # the first call passes the $0.90 daily budget
    did = await waiting(app)
    line = await app.service.guard.status_text(did)
    assert "blocked" in line and "(this workspace reached its daily budget" in line
    assert line.endswith("; resume it to retry")


async def test_the_usage_view_for_admins(app: App, llm: ScriptedLLM, clock: FakeClock) -> None:
    llm.cost_per_call = 0.01
    cheap = await waiting(app, "Cheap one?")
    llm.cost_per_call = 0.02
    dear = await waiting(app, "Dear one?", user="U2")
    admin = c.Command(user_id="A1", is_admin=True, **HERE)
    text = await app.service.guard.usage_text(admin)
    lines = text.splitlines()
    assert lines[0] == ("*Council usage in this workspace*: $0.39 today of $0.90 (resets 00:00 Europe/Berlin); "
                        "$0.39 in the last 30 days.")
    assert lines[1] == "Each person may start 3 discussions an hour."
    assert lines[2:] == [f"• `{dear}` Dear one? — $0.26, waiting", f"• `{cheap}` Cheap one? — $0.13, waiting"]
    clock.advance(days=2)
    later = (await app.service.guard.usage_text(admin)).splitlines()[0]
    assert later.startswith("*Council usage in this workspace*: $0.00 today") and "$0.39 in the last 30 days" in later
    clock.set(T0 + timedelta(days=30, minutes=-1))  # both were last active within the last 30 days
    assert len((await app.service.guard.usage_text(admin)).splitlines()) == 4
    clock.set(T0 + timedelta(days=30, minutes=1))  # no longer
    assert (await app.service.guard.usage_text(admin)).splitlines()[0].endswith("$0.00 in the last 30 days.")
    assert len((await app.service.guard.usage_text(admin)).splitlines()) == 2
    with pytest.raises(Refused) as refused:
        await app.service.guard.usage_text(c.Command(user_id="U1", **HERE))
    assert str(refused.value) == "Only workspace admins can see this workspace's usage."


async def test_a_long_topic_is_cut_in_the_usage_view(app: App, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01
    topic = "Should we " + "really " * 12 + "move?"
    did = await waiting(app, topic)
    text = await app.service.guard.usage_text(c.Command(user_id="A1", is_admin=True, **HERE))
    assert text.splitlines()[-1] == f"• `{did}` {topic[:60]} — $0.13, waiting"


async def test_usage_without_limits_says_so(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM,
                                            clock: FakeClock) -> None:
    s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'u.db'}",  # type: ignore[call-arg]
                 council_workspace_budget_usd_per_day=0, council_starts_per_user_per_hour=0)
    app = await build_app(s, {"console": chat}, llm=llm, clock=clock)
    try:
        text = await app.service.guard.usage_text(c.Command(user_id="A1", is_admin=True, **HERE))
        assert text == "*Council usage in this workspace*: $0.00 today (no daily limit); $0.00 in the last 30 days."
    finally:
        await app.close()


async def test_paid_answers_are_paced_per_person_to_the_second(app: App, clock: FakeClock) -> None:
    did = await waiting(app)
    now = clock.now()
    async with app.store.tx() as tx:
        assert not await app.service.guard.answered_lately(tx, did, "U2", now)
    await app.service.handle(c.PostHumanMessage(discussion_id=did, text="A question?", user_id="U2", user_name="Lee",
                                                **HERE))
    await app.driver.idle()
    async with app.store.tx() as tx:
        assert await app.service.guard.answered_lately(tx, did, "U2", now + timedelta(seconds=60))
        assert not await app.service.guard.answered_lately(tx, did, "U2", now + timedelta(seconds=60, microseconds=1))
        assert not await app.service.guard.answered_lately(tx, did, "U3", now)


async def test_the_list_is_the_askers_channel_in_their_workspace(app: App, clock: FakeClock) -> None:
    here = await waiting(app, "Here?")
    await waiting(app, "Elsewhere?", channel="C2", in_channel="C2")
    await waiting(app, "Other workspace?", workspace="T2")
    async with app.store.tx() as tx:  # the same workspace and channel ids on another platform
        d = await tx.discussion(here)
        assert d is not None
        await tx.add_discussion(d.model_copy(update={"id": "discord1", "platform": "discord"}))
    listed = await app.service.guard.discussions(c.Command(user_id="U1", **HERE))
    assert [d.id for d in listed] == [here]
    clock.advance(minutes=5)
    again = await waiting(app, "Here again?", user="U2")
    assert [d.id for d in await app.service.guard.discussions(c.Command(user_id="U1", **HERE), limit=1)] == [again]
    assert len(await app.service.guard.discussions()) == 5  # the operator sees every one
    assert len(await app.service.guard.discussions(limit=2)) == 2


async def test_nothing_to_stop_is_said_before_asking_for_good(app: App) -> None:
    did = await waiting(app)
    stop = c.Stop(discussion_id=did, user_id="U1", **HERE)
    assert (await app.service.guard.may_stop(stop)).id == did
    await app.service.handle(stop)
    with pytest.raises(UserError, match=r"^This discussion is already stopped\.$"):
        await app.service.guard.may_stop(stop)
    with pytest.raises(Refused):
        await app.service.guard.may_stop(c.Stop(discussion_id=did, user_id="U2", **HERE))
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
    assert d is not None and d.status == Status.STOPPED


async def make(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, **settings: object) -> App:
    s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'g.db'}", **settings)  # type: ignore[arg-type]
    return await build_app(s, {"console": chat}, llm=llm, clock=clock)


async def test_a_limit_of_one_start_an_hour_is_a_limit(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM,
                                                       clock: FakeClock) -> None:
    app = await make(tmp_path, chat, llm, clock, council_starts_per_user_per_hour=1)
    try:
        await waiting(app)
        with pytest.raises(UserError) as refused:
            await waiting(app)
        usage = await app.service.guard.usage_text(c.Command(user_id="A1", is_admin=True, **HERE))
        assert "Each person may start 1 discussion an hour." in usage  # singular where one
        assert str(refused.value) == ("You have started 1 discussion in the last hour, the limit per person "
                                      "(COUNCIL_STARTS_PER_USER_PER_HOUR = 1); please try again later, or continue "
                                      "it.")
        await waiting(app, user="")  # a start nobody can be counted for (the operator's console) is not limited
    finally:
        await app.close()


@pytest.mark.parametrize("interval,paced", [(0, False), (1, True)])
async def test_pacing_of_zero_seconds_is_none_and_of_one_second_is_one_second(
    tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, interval: int, paced: bool
) -> None:
    app = await make(tmp_path, chat, llm, clock, council_answer_interval_s=interval)
    try:
        did = await waiting(app)
        await app.service.handle(c.PostHumanMessage(discussion_id=did, text="A question?", user_id="U2",
                                                    user_name="Lee", **HERE))
        await app.driver.idle()
        async with app.store.tx() as tx:
            assert await app.service.guard.answered_lately(tx, did, "U2", clock.now()) is paced
            assert not await app.service.guard.answered_lately(tx, did, "U2", clock.now() + timedelta(seconds=2))
    finally:
        await app.close()


async def test_suggestions_only_while_the_next_step_is_open(app: App) -> None:
    did = await waiting(app)
    deep = c.ChooseNextAction(discussion_id=did, action=NextAction.DEEP_DIVE, user_id="U2", **HERE)  # type: ignore[arg-type]
    assert await app.service.guard.suggestions(deep)
    await app.service.handle(c.Pause(discussion_id=did, user_id="U1", **HERE))
    with pytest.raises(UserError) as chosen:
        await app.service.guard.suggestions(deep)
    assert str(chosen.value) == "The next step was already chosen."


async def test_a_private_channels_topic_is_read_only_from_inside_it_even_by_an_admin(
        app: App, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01
    did = await waiting(app, "Layoffs in Q3?", channel="C9", in_channel="C9", private=True)
    outside = c.Command(user_id="A1", is_admin=True, **HERE)  # an admin, asking from C1
    inside = c.Command(user_id="A1", is_admin=True, **{**HERE, "in_channel": "C9"})
    hidden = "• a discussion in a private channel you are not in — $0.13, waiting"
    assert (await app.service.guard.usage_text(outside)).splitlines()[-1] == hidden
    shown = f"• `{did}` Layoffs in Q3? — $0.13, waiting"
    assert (await app.service.guard.usage_text(inside)).splitlines()[-1] == shown
    assert (await app.service.guard.usage_text(outside, member_of=["C9"])).splitlines()[-1] == shown
    with pytest.raises(UserError, match=f"I can't find a discussion with id `{did}`"):
        await app.service.guard.status_text(did, outside)
    assert "“Layoffs in Q3?”" in await app.service.guard.status_text(did, inside)
    assert "“Layoffs in Q3?”" in await app.service.guard.status_text(did, outside, member_of=["C9"])


async def test_a_person_past_the_hours_starts_is_told_to_continue_one_of_them(app: App) -> None:
    for n in range(3):
        await waiting(app, f"Topic {n}?")
    with pytest.raises(UserError) as refused:
        await waiting(app, "One more?")
    assert str(refused.value) == ("You have started 3 discussions in the last hour, the limit per person "
                                  "(COUNCIL_STARTS_PER_USER_PER_HOUR = 3); please try again later, or continue "
                                  "one of them.")


async def test_a_poll_nobody_here_can_see_is_answered_as_one_that_does_not_exist(app: App) -> None:
    did = await waiting(app)
    async with app.store.tx() as tx:
        [poll] = await tx.polls(did)
        for poll_id, asker in ((poll.id + 1000, c.Command(user_id="U1", **HERE)),
                               (poll.id, c.Command(user_id="U1", **{**HERE, "in_channel": "C2"}))):
            with pytest.raises(UserError) as refused:
                await app.service.guard.poll(tx, poll_id, asker)
            assert str(refused.value) == "I can't find that poll: its number is not one of a discussion you can see."
        found, d = await app.service.guard.poll(tx, poll.id, c.Command(user_id="U1", **HERE))
        assert (found.id, d.id) == (poll.id, poll.discussion_id)
