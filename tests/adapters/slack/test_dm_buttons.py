"""The starter's private "blocked" notice: its Retry and Stop buttons, pressed in the direct message with the app
(a signed block_actions payload from channel D…, as Slack sends it), act on the discussion the button names."""

from __future__ import annotations

from adapters.slack.server import SlackServer
from core.models import Discussion, Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_buttons import buttons, with_action
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack, Msg

server = skipping.server  # the app on skipping time, in place of the conftest's

CANT_FIND = "can't find a discussion"


async def blocked_in_an_archived_channel(slack: Slack, server: SlackServer, fake: FakeSlack) -> tuple[Discussion, Msg]:
    """A discussion that waits after round 1; its channel is archived; Another round can then never post."""
    await slack.command("Should we move the team to a four-day week?")
    await server.idle()
    d = await only(server)
    [choice] = with_action(fake, d.thread_ref, '"next:another_round"')
    fake.channels["C0001"]["is_archived"] = True
    await slack.click(choice.ts, "next:another_round", f"{d.id}|another_round")
    await server.idle()
    d = await only(server)
    assert d.status == Status.BLOCKED
    [notice] = [m for m in fake.messages if m.channel == fake.dm("U0001")]
    assert [b["action_id"] for b in buttons(notice)] == ["fail:retry", "fail:stop"]
    return d, notice


async def test_retry_pressed_in_the_direct_message_resumes_the_discussion(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    d, notice = await blocked_in_an_archived_channel(slack, server, fake)
    fake.channels["C0001"]["is_archived"] = False  # someone unarchived it, as the notice asked
    await slack.click(notice.ts, "fail:retry", d.id, channel=notice.channel)
    await server.idle()
    assert not [e for e in fake.ephemerals if CANT_FIND in e["text"]]
    assert (await only(server)).status != Status.BLOCKED
    assert any("Round 2" in str(m.blocks) for m in fake.thread("C0001", d.thread_ref))  # the round went on


async def test_stop_pressed_in_the_direct_message_stops_it(slack: Slack, server: SlackServer,
                                                           fake: FakeSlack) -> None:
    d, notice = await blocked_in_an_archived_channel(slack, server, fake)
    await slack.click(notice.ts, "fail:stop", d.id, channel=notice.channel)
    await server.idle()
    assert (await only(server)).status == Status.STOPPED
    assert not [e for e in fake.ephemerals if CANT_FIND in e["text"]]
