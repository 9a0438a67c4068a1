"""Scheduled rounds and digests through the service, on an injected clock: a slot fires once, catches up once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.service import UserError
from core.models import NextAction, Phase, Post, Schedule, Status
from core.showing.moments import plain
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.cluster import until
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)  # Monday, 08:00 in Berlin
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def settings_for(path: Path) -> Settings:
    return Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{path / 'council.db'}")  # type: ignore[call-arg]


@pytest.fixture
async def app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[App]:
    application = await build_app(settings_for(tmp_path), {"console": chat}, llm=llm, clock=clock)
    yield application
    await application.close()


async def round_schedule(app: App, discussion_id: str) -> Schedule:
    async with app.store.tx() as tx:
        s = await tx.find_schedule("round", "console", "", discussion_id)
    assert s is not None
    return s


async def fire(app: App, s: Schedule) -> bool:
    fired = await app.service.schedules.fire(s.id)
    await settle(app)
    return fired


def reminders(chat: RecordingChat, discussion_id: str) -> list[Post]:
    return [p for p in chat.posts(discussion_id) if p.key.startswith(f"{discussion_id}:sched:")]


async def waiting(app: App, **kw: Any) -> str:
    reply = await app.service.handle(start(**kw))
    await settle(app)
    assert (await discussion(app, reply.discussion_id)).status == Status.WAITING
    return reply.discussion_id


# rounds ------------------------------------------------------------------------------------------------
async def test_start_with_every_schedules_follow_up_rounds(app: App) -> None:
    reply = await app.service.handle(start(every="1d", tz="Europe/Berlin"))
    await settle(app)
    s = await round_schedule(app, reply.discussion_id)
    assert (s.trigger, s.tz, s.next_run_at, s.enabled) == ("every:86400", "Europe/Berlin", T0 + timedelta(days=1),
                                                           True)
    assert "Next round: Tue 3 Mar 08:00 (Europe/Berlin), then every day." in plain(reply.text)


async def test_start_with_next_at_schedules_one_round(app: App) -> None:
    reply = await app.service.handle(start(next_at="tomorrow 09:00", tz="Europe/Berlin"))
    s = await round_schedule(app, reply.discussion_id)
    assert s.trigger.startswith("at:") and s.next_run_at == datetime(2026, 3, 3, 9, 0, tzinfo=BERLIN)
    await settle(app)


async def test_a_bad_cadence_starts_nothing(app: App) -> None:
    with pytest.raises(UserError, match="not a cadence"):
        await app.service.handle(start(every="sometimes"))
    with pytest.raises(UserError, match="I don't understand"):
        await app.service.handle(start(next_at="the day after never"))
    async with app.store.tx() as tx:
        assert await tx.discussions() == [] and await tx.schedules(enabled_only=False) == []


async def test_a_scheduled_round_reminds_the_people_who_took_part_and_hears_their_replies(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    did = await waiting(app)
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="What about our release cadence?",
                                                user_id="U2", user_name="Lee", event_id="Ev1"))
    async with app.store.tx() as tx:
        poll = (await tx.polls(did))[0]
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=0, user_id="U3", user_name="Kim"))
    await settle(app)

    reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="tomorrow 09:00", tz="Europe/Berlin",
                                                     user_id="U2", user_name="Lee", is_admin=True))
    await settle(app)
    assert plain(reply.text) == "Lee scheduled the next round for Tue 3 Mar 09:00 (Europe/Berlin)."
    assert chat.posts(did)[-1].text == "🗓️ " + reply.text
    s = await round_schedule(app, did)

    clock.set(datetime(2026, 3, 3, 8, 59, tzinfo=BERLIN))
    assert not await fire(app, s), "fired a minute early"
    assert reminders(chat, did) == []

    clock.set(datetime(2026, 3, 3, 9, 0, 0, 200_000, tzinfo=BERLIN))
    assert await fire(app, s)
    assert not await fire(app, s), "a slot fired twice"
    [reminder] = reminders(chat, did)
    assert reminder.mentions == ["U1", "U2", "U3"] and "round 2 starts now" in reminder.text
    d = await discussion(app, did)
    assert d.status == Status.WAITING and d.round == 2
    opening_2 = next(p for p in llm.prompts if p.purpose.phase == Phase.OPENING and p.purpose.round == 2)
    assert "release cadence" in "\n".join(b.text for b in opening_2.shared)
    assert not (await round_schedule(app, did)).enabled, "a one-shot schedule stays enabled"


async def test_a_paused_discussion_resumes_on_schedule_straight_into_its_next_round(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    did = await waiting(app)
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=did, action=NextAction.PAUSE, user_id="U1"))
    await settle(app)
    assert (await discussion(app, did)).status == Status.PAUSED
    await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="in 1 hour", user_id="U1", user_name="Dana"))
    await settle(app)
    clock.advance(hours=1)
    assert await fire(app, await round_schedule(app, did))
    d = await discussion(app, did)
    assert d.status == Status.WAITING and d.round == 2 and d.resume_count == 1
    titles = [p.title for p in chat.posts(did)]
    assert titles.count("Round 2 · Reopening") == 1 and "Round 2 · Initial statement" in titles
    assert len(reminders(chat, did)) == 1


async def test_missed_slots_fire_once_and_the_next_slot_is_in_the_future(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    did = await waiting(app, every="1h")
    clock.advance(hours=5, minutes=30)  # the process was down for five slots
    s = await round_schedule(app, did)
    assert await fire(app, s)
    assert not await fire(app, await round_schedule(app, did))
    after = await round_schedule(app, did)
    assert after.next_run_at == T0 + timedelta(hours=6) and after.last_run_at == clock.now()
    assert len(reminders(chat, did)) == 1 and (await discussion(app, did)).round == 2


async def test_concurrent_firings_of_one_slot_run_it_once(app: App, chat: RecordingChat, clock: FakeClock) -> None:
    did = await waiting(app, every="1h")
    clock.advance(hours=1)
    s = await round_schedule(app, did)
    results = await asyncio.gather(*(app.service.schedules.fire(s.id) for _ in range(5)))
    await settle(app)
    assert sorted(results) == [False] * 4 + [True]
    assert len(reminders(chat, did)) == 1


async def test_a_finished_discussion_ends_its_schedule_without_a_post(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    reply = await app.service.handle(start(rounds=1, every="1h"))
    await settle(app)
    assert (await discussion(app, reply.discussion_id)).status == Status.DONE
    before = len(chat.sent)
    clock.advance(hours=1)
    assert await fire(app, await round_schedule(app, reply.discussion_id))
    assert len(chat.sent) == before and not (await round_schedule(app, reply.discussion_id)).enabled


async def test_a_discussion_that_is_not_between_rounds_is_skipped(app: App, chat: RecordingChat,
                                                                  clock: FakeClock) -> None:
    reply = await app.service.handle(start(confirm=True, every="1h"))
    await settle(app)
    assert (await discussion(app, reply.discussion_id)).status == Status.AWAITING_CONFIRMATION
    clock.advance(hours=1)
    assert await fire(app, await round_schedule(app, reply.discussion_id))
    assert reminders(chat, reply.discussion_id) == []
    assert (await discussion(app, reply.discussion_id)).status == Status.AWAITING_CONFIRMATION
    s = await round_schedule(app, reply.discussion_id)
    assert s.enabled and s.next_run_at == T0 + timedelta(hours=2)


async def test_the_next_action_choice_offers_schedule_buttons_that_map_to_schedule_round(
    app: App, chat: RecordingChat
) -> None:
    did = await waiting(app)
    choice = chat.posts(did)[-1]
    sched = {a.id: a.value for a in choice.actions if a.id.startswith("sched:")}
    assert sched == {"sched:1h": f"{did}|in 1 hour", "sched:tomorrow": f"{did}|tomorrow morning",
                     "sched:monday": f"{did}|monday"}
    target, when = sched["sched:monday"].split("|", 1)
    reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=target, when=when, tz="Europe/Berlin",
                                                     user_id="U2", user_name="Lee", is_admin=True))
    await settle(app)
    assert "Mon 9 Mar 09:00 (Europe/Berlin)" in plain(reply.text)


async def test_scheduled_rounds_can_be_cancelled(app: App, clock: FakeClock) -> None:
    did = await waiting(app, every="1h")
    await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="off", user_id="U1", user_name="Dana"))
    await settle(app)
    clock.advance(hours=1)
    assert not await fire(app, await round_schedule(app, did))
    reply = await app.service.handle(c.ScheduleRound(**C1, discussion_id=did, when="off", user_id="U1"))
    assert reply.text == "This discussion has no scheduled rounds."


async def test_a_paused_discussion_resumes_after_a_restart_a_week_later(
    tmp_path: Path, llm: ScriptedLLM, clock: FakeClock
) -> None:
    chat = RecordingChat("console")  # the platform outlives the process: the thread and its header stay
    first = await build_app(settings_for(tmp_path), {"console": chat}, llm=llm, clock=clock)
    reply = await first.service.handle(start())
    await settle(first)
    did = reply.discussion_id
    await first.service.handle(c.Pause(**C1, discussion_id=did, user_id="U1", user_name="Dana"))
    await settle(first)
    assert (await discussion(first, did)).status == Status.PAUSED
    await first.close()
    before = len(chat.keys(did))

    clock.advance(days=7)
    second = await build_app(settings_for(tmp_path), {"console": chat}, llm=llm, clock=clock)
    try:
        await second.service.handle(c.Resume(**C1, discussion_id=did, user_id="U2", is_admin=True, user_name="Lee"))
        await settle(second)
        d = await discussion(second, did)
        assert d.status == Status.WAITING and d.resume_count == 1
        posts = chat.posts(did)[before:]
        reopening = [p for p in posts if p.title.endswith("Reopening")]
        assert len(reopening) == 1 and reopening[0].persona is not None and reopening[0].persona.key == "moderator"
        keys = chat.keys(did)
        assert not set(keys[before:]) & set(keys[:before]), "a post from before the restart reposted"
        assert "Waiting for the next step" in chat.posts(did)[0].state, "the header shows where it stands now"
        prompt = next(p for p in llm.prompts if p.purpose.phase == Phase.REOPENING)
        assert "Resume context" in "\n".join(b.text for b in prompt.shared), "the resume summary was not used"
    finally:
        await second.close()


# digests -----------------------------------------------------------------------------------------------
async def digest_schedule(app: App, channel: str = "C1") -> Schedule:
    async with app.store.tx() as tx:
        s = await tx.find_schedule("digest", "console", "", channel)
    assert s is not None
    return s


async def test_a_daily_digest_names_every_discussion_with_its_link_votes_and_the_period_cost(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    reply = await app.service.handle(c.SetDigest(**C1, platform="console", channel="C1", cadence="daily",
                                                 tz="Europe/Berlin", user_id="U1"))
    assert plain(reply.text) == "Digest scheduled: daily at 09:00; the first one Mon 2 Mar 09:00 " \
                         "(Europe/Berlin)."
    llm.cost_per_call = 0.01
    open_one = await waiting(app, topic="Should we adopt a four-day week?")
    done = (await app.service.handle(start(topic="Which CI provider?", rounds=1))).discussion_id
    elsewhere = (await app.service.handle(c.StartDiscussion(**C1, topic="Office plants?", platform="console",
                                                            channel="C2",
                                                            rounds=1))).discussion_id
    await settle(app)

    clock.set(datetime(2026, 3, 2, 9, 0, 0, 300_000, tzinfo=BERLIN))
    s = await digest_schedule(app)
    assert await fire(app, s)
    assert not await fire(app, s)
    [(_, channel, ref, post)] = chat.announced
    assert channel == "C1" and post.kind == "notice"
    for did, topic in ((open_one, "Should we adopt a four-day week?"), (done, "Which CI provider?")):
        assert f"[{topic}](https://chat.invalid/console/{did})" in post.text
    assert "Office plants" not in post.text and elsewhere not in post.text
    assert "**Waiting for people**\n- [Should we adopt a four-day week?]" in post.text
    # The light model's condensed lists: each item names the discussion it comes from, by the number the prompt
    # gave it, and the digest names and links that discussion (the model writes no topic or link).
    links = {did: f"[{topic}](https://chat.invalid/console/{did})"
             for did, topic in ((open_one, "Should we adopt a four-day week?"), (done, "Which CI provider?"))}
    for title, said in (("Decided", "A reversible trial"), ("Dissent that remains", "Evidence threshold"),
                        ("Open questions", "Who carries the cost?")):
        section = post.text.split(f"**{title}**\n")[1].split("\n\n")[0].splitlines()
        assert sorted(section) == sorted(f"- {said} — {link}" for link in links.values()), section
    assert "vote “Which option should the team act on?” (open)" in post.text
    async with app.store.tx() as tx:
        cost = await tx.usage_total([open_one, done], since=T0, until=clock.now())
        [row] = await tx.digests(s.id)
    assert cost.cost_usd > 0 and f"Cost this period: ${cost.cost_usd:.2f}" in post.text
    assert row["sent"] and row["ref"] == ref and row["period_start"] == T0
    assert next(p for p in llm.prompts if p.purpose.phase == Phase.DIGEST).tier == "light"
    [chart] = post.files  # the latest vote of each discussion, as a picture with words
    assert chart.data.startswith(b"\x89PNG") and "Which CI provider?" in chart.alt and "persona(s)" in chart.alt

    clock.advance(days=1)  # nothing happened since: the digest still posts, and says so
    assert await fire(app, await digest_schedule(app))
    assert len(chat.announced) == 2 and "No council discussion" in chat.announced[1][3].text
    assert chat.announced[1][3].files == []


async def test_after_downtime_one_catch_up_digest_covers_the_whole_gap(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", is_admin=True, platform="console", channel="C1",
                                         cadence="cron", cron="* * * * *"))  # every minute: an admin's choice
    s = await digest_schedule(app)
    assert s.next_run_at == T0 + timedelta(minutes=1)
    clock.advance(hours=3, seconds=20)
    assert await fire(app, s)
    assert not await fire(app, await digest_schedule(app))
    assert len(chat.announced) == 1
    after = await digest_schedule(app)
    assert after.next_run_at == T0 + timedelta(hours=3, minutes=1)
    clock.set(after.next_run_at)  # type: ignore[arg-type]
    assert await fire(app, after)
    async with app.store.tx() as tx:
        rows = await tx.digests(s.id)
    assert [(r["period_start"], r["period_end"]) for r in rows] == [
        (T0, T0 + timedelta(hours=3, seconds=20)),
        (T0 + timedelta(hours=3, seconds=20), T0 + timedelta(hours=3, minutes=1)),
    ]


async def test_a_digest_claimed_but_not_posted_is_posted_once_later(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    chat.fail_next_announce(1)  # the platform is down for the first attempt
    clock.advance(hours=1)
    assert await fire(app, await digest_schedule(app))
    assert chat.announced == [] and await app.service.schedules.deliver_digests() == 0  # its sender's lease still holds
    clock.advance(seconds=app.driver.config.lease_ttl + 1)
    assert await app.service.schedules.deliver_digests() == 1
    assert await app.service.schedules.deliver_digests() == 0
    calls = chat.announce_calls
    assert len(chat.announced) == 1 and len(calls) == 2 and calls == [chat.announced[0][3].key] * 2


async def test_a_digest_whose_lease_lapsed_while_it_was_written_is_left_to_the_sender_that_claimed_it_since(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    """The first sender's model call outlasts its lease (a starved replica under load); a later delivery claims the
    digest, looks for it, finds nothing and sends it. The first sender, back from its call, must not send it too."""
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    await app.service.handle(start(topic="Which CI provider?", rounds=1))
    await settle(app)  # a finished discussion in the period: the digest asks the model to condense it
    clock.advance(hours=1)
    gate = llm.hold()
    first = asyncio.create_task(app.service.schedules.fire((await digest_schedule(app)).id))
    await until(lambda: llm.waiting == 1, 5, "the first sender inside its model call")
    clock.advance(seconds=app.driver.config.lease_ttl + 1)  # its lease ran out meanwhile
    second = asyncio.create_task(app.service.schedules.deliver_digests())
    await until(lambda: llm.waiting == 2, 5, "the second sender inside its model call, having found nothing")
    gate.set()
    await asyncio.gather(first, second)
    keys = [post.key for _, _, _, post in chat.announced]
    assert len(keys) == 1, f"the digest was announced {len(keys)} times"
    schedule_id = (await digest_schedule(app)).id
    async with app.store.tx() as tx:
        [row] = await tx.digests(schedule_id)
    assert row["sent"] and row["ref"] == chat.announced[0][2]


async def test_a_digest_goes_out_from_the_stored_syntheses_when_the_model_fails(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="weekly"))
    await waiting(app)
    llm.fail("digest", Phase.DIGEST)
    clock.set(datetime(2026, 3, 9, 9, 0, tzinfo=UTC))
    assert await fire(app, await digest_schedule(app))
    [(_, _, _, post)] = chat.announced
    [did] = [d.id for d in await app.service.guard.discussions()]  # type: ignore[union-attr]
    named = f" — [Should we move to trunk-based development?](https://chat.invalid/console/{did})"
    assert f"**Decided**\n- Start small and reversible{named}" in post.text, post.text


async def test_a_digest_whose_model_call_fails_is_charged_what_the_call_cost(
    app: App, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="weekly"))
    await waiting(app)
    schedule = await digest_schedule(app)
    llm.fail("digest", Phase.DIGEST, cost_usd=0.25)  # an attempt was cut at max_tokens, then the call failed
    clock.set(datetime(2026, 3, 9, 9, 0, tzinfo=UTC))
    assert await fire(app, schedule)
    assert len(chat.announced) == 1  # written from the stored syntheses
    async with app.store.tx() as tx:
        spent = await tx.workspace_spend(schedule.platform, schedule.workspace, datetime(2026, 3, 9, tzinfo=UTC))
    assert spent == pytest.approx(0.25)


async def test_digest_settings_are_checked_and_can_be_turned_off(app: App, clock: FakeClock) -> None:
    with pytest.raises(UserError, match="5 fields"):
        await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="cron",
                                             cron="0 9 * *"))
    with pytest.raises(UserError, match="not a time zone"):
        await app.service.handle(c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="daily",
                                             tz="Moon/Base"))
    off = c.SetDigest(**C1, user_id="U1", platform="console", channel="C1", cadence="off")
    assert (await app.service.handle(off)).text == "There is no digest for that channel."
    await app.service.handle(c.SetDigest(**C1, user_id="U1", is_admin=True, platform="console", channel="C1",
                                         cadence="cron", cron="*/5 * * * *"))
    assert (await app.service.handle(off)).text == "Digest turned off."
    clock.advance(minutes=5)
    assert not await app.service.schedules.fire((await digest_schedule(app)).id)
