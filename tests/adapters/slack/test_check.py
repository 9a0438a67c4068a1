"""Fact checks from Slack: `--check` on /council, the form's checkbox, and *Check claims* on a persona's post."""

from __future__ import annotations

from adapters.slack import interactions as ix
from adapters.slack import translate as tr
from adapters.slack.server import SlackServer
from core.control import commands as c
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack

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
    buttons = [(m, e) for m in fake.messages for b in m.blocks if b["type"] == "actions" for e in b["elements"]
               if e.get("action_id") == "check:claims"]
    assert buttons, "every persona post offers Check claims"
    message, button = buttons[0]
    status, _ = await slack.click(message.ts, "check:claims", button["value"], user="U0002")  # anyone may ask
    assert status == 200
    await server.idle()
    [check] = [m for m in fake.messages if "could not check" in m.text or "could not check" in str(m.blocks)]
    assert check.thread_ts == message.thread_ts and check.username == "Fact-checker"
    assert "offline model cannot search the web" in check.text + str(check.blocks)
