"""A poll's reminder through the fake Web API: an hour before the deadline on the injected clock, one ephemeral
message in the thread per person who took part and has not voted, none for a voter, none twice."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.slack.server import SlackServer
from bot.wiring import App
from core.models import Status
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.skipping import scheduled_server
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def wall() -> FakeClock:
    return FakeClock(datetime.now(UTC))  # APScheduler waits on the real clock: this holds its "now"


@pytest.fixture
async def server(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM, clock: FakeClock,
                 wall: FakeClock) -> AsyncIterator[SlackServer]:
    async with scheduled_server(fake, tmp_path, llm, clock, wall) as srv:
        yield srv


async def test_an_hour_before_the_deadline_each_person_who_has_not_voted_is_reminded_once_in_the_thread(
        slack: Slack, server: SlackServer, fake: FakeSlack, clock: FakeClock, wall: FakeClock) -> None:
    await slack.command("Postgres or MySQL for the new service? --flow council --rounds 1")
    await server.idle()
    assert isinstance(server.core, App) and server.core.scheduler is not None
    [d] = await server.core.service.guard.discussions()
    assert d.status == Status.DONE, (d.status, d.blocked_reason)
    async with server.core.store.tx() as tx:
        [poll] = [p for p in await tx.polls(d.id) if p.final]
    await slack.reply(d.thread_ref, "I lean Postgres, but what about our MySQL replicas?", user="U0002")
    [shown] = [m for m in fake.thread("C0001", d.thread_ref) if any(
        e.get("value") == f"{poll.id}|0" for b in m.blocks if b["type"] == "actions" for e in b["elements"])]
    await slack.click(shown.ts, "vote:0", f"{poll.id}|0", user="U0003")
    await server.idle()
    before = len(fake.ephemerals)  # the vote's own confirmation

    scheduler = server.core.scheduler
    scheduler.poke()
    await asyncio.wait_for(scheduler.settled(), 10)
    assert scheduler.reminders()[poll.id] == wall.now() + timedelta(hours=23)
    clock.advance(hours=22, minutes=59)
    scheduler.poke()
    await asyncio.wait_for(scheduler.settled(), 10)
    assert scheduler.reminders().get(poll.id) == wall.now() + timedelta(minutes=1), "moved to the virtual clock"
    assert len(fake.ephemerals) == before, "nobody is reminded before the hour"

    clock.advance(minutes=1)
    scheduler.poke()
    await asyncio.wait_for(scheduler.settled(), 10)
    assert len(fake.ephemerals) == before + 2, "the reminders came"
    for _ in range(3):  # reloads after the reminder send nothing more
        scheduler.poke()
        await asyncio.wait_for(scheduler.settled(), 10)
    reminders = fake.ephemerals[before:]
    assert sorted(r["user"] for r in reminders) == ["U0001", "U0002"], "the starter and the writer; not the voter"
    assert all(r["channel"] == "C0001" and r["thread_ts"] == d.thread_ref for r in reminders)
    assert all("closes" in r["text"] and "have not voted" in r["text"] for r in reminders)
    assert poll.id not in scheduler.reminders()
    buttons = [e.get("value") for b in reminders[0]["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert f"{poll.id}|0" in buttons, "the reminder carries the poll's buttons: a vote from it counts"
