"""`/council` subcommands and bad input: friendly ephemeral answers, permissions, signatures."""

from __future__ import annotations

import json
import time
from urllib.parse import urlencode

from adapters.slack.server import SlackServer
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import SECRET, Slack, fixture, sign
from tests.adapters.slack.test_confirm import press
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def start(slack: Slack, server: SlackServer, text: str = "Should we adopt Rust? --rounds 1") -> str:
    await slack.command(text)
    await server.idle()
    assert server.core is not None
    return (await server.core.service.guard.discussions())[0].id


def ephemerals_to(fake: FakeSlack, user: str) -> list[str]:
    return [e["text"] for e in fake.ephemerals if e["user"] == user]


async def test_bad_input_is_answered_in_the_ack_itself(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    for text, expected in [
        ("--rounds 2", "Please give a topic"),
        ("x" * 4001, "under 4,000"),
        ("Should we? --fast", "I don't know the option `--fast`"),
        ("Should we? --experts 12", "from 2 to 8"),
        ("stop", "Which discussion?"),
    ]:
        status, body = await slack.command(text)
        assert status == 200
        answer = json.loads(body)
        assert expected in answer["text"], (text, answer)
    await server.idle()
    assert server.core is not None and await server.core.service.guard.discussions() == []
    assert not fake.called("chat.postMessage")


async def test_help_list_status_and_unknown_ids(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    _, body = await slack.command("help")
    assert "/council &lt;topic&gt;" in json.loads(body)["text"]
    did = await start(slack, server)
    await slack.command("list")
    await slack.command("list", channel="C0999")
    await slack.command(f"status {did}")
    await slack.command("stop nope1234")
    await server.idle()
    texts = ephemerals_to(fake, "U0001")
    assert did in texts[0] and "done" in texts[0]
    assert "No discussions yet" in texts[1]
    assert texts[2].startswith(f"`{did}`")
    assert "can't find a discussion with id `nope1234`" in texts[3]


async def test_only_the_starter_or_an_admin_may_pause_or_stop(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Is a four-day week worth trying?")  # no --rounds: waits after round 1
    await server.idle()
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    assert d.status == Status.WAITING
    await slack.command(f"stop {d.id}", user="U0002")
    await server.idle()
    assert "Only Dana or a workspace admin can stop" in ephemerals_to(fake, "U0002")[0]
    await slack.command(f"stop {d.id}", user="U0003")  # an admin (users.info is_admin)
    await server.idle()
    [d] = await server.core.service.guard.discussions()
    assert d.status == Status.WAITING and "confirm:cancel" in str(fake.ephemerals[-1].get("blocks")), "asked first"
    await press(slack, fake, "ctl:stop", d.id, user="U0003")
    await server.idle()
    [d] = await server.core.service.guard.discussions()
    assert d.status == Status.STOPPED
    thread = fake.thread("C0001", d.thread_ref)
    assert any("Ines stopped the discussion" in m.text for m in thread)


async def test_forged_and_stale_signatures_are_rejected(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    body = urlencode(fixture("slash_command") | {"text": "help"})  # answered in the ack: nothing is posted
    status, text = await slack.post(body, "application/x-www-form-urlencoded", sign(body, secret="not-the-secret"))
    assert status == 401 and "/council &lt;topic&gt;" not in text
    stale = sign(body, timestamp=int(time.time()) - 600)
    status, text = await slack.post(body, "application/x-www-form-urlencoded", stale)
    assert status == 401 and "/council &lt;topic&gt;" not in text
    status, text = await slack.post(body, "application/x-www-form-urlencoded", {})
    assert status == 401 and "/council &lt;topic&gt;" not in text
    status, text = await slack.post(body, "application/x-www-form-urlencoded", sign(body, SECRET))
    assert status == 200 and "/council &lt;topic&gt;" in json.loads(text)["text"], "the same body, correctly signed"
    await server.idle()
    assert not fake.called("chat.postMessage")


async def test_council_alone_opens_the_start_form(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("")
    await server.idle()
    [opened] = fake.views
    assert opened["trigger_id"] and opened["view"]["callback_id"] == "council_start"
    blocks = {b["block_id"] for b in opened["view"]["blocks"]}
    assert {"topic", "experts", "mode", "roles", "rounds"} <= blocks
    assert json.loads(opened["view"]["private_metadata"])["channel"] == "C0001"


async def test_schedule_and_digest_subcommands_reach_the_service(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we adopt Rust?")
    await server.idle()
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    store = server.core.store
    await slack.command(f'schedule {d.id} "tomorrow 09:00"')
    await server.idle()
    async with store.tx() as tx:
        rounds = await tx.find_schedule("round", "slack", "T0001", d.id)
    assert rounds is not None and rounds.enabled and rounds.trigger.startswith("at:"), rounds
    assert rounds.next_run_at is not None and rounds.created_by == "U0001"

    await slack.command('digest cron "0 9 * * 1" <#C0042|decisions>')  # another channel: admins only
    await server.idle()
    assert "for another channel, ask a workspace admin" in ephemerals_to(fake, "U0001")[-1]
    await slack.command('digest cron "0 9 * * 1" <#C0042|decisions>', user="U0003")
    await server.idle()
    async with store.tx() as tx:
        digest = await tx.find_schedule("digest", "slack", "T0001", "C0042")
    assert digest is not None and digest.enabled and digest.trigger == "cron:0 9 * * 1", digest

    await slack.command("digest off <#C0042|decisions>", user="U0003")
    await server.idle()
    async with store.tx() as tx:
        off = await tx.find_schedule("digest", "slack", "T0001", "C0042")
        enabled = await tx.schedules(kind="digest")
    assert off is not None and off.id == digest.id and not off.enabled, off
    assert enabled == []
    texts = ephemerals_to(fake, "U0001") + ephemerals_to(fake, "U0003")
    assert len(texts) == 4 and not any("isn't available" in t or "went wrong" in t for t in texts), texts
