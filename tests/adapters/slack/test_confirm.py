"""Stop asks first: typed `/council stop ID` answers privately with Confirm / Cancel; the buttons carry confirms."""

from __future__ import annotations

import json
from typing import Any

from adapters.slack.server import SlackServer
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, fixture
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


def buttons(blocks: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["action_id"]: e for b in blocks if b["type"] == "actions" for e in b["elements"]}


async def press(slack: Slack, fake: FakeSlack, action_id: str, value: str, *, user: str = "U0001",
                team: str = "T0001", channel: str = "C0001", key: str = "confirm") -> None:
    """A click on a button of an ephemeral message: Slack sends no `message`, only the container and a
    response_url through which the app may replace or delete what the person sees."""
    payload = fixture("block_actions")
    payload["user"] = {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team}
    payload["team"] = {"id": team, "domain": "fake"}
    payload["channel"]["id"] = channel
    payload["container"] = {"type": "message", "message_ts": "1700000009.000009", "channel_id": channel,
                            "is_ephemeral": True}
    payload.pop("message")
    payload["response_url"] = fake.base_url.replace("/api/", f"/response/{key}")
    payload["actions"] = [{"action_id": action_id, "block_id": "actions:0", "value": value, "type": "button",
                           "text": {"type": "plain_text", "text": action_id}, "action_ts": "1.2"}]
    await slack.interaction(payload)


async def started(slack: Slack, server: SlackServer) -> str:
    await slack.command("Should we move to trunk-based development?")
    await server.idle()
    d = await only(server)
    assert d.status == Status.WAITING
    return d.id


async def test_typed_stop_asks_privately_and_stops_only_once_confirmed(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    did = await started(slack, server)
    await slack.command(f"stop {did}")
    await server.idle()
    assert (await only(server)).status == Status.WAITING, "a typed stop does nothing before it is confirmed"
    ask = fake.ephemerals[-1]
    assert ask["user"] == "U0001" and "Stop this discussion for good?" in ask["text"]
    choices = buttons(ask["blocks"])
    assert set(choices) == {"ctl:stop", "confirm:cancel"} and choices["ctl:stop"]["value"] == did

    await press(slack, fake, "ctl:stop", did, key="yes")
    await server.idle()
    d = await only(server)
    assert d.status == Status.STOPPED
    [answer] = [r for r in fake.responses if r["key"] == "yes"]
    assert answer["replace_original"] is True and "Stopped" in answer["text"] and not answer.get("blocks")
    assert any("stopped the discussion" in m.text for m in fake.thread("C0001", d.thread_ref))

    await press(slack, fake, "ctl:stop", did, key="again")  # the same Confirm pressed a second time
    await server.idle()
    [again] = [r for r in fake.responses if r["key"] == "again"]
    assert "already stopped" in again["text"]
    await slack.command(f"stop {did}")  # typed again: nothing left to stop, so no question
    await server.idle()
    assert "already stopped" in fake.ephemerals[-1]["text"] and not fake.ephemerals[-1].get("blocks")


async def test_cancel_removes_the_question_and_changes_nothing(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    did = await started(slack, server)
    await slack.command(f"stop {did}")
    await server.idle()
    await press(slack, fake, "confirm:cancel", did, key="no")
    await server.idle()
    assert (await only(server)).status == Status.WAITING
    [answer] = [r for r in fake.responses if r["key"] == "no"]
    assert answer.get("delete_original") is True


async def test_typed_stop_by_someone_who_may_not_is_refused_without_a_question(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    did = await started(slack, server)
    await slack.command(f"stop {did}", user="U0002")  # Lee neither started it nor is an admin
    await server.idle()
    refusal = fake.ephemerals[-1]
    assert refusal["user"] == "U0002" and "Only Dana or a workspace admin can stop" in refusal["text"]
    assert not refusal.get("blocks"), "nothing to confirm for someone who may not stop it"
    await slack.command(f"stop {did}", channel="C0002", user="U0003")  # an admin, from another channel: fine
    await server.idle()
    assert "confirm:cancel" in json.dumps(fake.ephemerals[-1].get("blocks") or [])
    await press(slack, fake, "ctl:stop", did, user="U0001", team="T0999", key="elsewhere")  # another workspace
    await server.idle()
    assert (await only(server)).status == Status.WAITING
    [answer] = [r for r in fake.responses if r["key"] == "elsewhere"]
    assert "can't find a discussion" in answer["text"]


async def test_stop_and_synthesize_buttons_carry_block_kit_confirms(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    did = await started(slack, server)
    d = await only(server)
    header = fake.find("C0001", d.thread_ref)
    assert header is not None and d.id == did
    controls = buttons(header.blocks)
    [choice] = [m for m in fake.thread("C0001", d.thread_ref) if '"next:synthesize"' in json.dumps(m.blocks)]
    for confirm in (controls["ctl:stop"]["confirm"], buttons(choice.blocks)["next:synthesize"]["confirm"]):
        assert confirm["title"]["text"] and confirm["confirm"]["text"] and confirm["deny"]["text"] == "Cancel"
    assert controls["ctl:stop"]["confirm"]["style"] == "danger"
    assert "ctl:synthesize" not in controls, "while the choice waits, it alone offers Synthesize"


async def test_a_confirm_pressed_after_its_response_url_expired_still_answers_privately(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    """Slack takes a response_url for 30 minutes (and five posts): a Confirm pressed later still stops the
    discussion, and the answer reaches the person another way rather than being lost."""
    did = await started(slack, server)
    await slack.command(f"stop {did}")
    await server.idle()
    fake.response_issued["late"] = fake.clock() - 31 * 60  # the question was asked over half an hour ago
    before = len(fake.ephemerals)
    await press(slack, fake, "ctl:stop", did, key="late")
    await server.idle()
    assert (await only(server)).status == Status.STOPPED
    assert not [r for r in fake.responses if r["key"] == "late"]
    assert any("Stopped" in e["text"] and e["user"] == "U0001" for e in fake.ephemerals[before:])
