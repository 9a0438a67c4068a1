"""Fact checks from Slack: `--check` on /council, the form's checkbox, and *Check claims* on a persona's post."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import event

from adapters.slack import interactions as ix
from adapters.slack import translate as tr
from adapters.slack.server import SlackServer
from bot.wiring import build_app
from core.control import commands as c
from core.deliberation import factcheck
from core.models import TurnStatus
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, settings
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack, Msg

server = skipping.server  # the app on skipping time, in place of the conftest's

WHO = tr.Who("U1", "Dana")


def start(text: str) -> c.StartDiscussion:
    cmd = tr.parse_council(text, who=WHO, team_id="T1", channel_id="C1", default_tz="UTC").command
    assert isinstance(cmd, c.StartDiscussion)
    return cmd


def test_check_flags_and_the_form_checkbox() -> None:
    assert start("Adopt Rust? --check").check is True
    assert start("Adopt Rust? --no-check").check is False
    assert start("Adopt Rust?").check is None  # the channel default (COUNCIL_FACT_CHECK) decides
    assert "`--check`" in tr.HELP
    values = {"topic": {"value": {"value": "Adopt Rust?"}},
              "options": {"value": {"selected_options": [{"value": "check"}]}}}
    assert ix.start_from_view(values, ix.start_metadata("C1"), WHO, "T1", "UTC").check is True
    assert ix.action_command("check:claims", "ab12:r1:s1:ada", WHO) == c.CheckClaims(
        discussion_id="ab12", turn_key="ab12:r1:s1:ada", **WHO.fields())


async def test_check_claims_on_a_persona_post_checks_it_in_the_thread(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust?")  # no --check: round 1 runs, then waits for people
    await server.idle()
    buttons = check_buttons(fake)
    assert buttons, "a persona post with a claim to check offers Check claims"
    message, button = buttons[0]
    status, _ = await slack.pick(message.ts, button["value"], action_id="check:claims", user="U0002")  # anyone
    assert status == 200
    await server.idle()
    [check] = [m for m in fake.messages if "could not check" in m.text or "could not check" in str(m.blocks)]
    assert check.thread_ts == message.thread_ts and check.username == "Fact-checker"
    assert "offline model cannot search the web" in check.text + str(check.blocks)


@pytest.fixture
async def budgeted(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> AsyncIterator[tuple[Slack, SlackServer]]:
    """The real app with a $0.05 workspace day, a free first round (the model costs nothing until a test says)."""
    s = settings(tmp_path).model_copy(update={"council_workspace_budget_usd_per_day": 0.05})
    srv = SlackServer(skipping.skipping_config(fake), lambda chats: build_app(s, chats, llm=llm))
    await srv.start()
    async with aiohttp.ClientSession() as session:
        yield Slack(f"http://127.0.0.1:{srv.port}/slack/events", session, fake), srv
    await srv.stop()


def check_buttons(fake: FakeSlack) -> list[tuple[Msg, dict[str, Any]]]:
    """Each post's *Check claims*: the one option of its overflow menu (never a button of its own)."""
    found = [(m, e) for m in fake.messages for b in m.blocks if b["type"] == "actions" for e in b["elements"]
             if e.get("action_id") == "check:claims"]
    assert all(e["type"] == "overflow" for _, e in found), "in the post's menu, not a button"
    return [(m, e["options"][0]) for m, e in found]


def statements(server: SlackServer) -> list[str]:
    """Every SQL statement the app runs from now on: a driver that loops runs thousands."""
    assert server.core is not None
    seen: list[str] = []
    event.listen(server.core.store.engine.sync_engine, "before_cursor_execute",
                 lambda _conn, _cursor, sql, *_: seen.append(sql))
    return seen


@pytest.mark.parametrize("rounds", ["--rounds 1", ""], ids=["finished", "waiting"])
async def test_a_check_nobody_can_pay_for_says_so_once_and_the_driver_goes_idle(
        budgeted: tuple[Slack, SlackServer], fake: FakeSlack, llm: ScriptedLLM, rounds: str) -> None:
    slack, server = budgeted
    await slack.command(f"Should we adopt Rust? {rounds}")
    await server.idle()
    assert server.core is not None
    [first, second, *_] = check_buttons(fake)
    llm.cost_per_call = 0.06  # the first check spends the whole day's budget
    await slack.pick(first[0].ts, first[1]["value"], action_id="check:claims", user="U0002")
    await server.idle()
    ran = statements(server)
    status, _ = await slack.pick(second[0].ts, second[1]["value"], action_id="check:claims", user="U0002")
    assert status == 200
    # Never returns while a driver loops; the bound is only there so a loop fails the test instead of hanging it.
    await asyncio.wait_for(server.idle(), 10)
    said = [m for m in fake.messages if "did not check" in m.text]
    assert len(said) == 1 and "daily budget" in said[0].text and said[0].thread_ts == second[0].thread_ts
    assert len(ran) < 200, f"{len(ran)} statements after one click"
    async with server.core.store.tx() as tx:
        check = await tx.turn(factcheck.requested_key(second[1]["value"].split(":")[0], second[1]["value"]))
    assert check is not None and check.status == TurnStatus.SKIPPED
    before = len(ran)
    # asking again changes nothing
    await slack.pick(second[0].ts, second[1]["value"], action_id="check:claims", user="U0001")
    await asyncio.wait_for(server.idle(), 10)
    assert len([m for m in fake.messages if "did not check" in m.text]) == 1
    assert "could not be checked" in " ".join(e["text"] for e in fake.ephemerals if e["user"] == "U0001")
    assert len(ran) - before < 60


async def test_one_person_asks_for_a_bounded_number_of_checks_per_discussion(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust? --rounds 2")  # two rounds' posts with claims to check
    await server.idle()
    buttons = check_buttons(fake)
    assert len(buttons) > factcheck.CHECKS_PER_PERSON
    for message, button in buttons[:factcheck.CHECKS_PER_PERSON + 1]:
        await slack.pick(message.ts, button["value"], action_id="check:claims", user="U0002")
        await server.idle()
    refused = [e["text"] for e in fake.ephemerals if e["user"] == "U0002" and "the most one person" in e["text"]]
    assert len(refused) == 1
    checks = [m for m in fake.messages if m.username == "Fact-checker"]
    assert len(checks) == factcheck.CHECKS_PER_PERSON
    message, button = buttons[factcheck.CHECKS_PER_PERSON]
    await slack.pick(message.ts, button["value"], action_id="check:claims", user="U0003")  # someone else still may
    await server.idle()
    assert len([m for m in fake.messages if m.username == "Fact-checker"]) == factcheck.CHECKS_PER_PERSON + 1
