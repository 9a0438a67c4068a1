"""A poll that outlives its discussion: open for a day (or the channel's or the start's hours), its verdict "so far"
until it closes, refused votes after, the verdict restated final and the decision record with it; the timer closes
it at its deadline, a restart included. The clock is injected: no test waits for a deadline."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control import defaults
from core.control.replies import UserError
from core.control.scheduling import Scheduler
from core.models import Discussion, Poll, Status
from core.storage.store import Store
from tests.core.conftest import C1, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)
SO_FAR = "(so far: people can vote until"


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


async def settled(scheduler: Scheduler | None) -> None:
    """The timer synced and what was due fired (its own signal; the limit only turns a hang into a failure)."""
    assert scheduler is not None
    await asyncio.wait_for(scheduler.settled(), 10)


async def council(app: App, **kw: object) -> tuple[str, Poll]:
    """A council run to its end: its final poll, still open after the discussion."""
    reply = await app.service.handle(start(topic="Postgres or MySQL for the new service?", flow="council",
                                           rounds=1, **kw))
    await app.driver.idle()
    async with app.store.tx() as tx:
        d = await tx.discussion(reply.discussion_id)
        [poll] = [p for p in await tx.polls(reply.discussion_id) if p.final]
    assert d is not None and d.status == Status.DONE
    return d.id, poll


async def verdict_and_record(app: App, did: str) -> tuple[str, str]:
    async with app.store.tx() as tx:
        [final] = [s for s in await tx.syntheses(did) if s["kind"] == "final"]
        record = await tx.decision_of(did)
    assert record is not None
    return str(final["data"]["verdict"]), record.verdict


async def test_a_final_poll_stays_open_a_day_saying_so_far_and_a_late_vote_closes_it_final(
        tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    did, poll = await council(app)
    assert not poll.closed and poll.closes_at == T0 + timedelta(hours=24)
    posted, recorded = await verdict_and_record(app, did)
    assert SO_FAR in posted and SO_FAR in recorded, (posted, recorded)
    assert any("Open until" in p.text and p.poll is not None and p.poll.poll_id == poll.id for p in chat.posts(did))

    clock.advance(hours=23)
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=0, user_id="U2", user_name="Sam"))
    await app.driver.idle()
    posted, recorded = await verdict_and_record(app, did)
    assert SO_FAR in posted and "1 of 1" in posted.split("people:")[1], posted

    clock.advance(hours=2)  # past the deadline: nobody closed it yet, and the timer did not run
    with pytest.raises(UserError) as late:
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=1, user_id="U3", user_name="Ria"))
    assert "Voting closed" in str(late.value) and "not counted" in str(late.value)
    await app.driver.idle()
    async with app.store.tx() as tx:
        stored = await tx.poll(poll.id)
        ballots = [b for b in await tx.ballots(poll.id) if not b.is_ai]
    assert stored is not None and stored.closed and [b.voter_id for b in ballots] == ["U2"]
    posted, recorded = await verdict_and_record(app, did)
    assert SO_FAR not in posted and posted == recorded and "1 of 1" in posted.split("people:")[1], (posted, recorded)
    [final] = [p.text for p in chat.posts(did) if p.text.startswith("**Final verdict**")]
    assert final.endswith(posted)
    with pytest.raises(UserError, match="closed"):  # and after the close, the same clear refusal
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=0, user_id="U4", user_name="Lee"))


async def test_the_starter_closes_it_sooner_and_nobody_else_may(
        tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    did, poll = await council(app)
    closer = [a for p in chat.posts(did) if p.poll is not None and p.poll.poll_id == poll.id for a in p.actions
              if a.id == "poll:close"]
    assert closer and closer[-1].confirm, "the poll offers to close it, asking first"
    with pytest.raises(UserError):
        await app.service.handle(c.ClosePoll(**C1, poll_id=poll.id, user_id="U2", user_name="Sam"))
    reply = await app.service.handle(c.ClosePoll(**C1, poll_id=poll.id, user_id="U1", user_name="Dana"))
    await app.driver.idle()
    assert "final" in reply.text
    posted, recorded = await verdict_and_record(app, did)
    assert SO_FAR not in posted and posted == recorded


async def test_the_deadline_comes_from_the_start_else_the_channel_else_a_day(
        tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    app = await build_app(settings(tmp_path), {"console": RecordingChat("console")}, llm=ScriptedLLM(), clock=clock)
    apps.append(app)
    _, poll = await council(app, poll_hours=48)
    assert poll.closes_at == T0 + timedelta(hours=48)
    await app.service.handle(c.SetDefaults(**C1, platform="console", channel="C1", text="poll_hours=6",
                                           user_id="U1", is_admin=True))
    _, poll = await council(app)
    assert poll.closes_at == T0 + timedelta(hours=6)
    _, poll = await council(app, poll_hours=2)  # the start's own says otherwise
    assert poll.closes_at == T0 + timedelta(hours=2)


@pytest.mark.parametrize("raw", ["0", "abc", "721", "-3", "1.5"])
def test_a_bad_number_of_hours_is_named_in_a_friendly_message(raw: str) -> None:
    with pytest.raises(UserError) as refused:
        defaults.read(f"poll_hours={raw}")
    assert f"you wrote `{raw}`" in str(refused.value) and "1 to 720" in str(refused.value)
    assert defaults.read("poll_hours=48h")[0] == {"poll_hours": 48}


async def test_the_timer_closes_a_poll_at_its_deadline_after_a_restart(
        tmp_path: Path, clock: FakeClock, apps: list[App]) -> None:
    chat = RecordingChat("console")  # the chat outlives the process: the new one edits the posts the old one made
    first = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock)
    apps.append(first)
    did, poll = await council(first)
    await first.close(grace_s=0)
    apps.remove(first)

    # A process starting later, on the same database: its timer finds the deadline in the table.
    wall = FakeClock(datetime.now(UTC))  # APScheduler waits on the real clock: this one holds its "now"
    app = await build_app(settings(tmp_path), {"console": chat}, llm=ScriptedLLM(), clock=clock,
                          scheduler=True, wall=wall)
    apps.append(app)
    assert app.scheduler is not None
    clock.advance(hours=3)
    app.scheduler.poke()
    await settled(app.scheduler)
    assert app.scheduler.deadlines()[poll.id] == wall.now() + timedelta(hours=21)

    clock.advance(hours=21)  # the deadline, on the clock the core reads
    app.scheduler.poke()
    await settled(app.scheduler)
    async with app.store.tx() as tx:
        stored = await tx.poll(poll.id)
    assert stored is not None and stored.closed, "the timer closed the poll at its deadline"
    await app.driver.idle()
    assert poll.id not in app.scheduler.deadlines()
    posted, recorded = await verdict_and_record(app, did)
    assert SO_FAR not in posted and posted == recorded
    assert any(p.text.startswith("**Final verdict**") for p in chat.posts(did)), "the verdict restated as final"


async def test_the_timer_reads_the_open_deadlines_of_the_platforms_it_leads(store: Store) -> None:
    async with store.tx() as tx:
        for did, platform in (("d1", "console"), ("d2", "slack")):
            await tx.add_discussion(Discussion(id=did, topic="t", platform=platform, created_at=T0, updated_at=T0))
        made = [await tx.add_poll(Poll(key=key, final=True, discussion_id=did, round=1, question="q",
                                       options=["a", "b"], created_at=T0, closes_at=at, closed=closed))
                for key, did, at, closed in (("k1", "d1", T0 + timedelta(hours=24), False),
                                             ("k2", "d1", T0 + timedelta(hours=2), True),  # closed already
                                             ("k3", "d1", None, False),  # closes with its round
                                             ("k4", "d2", T0 + timedelta(hours=5), False))]  # another platform's
    assert all(p is not None for p in made)
    async with store.tx() as tx:
        assert await tx.poll_deadlines(["console"]) == [(made[0].id, T0 + timedelta(hours=24))]  # type: ignore[union-attr]
        assert [i for i, _ in await tx.poll_deadlines(["console", "slack"])] == [made[0].id, made[3].id]  # type: ignore[union-attr]
