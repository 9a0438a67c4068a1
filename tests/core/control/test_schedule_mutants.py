"""Rules of schedules.py each pinned by one command or one firing on an injected clock: the words a schedule's
replies and notices say, what its log tells an operator, and how a digest's model call is held in the day's spend."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.replies import UserError
from core.control.schedules import round_trigger
from core.models import Phase, Schedule, Status
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)  # Monday, 08:00 in Berlin
BERLIN = "Europe/Berlin"
LOGGER = "core.control.schedules"


def relative(moment: datetime, tz: str) -> str:
    """How a time is written for each reader's platform to show in their own words ("in 2 hours")."""
    return f"⟦t:{int(moment.timestamp())}:{tz}:R⟧"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


async def build(url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, **settings: object) -> App:
    return await build_app(Settings(_env_file=None, database_url=url, **settings),  # type: ignore[call-arg, arg-type]
                           {"console": chat}, llm=llm, clock=clock)


@pytest.fixture
async def app(sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[App]:
    application = await build(sqlite_url, chat, llm, clock)
    yield application
    await application.close(grace_s=0)


async def only_schedule(app: App) -> Schedule:
    async with app.store.tx() as tx:
        [s] = await tx.schedules(enabled_only=False)
    return s


def logged(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


async def set_hourly(app: App) -> Schedule:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    return await only_schedule(app)


# when a round is due -------------------------------------------------------------------------------------
def test_a_cadence_alone_first_fires_one_cadence_from_now() -> None:
    assert round_trigger("", "2h", BERLIN, T0) == ("every:7200", T0 + timedelta(hours=2))


def test_a_time_and_a_cadence_first_fire_at_the_time_then_repeat() -> None:
    assert round_trigger("in 1 hour", "1d", BERLIN, T0) == ("every:86400", T0 + timedelta(hours=1))


def test_a_time_alone_fires_once_at_that_time() -> None:
    at = T0 + timedelta(hours=3)
    assert round_trigger("in 3 hours", "  ", BERLIN, T0) == (f"at:{at.isoformat()}", at)


def test_a_time_is_read_in_the_zone_given() -> None:
    # 09:00 tomorrow in Berlin is 08:00 UTC in March; in UTC it is 09:00.
    assert round_trigger("tomorrow 09:00", "", BERLIN, T0)[1] == datetime(2026, 3, 3, 8, 0, tzinfo=UTC)
    assert round_trigger("tomorrow 09:00", "", "UTC", T0)[1] == datetime(2026, 3, 3, 9, 0, tzinfo=UTC)


def test_no_time_and_no_cadence_says_how_to_say_when() -> None:
    with pytest.raises(UserError) as caught:
        round_trigger(" ", "", "UTC", T0)
    assert str(caught.value) == "Say when: for example `tomorrow 09:00`, `in 1 hour` or `--every 1d`."


@pytest.mark.parametrize(("when", "every", "tz"), [("in 1 hour", "", "Moon/Base"), ("", "fortnightly-ish", "UTC"),
                                                   ("someday maybe", "", "UTC")])
def test_an_unclear_time_zone_cadence_or_time_is_refused_in_words(when: str, every: str, tz: str) -> None:
    with pytest.raises(UserError) as caught:
        round_trigger(when, every, tz, T0)
    assert str(caught.value).strip(), "refused without saying why"


# what starting with a schedule says ---------------------------------------------------------------------
async def test_a_start_with_a_cadence_says_when_the_next_round_is_and_how_often(app: App) -> None:
    reply = await app.service.handle(start(every="1h", tz=BERLIN))
    await settle(app)
    assert reply.text.endswith(f"). Next round: {relative(T0 + timedelta(hours=1), BERLIN)}, then every hour.")


async def test_a_start_with_one_time_says_when_the_next_round_is_and_nothing_after(app: App) -> None:
    reply = await app.service.handle(start(next_at="in 2 hours", tz=BERLIN))
    await settle(app)
    assert reply.text.endswith(f"). Next round: {relative(T0 + timedelta(hours=2), BERLIN)}.")


async def test_a_start_without_a_schedule_says_nothing_of_rounds_and_sets_none(app: App) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    assert reply.text.endswith(f"(id `{reply.discussion_id}`).")
    async with app.store.tx() as tx:
        assert await tx.schedules(enabled_only=False) == []


# what scheduling and cancelling rounds say ---------------------------------------------------------------
async def waiting(app: App, **kw: object) -> str:
    did = (await app.service.handle(start(**kw))).discussion_id
    await settle(app)
    assert did is not None and (await discussion(app, did)).status == Status.WAITING
    return did


async def test_rounds_scheduled_and_cancelled_by_someone_unnamed_say_someone(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    did = await waiting(app)
    reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="in 2 hours", tz=BERLIN,
                                                     user_id="U1"))
    assert reply.text == f"Someone scheduled the next round for {relative(T0 + timedelta(hours=2), BERLIN)}."
    clock.advance(minutes=1)
    reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="Never", user_id="U1"))
    assert reply.text == "Someone cancelled the scheduled rounds."
    await settle(app)
    notices = [p.text for p in chat.posts(did) if p.key.startswith(f"{did}:scheduled:")]
    assert notices[-1] == "🗓️ Someone cancelled the scheduled rounds."
    assert not (await only_schedule(app)).enabled


async def test_rounds_cancelled_by_a_named_person_say_their_name(app: App) -> None:
    did = await waiting(app, every="1h")
    for word in ("stop", "cancel", "none"):
        reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when=f" {word} ", user_id="U1",
                                                         user_name="Dana"))
        assert reply.text == ("Dana cancelled the scheduled rounds." if word == "stop"
                              else "This discussion has no scheduled rounds."), word


# leaving a workspace -------------------------------------------------------------------------------------
async def test_leaving_a_workspace_logs_what_it_removed(app: App, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    await app.service.handle(c.SetDigest(**C1, platform="team", workspace="W1", channel="C1", cadence="daily",
                                         user_id="U1"))
    await app.service.handle(c.ForgetWorkspace(platform="team", workspace="W1"))
    assert "left team workspace W1: 1 schedule(s) removed" in logged(caplog)


# digests: who may change one, and what setting one says ----------------------------------------------------
async def test_a_digest_set_by_one_person_is_not_replaced_by_another(app: App) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="daily"))
    with pytest.raises(Exception, match="Only the person who set this digest"):
        await app.service.handle(c.SetDigest(**C1, user_id="U2", platform="console", channel="C1",
                                             cadence="weekly"))
    assert (await only_schedule(app)).trigger == "cron:0 9 * * *"


async def test_a_weekly_digest_says_mondays_at_nine_and_when_the_first_one_is(app: App) -> None:
    reply = await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1",
                                                 cadence="weekly", tz=BERLIN))
    monday = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # 09:00 in Berlin, an hour after T0 on that Monday
    assert reply.text == f"Digest scheduled: weekly, Mondays at 09:00; the first one {relative(monday, BERLIN)}."
    assert (await only_schedule(app)).trigger == "cron:0 9 * * 1"


async def test_a_daily_digest_says_nine_oclock_and_when_the_first_one_is(app: App) -> None:
    reply = await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1",
                                                 cadence="daily", tz=BERLIN))
    nine = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
    assert reply.text == f"Digest scheduled: daily at 09:00; the first one {relative(nine, BERLIN)}."


async def test_a_cron_digest_quotes_its_cron(app: App) -> None:
    reply = await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1",
                                                 cadence="cron", cron="30 * * * *"))
    half_past = T0 + timedelta(minutes=30)
    assert reply.text == f"Digest scheduled: cron `30 * * * *`; the first one {relative(half_past, 'UTC')}."


# firing --------------------------------------------------------------------------------------------------
async def test_a_firing_logs_the_schedule_its_kind_target_and_slot(
    app: App, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    s = await set_hourly(app)
    slot = T0 + timedelta(hours=1)
    clock.set(slot)
    assert await app.service.schedules.fire(s.id)
    assert f"schedule {s.id} (digest C1) fired for slot {slot.isoformat()}" in logged(caplog)


async def test_a_disabled_schedule_does_not_fire_even_when_its_slot_is_due(app: App, clock: FakeClock) -> None:
    s = await set_hourly(app)
    async with app.store.tx() as tx:  # turned off by hand, its next slot left in place
        await tx.upsert_schedule(s.model_copy(update={"enabled": False}), clock.now())
    clock.advance(hours=1)
    assert not await app.service.schedules.fire(s.id)
    async with app.store.tx() as tx:
        assert await tx.digests(s.id) == []


async def test_a_round_schedule_of_a_finished_discussion_ends_and_logs_why(
    app: App, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    did = (await app.service.handle(start(rounds=1, every="1h"))).discussion_id
    await settle(app)
    s = await only_schedule(app)
    clock.advance(hours=1)
    assert await app.service.schedules.fire(s.id)
    assert f"round schedule {s.id} ends: discussion {did} is done" in logged(caplog)


async def test_a_round_schedule_of_a_discussion_not_between_rounds_logs_the_skip(
    app: App, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    did = (await app.service.handle(start(confirm=True, every="1h"))).discussion_id
    await settle(app)
    s = await only_schedule(app)
    clock.advance(hours=1)
    assert await app.service.schedules.fire(s.id)
    assert f"scheduled round for {did} skipped: the discussion is awaiting_confirmation" in logged(caplog)


# delivering digests --------------------------------------------------------------------------------------
async def test_a_digest_that_could_not_be_sent_logs_which_and_why(
    app: App, chat: RecordingChat, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    s = await set_hourly(app)
    chat.fail_next_announce(1)
    clock.advance(hours=1)
    assert await app.service.schedules.fire(s.id)
    async with app.store.tx() as tx:
        [row] = await tx.digests(s.id)
    [failed] = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.ERROR]
    assert failed.getMessage() == f"digest {row['id']} could not be sent; it is retried after its lease"
    assert failed.exc_info is not None, "the log does not say what failed"


async def test_a_sent_digest_is_recorded_as_sent_when_it_was(app: App, chat: RecordingChat, clock: FakeClock) -> None:
    s = await set_hourly(app)
    clock.advance(hours=1)
    assert await app.service.schedules.fire(s.id)
    async with app.store.tx() as tx:
        [row] = await tx.digests(s.id)
    assert row["sent"] and row["ref"] == chat.announced[0][2]
    assert row["sent_at"] == clock.now()


# a digest's model call in the day's spend ------------------------------------------------------------------
async def spend_today(app: App, s: Schedule) -> float:
    async with app.store.tx() as tx:
        return await tx.workspace_spend(s.platform, s.workspace, datetime(2026, 3, 2, tzinfo=UTC))


async def digest_prompts(llm: ScriptedLLM, since: int) -> int:
    return len([p for p in llm.prompts[since:] if p.purpose.phase == Phase.DIGEST])


@pytest.mark.parametrize("budget", [{"council_workspace_budget_usd_per_day": 5.0},
                                    {"council_workspace_budget_usd_per_day": 0.0, "council_process_daily_usd": 5.0},
                                    {"council_workspace_budget_usd_per_day": 0.0}])
async def test_a_digest_written_by_the_model_is_charged_what_its_call_cost_and_no_more(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, budget: dict[str, float]
) -> None:
    app = await build(sqlite_url, chat, llm, clock, **budget)
    try:
        s = await set_hourly(app)
        await app.service.handle(start(topic="Which CI provider?", rounds=1))
        await settle(app)
        before, asked = await spend_today(app, s), len(llm.prompts)
        llm.cost_per_call = 0.5
        clock.advance(hours=1)
        assert await app.service.schedules.fire(s.id)
        assert await digest_prompts(llm, asked) == 1 and len(chat.announced) == 1
        assert await spend_today(app, s) == pytest.approx(before + 0.5), "the hold stayed, or the call went uncharged"
    finally:
        await app.close(grace_s=0)


@pytest.mark.parametrize("budget", [{"council_workspace_budget_usd_per_day": 5.0},
                                    {"council_workspace_budget_usd_per_day": 0.0, "council_process_daily_usd": 5.0}])
async def test_a_digest_on_a_spent_day_goes_out_without_the_model_and_logs_why(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, budget: dict[str, float],
    caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    app = await build(sqlite_url, chat, llm, clock, **budget)
    try:
        s = await set_hourly(app)
        llm.cost_per_call = 0.1
        await app.service.handle(start(topic="Which CI provider?", rounds=1))
        await settle(app)
        before, asked = await spend_today(app, s), len(llm.prompts)
        llm.cost_per_call = 4.5  # room is left in the day, but not for one more call
        assert before < 5.0 < before + 4.5
        clock.advance(hours=1)
        assert await app.service.schedules.fire(s.id)
        assert await digest_prompts(llm, asked) == 0, "the model was asked past the day's budget"
        assert len(chat.announced) == 1, "the digest did not go out"
        assert await spend_today(app, s) == pytest.approx(before), "a hold was left for a call never made"
        [why] = [r for r in caplog.records if r.name == LOGGER and "without the model" in r.getMessage()]
        assert why.getMessage().startswith(f"digest {s.id} written without the model: ")
        assert isinstance(why.args, tuple) and why.args[0] == s.id and str(why.args[1]).strip()
    finally:
        await app.close(grace_s=0)


async def test_a_digest_whose_call_fails_gives_its_hold_back(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    app = await build(sqlite_url, chat, llm, clock, council_workspace_budget_usd_per_day=5.0)
    try:
        s = await set_hourly(app)
        await app.service.handle(start(topic="Which CI provider?", rounds=1))
        await settle(app)
        before = await spend_today(app, s)
        llm.cost_per_call = 0.5
        llm.fail("digest", Phase.DIGEST, cost_usd=0.0)
        clock.advance(hours=1)
        assert await app.service.schedules.fire(s.id)
        assert len(chat.announced) == 1  # from the stored syntheses
        assert await spend_today(app, s) == pytest.approx(before), "the failed call's hold was kept"
    finally:
        await app.close(grace_s=0)


async def test_a_digest_retried_after_a_failed_send_sends_the_words_written_the_first_time(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    s = await set_hourly(app)
    await app.service.handle(start(topic="Which CI provider?", rounds=1))
    await settle(app)
    asked = len(llm.prompts)
    chat.fail_next_announce(1)
    clock.advance(hours=1)
    assert await app.service.schedules.fire(s.id)
    assert chat.announced == [] and await digest_prompts(llm, asked) == 1
    clock.advance(seconds=app.driver.config.lease_ttl + 1)
    assert await app.service.schedules.deliver_digests() == 1
    assert await digest_prompts(llm, asked) == 1, "the retry asked the model to write the digest again"
    async with app.store.tx() as tx:
        [row] = await tx.digests(s.id)
    assert chat.announced[0][3].text == row["post"]["text"]


async def test_a_digest_links_each_discussions_page_under_its_current_key(
    sqlite_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    app = await build(sqlite_url, chat, llm, clock, council_public_url="https://council.invalid",
                      council_web_secret="web-secret-for-tests-at-least-32-bytes")
    try:
        s = await set_hourly(app)
        did = await waiting(app)
        await app.service.handle(c.RevokeLinks(**C1, discussion_id=did, user_id="U1"))  # its key is now 1
        await settle(app)
        clock.advance(hours=1)
        assert await app.service.schedules.fire(s.id)
        [(_, _, _, post)] = chat.announced
        # covered, and waiting on people: each time with the same link
        [link] = {part.split(")", 1)[0] for part in post.text.split("[page](")[1:]}
        address, _, query = link.partition("?")
        fields = dict(pair.split("=", 1) for pair in query.split("&"))
        assert address == f"https://council.invalid/d/{did}" and fields.get("v") == "1"
        pages = app.driver.config.pages
        assert int(fields["exp"]) == int((clock.now() + pages.ttl).timestamp())
        assert pages.valid(did, fields["exp"], fields["sig"], clock.now(), version=1)
    finally:
        await app.close(grace_s=0)


async def steps_until(condition: Callable[[], bool], what: str, steps: int = 10_000) -> None:
    """Let the loop run other tasks until `condition` holds, by steps, not by time."""
    for _ in range(steps):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"never: {what}")


async def test_a_sender_whose_lease_lapsed_while_it_wrote_logs_that_it_left_the_digest_to_the_other(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    s = await set_hourly(app)
    await app.service.handle(start(topic="Which CI provider?", rounds=1))
    await settle(app)
    clock.advance(hours=1)
    gate = llm.hold()
    first = asyncio.create_task(app.service.schedules.fire(s.id))
    await steps_until(lambda: llm.waiting == 1, "the first sender inside its model call")
    clock.advance(seconds=app.driver.config.lease_ttl + 1)
    second = asyncio.create_task(app.service.schedules.deliver_digests())
    await steps_until(lambda: llm.waiting == 2, "the second sender inside its model call")
    gate.set()
    assert (await asyncio.gather(first, second))[1] == 1
    async with app.store.tx() as tx:
        [row] = await tx.digests(s.id)
    assert f"digest {row['id']} was claimed by another delivery while it was written; left to it" in logged(caplog)
    assert len(chat.announced) == 1


async def test_a_timer_waking_two_seconds_early_is_too_early(app: App, clock: FakeClock) -> None:
    s = await set_hourly(app)
    clock.set(T0 + timedelta(hours=1) - timedelta(seconds=2))
    assert not await app.service.schedules.fire(s.id)
    clock.advance(seconds=1)  # a second early counts as on time
    assert await app.service.schedules.fire(s.id)
