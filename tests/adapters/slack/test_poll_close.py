"""Polls that stay open after the discussion, through signed Slack payloads and the fake Web API: a meeting whose
owners named no option on the list still gets people's rankings, the starter closes them, a late pick is refused in
an ephemeral message, and the timer closes a poll at its deadline on the injected clock."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.server import SlackServer
from bot.wiring import App
from core.models import Poll, Status
from tests.adapters.slack.conftest import Slack, fixture
from tests.adapters.slack.skipping import scheduled_server
from tests.core.deliberation.test_people_rank_the_list import OwnersOffTheList
from tests.fakes.clock import FakeClock
from tests.fakes.slack_api import FakeSlack, Msg

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)
SO_FAR = "so far: people can vote until"


@pytest.fixture
def llm() -> OwnersOffTheList:
    return OwnersOffTheList()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def wall() -> FakeClock:
    return FakeClock(datetime.now(UTC))  # APScheduler waits on the real clock: this holds its "now"


@pytest.fixture
async def server(fake: FakeSlack, tmp_path: Path, llm: OwnersOffTheList, clock: FakeClock,
                 wall: FakeClock) -> AsyncIterator[SlackServer]:
    async with scheduled_server(fake, tmp_path, llm, clock, wall) as srv:
        yield srv


def shown(m: Msg) -> str:
    return m.text + json.dumps(m.blocks, ensure_ascii=False)


async def meeting(slack: Slack, server: SlackServer, fake: FakeSlack) -> tuple[str, list[Poll], list[Msg]]:
    await slack.command("What should the card game fix first? --flow meeting --rounds 2")
    await server.idle()
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    assert d.status == Status.DONE, (d.status, d.blocked_reason)
    async with server.core.store.tx() as tx:
        places = [p for p in await tx.polls(d.id) if ":rank" in p.key]
    thread = fake.thread("C0001", d.thread_ref)
    menus = [next(m for m in thread if has_menu(m) and menu(m)["options"][0]["value"].startswith(f"{p.id}|"))
             for p in places]
    return d.id, places, menus


def has_menu(m: Msg) -> bool:
    return any(e["type"] == "static_select" for b in m.blocks if b["type"] == "actions" for e in b["elements"])


async def late_pick(slack: Slack, m: Msg, shown_menu: dict[str, Any], option: dict[str, Any], user: str) -> None:
    """A pick from a menu the person's client still shows after the poll closed (Slack sends what was shown)."""
    payload = fixture("block_actions")
    payload["user"] = {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0001"}
    payload["container"] |= {"message_ts": m.ts, "channel_id": "C0001", "thread_ts": m.thread_ts}
    payload["message"] = m.wire(False)
    payload["actions"] = [{"action_id": shown_menu["action_id"], "block_id": "actions:0", "type": "static_select",
                           "selected_option": option, "placeholder": shown_menu["placeholder"], "action_ts": "1.2"}]
    await slack.interaction(payload)


def menu(m: Msg) -> dict[str, Any]:
    return next(e for b in m.blocks if b["type"] == "actions" for e in b["elements"] if e["type"] == "static_select")


async def test_owners_naming_no_option_leave_people_a_ranking_the_starter_closes(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    did, places, menus = await meeting(slack, server, fake)
    assert len(places) == 3 and all(not p.closed and p.closes_at == T0 + timedelta(hours=24) for p in places)
    recommendation = next(m for m in fake.thread("C0001", menus[0].thread_ts or "")
                          if "Council Recommendation" in shown(m))
    assert SO_FAR in shown(recommendation), "the verdict says it may change while people rank"
    # Two people rank (Sam two places, Ria one); then the starter closes the ranking.
    await slack.pick(menus[0].ts, menu(menus[0])["options"][0]["value"], user="U0002")
    await slack.pick(menus[1].ts, menu(menus[1])["options"][1]["value"], user="U0002")
    await slack.pick(menus[0].ts, menu(menus[0])["options"][1]["value"], user="U0003")
    await server.idle()
    close = next(e for b in menus[0].blocks if b["type"] == "actions" for e in b["elements"]
                 if e["action_id"] == "poll:close")
    stale = menu(menus[2])  # the menu as a client that has not redrawn the message still shows it
    await slack.click(menus[0].ts, "poll:close", close["value"], user="U0001")
    await server.idle()
    thread = fake.thread("C0001", menus[0].thread_ts or "")
    [table] = [shown(m) for m in thread if "ranked, " in shown(m) and "ranking beside the owners" in shown(m)]
    assert "2 people ranked" in table and "Final verdict:" in table and SO_FAR not in table
    recommendation = next(m for m in thread if "Council Recommendation" in shown(m))
    assert SO_FAR not in shown(recommendation), "the recommendation's verdict was not restated final"
    assert "people:" in shown(recommendation) and "of 2" in shown(recommendation).split("people:")[1]
    assert server.core is not None
    async with server.core.store.tx() as tx:
        record = await tx.decision_of(did)
    assert record is not None and SO_FAR not in record.verdict and sum(record.people.values()) == 2

    # A pick after the close is refused, to the person alone, and changes nothing.
    await late_pick(slack, menus[2], stale, stale["options"][2], "U0003")
    await server.idle()
    assert "closed" in fake.ephemerals[-1]["text"] and fake.ephemerals[-1]["user"] == "U0003"
    async with server.core.store.tx() as tx:
        assert [b for b in await tx.ballots(places[2].id) if b.voter_id == "U0003"] == []


async def test_the_timer_closes_the_ranking_at_its_deadline(
        slack: Slack, server: SlackServer, fake: FakeSlack, clock: FakeClock, wall: FakeClock) -> None:
    did, places, menus = await meeting(slack, server, fake)
    await slack.pick(menus[0].ts, menu(menus[0])["options"][0]["value"], user="U0002")
    await server.idle()
    assert isinstance(server.core, App) and server.core.scheduler is not None
    scheduler = server.core.scheduler
    scheduler.poke()
    await asyncio.wait_for(scheduler.settled(), 10)
    assert all(p.id in scheduler.deadlines() for p in places), "every ranking's deadline is registered"
    assert scheduler.deadlines()[places[0].id] == wall.now() + timedelta(hours=24)

    stale = menu(menus[1])
    clock.advance(hours=24)  # the deadline, on the clock the core reads
    scheduler.poke()
    await asyncio.wait_for(scheduler.settled(), 10)
    await server.idle()
    assert any("Final verdict:" in shown(m) for m in fake.thread("C0001", menus[0].thread_ts or "")), \
        "the timer closed the ranking"
    async with server.core.store.tx() as tx:
        assert all(p.closed for p in await tx.polls(did) if ":rank" in p.key)
    await late_pick(slack, menus[1], stale, stale["options"][1], "U0002")
    await server.idle()
    assert "closed" in fake.ephemerals[-1]["text"]
