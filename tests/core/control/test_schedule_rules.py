"""Rules of scheduled rounds and digests that the end-to-end schedule tests leave unpinned, on an injected clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.service import UserError
from core.models import Phase, Post, Schedule, Status
from core.showing.moments import mark
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)  # Monday, 08:00 in Berlin
BERLIN = "Europe/Berlin"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def team() -> RecordingChat:
    """A second platform: where a schedule lives must not fall back to the console's defaults."""
    return RecordingChat("team")


@pytest.fixture
async def app(sqlite_url: str, chat: RecordingChat, team: RecordingChat, llm: ScriptedLLM,
              clock: FakeClock) -> AsyncIterator[App]:
    settings = Settings(_env_file=None, database_url=sqlite_url)  # type: ignore[call-arg]
    application = await build_app(settings, {"console": chat, "team": team}, llm=llm, clock=clock)
    yield application
    await application.close(grace_s=0)


async def schedules(app: App) -> list[Schedule]:
    async with app.store.tx() as tx:
        return await tx.schedules(enabled_only=False)


def reminders(chat: RecordingChat, discussion_id: str) -> list[Post]:
    return [p for p in chat.posts(discussion_id) if p.key.startswith(f"{discussion_id}:sched:")]


async def waiting(app: App, **kw: object) -> str:
    did = (await app.service.handle(start(**kw))).discussion_id  # type: ignore[arg-type]
    await settle(app)
    assert (await discussion(app, did)).status == Status.WAITING
    return did


async def fire_round(app: App, discussion_id: str, platform: str = "console", workspace: str = "") -> bool:
    async with app.store.tx() as tx:
        s = await tx.find_schedule("round", platform, workspace, discussion_id)
    assert s is not None
    fired = await app.service.schedules.fire(s.id)
    await settle(app)
    return fired


# scheduling rounds -----------------------------------------------------------------------------------------
async def test_rescheduling_a_round_replaces_its_schedule_in_place_keeping_when_it_last_ran(
    app: App, clock: FakeClock
) -> None:
    # On another platform and workspace than the defaults, so the row found and the row written are the same one.
    did = (await app.service.handle(c.StartDiscussion(
        **C1, topic="Should we move to trunk-based development?", platform="team", workspace="W1", channel="C1",
        user_id="U1", user_name="Dana", every="1h"))).discussion_id
    await settle(app)
    clock.advance(hours=1)
    fired_at = clock.now()
    assert await fire_round(app, did, "team", "W1")
    clock.advance(minutes=10)
    await app.service.handle(c.ScheduleRound(**C1, platform="team", workspace="W1", discussion_id=did,
                                             when="tomorrow 09:00", tz=BERLIN, user_id="U2", user_name="Lee",
                                             is_admin=True))
    await settle(app)
    [s] = await schedules(app)
    # 09:00 in Berlin is 08:00 UTC in March.
    assert (s.platform, s.workspace, s.target, s.trigger) == ("team", "W1", did, "at:2026-03-03T08:00:00+00:00")
    assert s.last_run_at == fired_at, "rescheduling forgot when the schedule last ran"
    assert s.created_by == "U2", "the schedule does not name who set it last"


async def test_a_round_schedule_without_a_time_asks_when(app: App) -> None:
    did = await waiting(app)
    with pytest.raises(UserError, match="Say when: for example"):
        await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="", user_id="U1"))


async def test_a_finished_discussion_cannot_have_rounds_scheduled(app: App) -> None:
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await settle(app)
    with pytest.raises(UserError, match="This discussion is done; start a new one instead"):
        await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="in 1 hour", user_id="U1"))


async def test_a_repeating_round_schedule_is_announced_with_a_relative_time_and_its_cadence(app: App) -> None:
    did = await waiting(app)
    reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="in 2 hours", every="1h",
                                                     tz=BERLIN, user_id="U1", user_name="Dana"))
    # Each reader's platform shows the relative marker in their own words ("in 2 hours").
    first = f"⟦t:{int((T0 + timedelta(hours=2)).timestamp())}:{BERLIN}:R⟧"
    assert reply.text == f"Dana scheduled the next round for {first}, then every hour."


# leaving a workspace ---------------------------------------------------------------------------------------
async def test_leaving_a_workspace_removes_its_schedules_and_only_those(app: App) -> None:
    for workspace in ("W1", "W2"):
        await app.service.handle(c.SetDigest(**C1, platform="team", workspace=workspace, channel="C1",
                                             cadence="daily", user_id="U1"))
    await app.service.handle(c.SetDigest(**C1, platform="console", workspace="W1", channel="C1", cadence="daily",
                                         user_id="U1"))
    await app.service.handle(c.StartDiscussion(
        **C1, topic="Should we move to trunk-based development?", platform="team", workspace="W1", channel="C1",
        user_id="U1", user_name="Dana", every="1d"))
    await settle(app)
    reply = await app.service.handle(c.ForgetWorkspace(platform="team", workspace="W1"))
    assert reply.text == "Removed 2 schedule(s)."
    assert sorted((s.platform, s.workspace) for s in await schedules(app)) == [("console", "W1"), ("team", "W2")]


# firing rounds ---------------------------------------------------------------------------------------------
async def test_a_scheduled_round_of_a_waiting_discussion_is_chosen_in_the_schedules_name(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    did = await waiting(app, every="1h", tz=BERLIN)
    clock.advance(hours=1)
    assert await fire_round(app, did)
    [reminder] = reminders(chat, did)
    following = mark(T0 + timedelta(hours=2), BERLIN, relative=True)
    assert reminder.text == ("⏰ Scheduled round 2 starts now. Reply in this thread: the council hears you in this "
                             f"round. The round after this one: {following}.")
    # Shown once, in the round's choice message it settles (no line of its own).
    assert [p.replaces for p in chat.posts(did) if "The schedule chose **" in p.text] == [f"{did}:r1:choice:0"]


async def round_in_an_hour(app: App, chat: RecordingChat, clock: FakeClock, did: str) -> Post:
    """A round scheduled for an hour from now, fired when the hour is up: the reminder it posted."""
    await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="in 1 hour", user_id="U1"))
    await settle(app)
    clock.advance(hours=1)
    assert await fire_round(app, did)
    [reminder] = reminders(chat, did)
    return reminder


async def test_a_discussion_paused_between_rounds_resumes_on_schedule_into_its_next_round(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    did = await waiting(app)
    await app.service.handle(c.Pause(**C1, discussion_id=did, user_id="U1", user_name="Dana"))
    await settle(app)
    assert (await discussion(app, did)).status == Status.PAUSED
    reminder = await round_in_an_hour(app, chat, clock, did)
    assert reminder.text.startswith("⏰ Scheduled round 2 starts now.")
    assert "The round after this one" not in reminder.text, "a one-shot schedule promised another round"
    assert "▶️ The schedule resumed the discussion." in [p.text for p in chat.posts(did)]


async def test_a_discussion_paused_mid_round_goes_on_with_that_round_on_schedule(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    started: list[str] = []
    llm.on_phase[Phase.COUNTERPOINT] = lambda: app.service.handle(
        c.Pause(**C1, discussion_id=started[0], user_id="U1"))
    started.append((await app.service.handle(start(rounds=2))).discussion_id)
    did = started[0]
    await settle(app)
    d = await discussion(app, did)
    assert (d.status, d.round) == (Status.PAUSED, 1)
    reminder = await round_in_an_hour(app, chat, clock, did)
    assert reminder.text.startswith("⏰ Round 1 goes on from where it paused now.")


# delivering digests ----------------------------------------------------------------------------------------
async def test_a_failed_digest_counts_as_unsent_and_a_delivery_sends_only_for_the_platforms_it_is_asked(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    chat.fail_next_announce(2)  # the platform is down for the firing's attempt and the first retry
    clock.advance(hours=1)
    [s] = await schedules(app)
    assert await app.service.schedules.fire(s.id)
    lease = timedelta(seconds=app.driver.config.lease_ttl + 1)
    clock.advance(lease)
    assert await app.service.schedules.deliver_digests() == 0, "a digest that failed counted as sent"
    clock.advance(lease)
    assert await app.service.schedules.deliver_digests(["team"]) == 0, "a delivery for another platform sent it"
    assert chat.announced == []
    assert await app.service.schedules.deliver_digests(["console"]) == 1
    assert len(chat.announced) == 1


async def test_a_digest_posted_by_a_sender_that_died_before_recording_it_is_found_not_posted_again(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    chat.fail_next_announce(1, after_post=True)  # the post lands; its sender dies before recording it
    clock.advance(hours=1)
    [s] = await schedules(app)
    assert await app.service.schedules.fire(s.id)
    assert len(chat.announced) == 1
    assert chat.find_calls == 0, "a first attempt searched the channel for a post it cannot have made yet"
    clock.advance(seconds=app.driver.config.lease_ttl + 1)
    assert await app.service.schedules.deliver_digests() == 1
    assert len(chat.announced) == 1, "the retry posted the digest again"
    async with app.store.tx() as tx:
        [row] = await tx.digests(s.id)
    assert row["sent"] and row["ref"] == chat.announced[0][2]


async def test_resetting_a_digest_replaces_it_in_place_keeping_when_it_last_ran(app: App, clock: FakeClock) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="team", workspace="W1", channel="C1",
                                         cadence="cron", cron="0 * * * *"))
    clock.advance(hours=1)
    fired_at = clock.now()
    [s] = await schedules(app)
    assert await app.service.schedules.fire(s.id)
    clock.advance(minutes=10)
    await app.service.handle(c.SetDigest(**C1, user_id="U2", is_admin=True, platform="team", workspace="W1",
                                         channel="C1", cadence="daily", tz=BERLIN))
    [s] = await schedules(app)
    assert (s.platform, s.workspace, s.target, s.trigger, s.tz) == ("team", "W1", "C1", "cron:0 9 * * *", BERLIN)
    assert s.last_run_at == fired_at, "the next digest would cover again what the last one did"
    assert s.created_by == "U2"


async def test_a_timer_waking_a_second_early_fires_the_slot_as_if_on_time(app: App, clock: FakeClock) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    slot = T0 + timedelta(hours=1)
    clock.set(slot - timedelta(seconds=1))
    [s] = await schedules(app)
    assert await app.service.schedules.fire(s.id)
    async with app.store.tx() as tx:
        [row] = await tx.digests(s.id)
        after = await tx.schedule(s.id)
    assert row["period_end"] == slot, "the digest's period ends before its own slot"
    assert after is not None and after.last_run_at == slot and after.next_run_at == slot + timedelta(hours=1)


async def test_a_schedule_on_a_platform_this_process_does_not_serve_is_left_to_one_that_does(
    app: App, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="elsewhere", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    clock.advance(hours=1)
    [s] = await schedules(app)
    assert not await app.service.schedules.fire(s.id)
    [after] = await schedules(app)
    assert after.next_run_at == s.next_run_at and after.last_run_at is None, "the slot was claimed here"
