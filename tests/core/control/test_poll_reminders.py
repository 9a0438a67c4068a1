"""The reminder before a poll's deadline, on the injected clock: who took part and has not voted is told once,
privately; never a voter, never twice (a restart, a second firing), not when the channel switched it off, and never
with anyone's vote or a count. No test waits for the hour: the timer's jobs are fired on virtual time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control import defaults, reminding
from core.control.replies import UserError
from core.control.scheduling import Scheduler
from core.models import Ballot, Discussion, HumanMessage, Poll
from tests.core.conftest import C1, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)


def settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                    council_schedule_reload_s=3600, council_leader_retry_s=3600)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def apps() -> AsyncIterator[list[App]]:
    made: list[App] = []
    yield made
    for app in made:
        await app.close(grace_s=0)


async def council(app: App, **kw: object) -> tuple[str, Poll]:
    """A council run to its end, two people who wrote in it (Sam, Ria), and Ria's vote on its final poll."""
    reply = await app.service.handle(start(topic="Postgres or MySQL for the new service?", flow="council",
                                           rounds=1, **kw))
    await app.driver.idle()
    did = reply.discussion_id
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="What about our replicas?",
                                                user_id="U2", user_name="Sam", event_id=f"{did}:e1"))
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="Postgres, surely.",
                                                user_id="U3", user_name="Ria", event_id=f"{did}:e2"))
    await app.driver.idle()
    async with app.store.tx() as tx:
        [poll] = [p for p in await tx.polls(did) if p.final]
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=1, user_id="U3", user_name="Ria"))
    await app.driver.idle()
    return did, poll


def reminded(chat: RecordingChat, did: str) -> list[str]:
    return [user for d, user, post in chat.told if d == did and ":remind:" in post.key]


async def test_the_people_who_took_part_but_did_not_vote_are_reminded_once_an_hour_before(
        tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    did, poll = await council(app)
    remind = reminding.Reminders(app.store, clock, {"console": chat}).remind
    clock.advance(hours=22, minutes=59)
    assert await remind(poll.id) == 0 and reminded(chat, did) == [], "not before the hour"
    clock.advance(minutes=1)
    assert await remind(poll.id) == 2
    assert sorted(reminded(chat, did)) == ["U1", "U2"], "the starter and the writer; the voter is not reminded"
    assert await remind(poll.id) == 0 and len(reminded(chat, did)) == 2, "once"
    [post] = [p for d, u, p in chat.told if d == did and u == "U2"]
    assert post.whisper and poll.question in post.text and all(o in post.text for o in poll.options)
    assert [a.value for a in post.actions] == [f"{poll.id}|{i}" for i in range(len(poll.options))]


async def test_a_hidden_anonymous_poll_reminds_without_a_name_or_a_count(
        tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    did, poll = await council(app, anonymous=True, hide_results=True)
    clock.advance(hours=23)
    assert await reminding.Reminders(app.store, clock, {"console": chat}).remind(poll.id) == 2
    texts = [p.text for d, _, p in chat.told if d == did]
    assert texts and not any("Ria" in t or "vote(s)" in t or "1 " in t.split("closes")[0] for t in texts)
    assert all(p.poll is None for d, _, p in chat.told if d == did), "no tally travels with it"


async def test_a_channel_can_switch_reminders_off(tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    await app.service.handle(c.SetDefaults(**C1, platform="console", channel="C1", text="poll_reminders=off",
                                           user_id="U1", is_admin=True))
    did, poll = await council(app)
    clock.advance(hours=23)
    assert await reminding.Reminders(app.store, clock, {"console": chat}).remind(poll.id) == 0
    assert reminded(chat, did) == []
    assert defaults.read("poll_reminders=on")[0] == {"poll_reminders": "on"}
    with pytest.raises(UserError, match="`on` or `off`; you wrote `later`"):
        defaults.read("poll_reminders=later")


async def test_a_poll_open_two_hours_or_less_reminds_nobody(tmp_path: Path, clock: FakeClock,
                                                            apps: list[App]) -> None:
    chat = RecordingChat("console")
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    _, poll = await council(app, poll_hours=1)
    assert await reminding.Reminders(app.store, clock, {"console": chat}).remind(poll.id) == 0
    async with app.store.tx() as tx:
        stored = await tx.poll(poll.id)
    assert stored is not None and stored.reminded_at == T0, "marked, so no timer comes back for it"
    _, longer = await council(app, poll_hours=3)
    clock.advance(hours=2)
    assert await reminding.Reminders(app.store, clock, {"console": chat}).remind(longer.id) == 2


async def test_the_timer_reminds_once_across_a_restart(tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")  # the chat outlives the processes
    wall = FakeClock(datetime.now(UTC))  # APScheduler waits on the real clock: this one holds its "now"
    first = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock,
                            scheduler=True, wall=wall)
    apps.append(first)
    did, poll = await council(first)
    assert first.scheduler is not None
    first.scheduler.poke()
    await settled(first.scheduler)
    assert first.scheduler.reminders()[poll.id] == wall.now() + timedelta(hours=23)
    clock.advance(hours=23)
    first.scheduler.poke()
    await settled(first.scheduler)
    assert len(reminded(chat, did)) == 2
    await first.close(grace_s=0)
    apps.remove(first)

    second = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock,
                             scheduler=True, wall=wall)
    apps.append(second)
    assert second.scheduler is not None
    clock.advance(minutes=10)
    for _ in range(3):
        second.scheduler.poke()
        await settled(second.scheduler)
    assert poll.id in second.scheduler.deadlines() and poll.id not in second.scheduler.reminders()
    assert sorted(reminded(chat, did)) == ["U1", "U2"], "the restart reminded nobody again"


async def settled(scheduler: Scheduler | None) -> None:
    """The timer synced and what was due fired (its own signal; the limit only turns a hang into a failure)."""
    assert scheduler is not None
    await asyncio.wait_for(scheduler.settled(), 10)


def test_who_counts_a_vote_on_another_poll_as_taking_part_and_leaves_out_personas() -> None:
    d = Discussion(id="d1", topic="t", platform="console", created_by="U1", created_at=T0, updated_at=T0)
    this, other = (Poll(id=i, key=f"k{i}", discussion_id="d1", round=1, question="q", options=["a", "b"],
                        created_at=T0) for i in (1, 2))
    said = [HumanMessage(discussion_id="d1", author_id="U2", author_name="Sam", text="hi", created_at=T0)]
    ballots = {other.id: [Ballot(poll_id=2, voter_id=v, voter_name=v, choice=0, is_ai=ai, created_at=T0)
                          for v, ai in (("U4", False), ("skeptic", True), ("U5", False))],
               this.id: [Ballot(poll_id=1, voter_id="U5", voter_name="U5", choice=1, created_at=T0)]}
    assert reminding.who(d, this, said, ballots) == ["U1", "U2", "U4"]
