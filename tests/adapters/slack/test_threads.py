"""Humans in the thread: replies heard and deduplicated, personas addressed, mentions, shortcut starts."""

from __future__ import annotations

import json

from adapters.slack.server import SlackServer
from core.models import Discussion, Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, fixture
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def only(server: SlackServer) -> Discussion:
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    return d


async def humans(server: SlackServer, d: Discussion) -> list:
    assert server.core is not None
    async with server.core.store.tx() as tx:
        return await tx.human_messages(d.id)


async def test_replies_are_heard_once_even_when_slack_retries(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we split the payments team?")
    await server.idle()
    d = await only(server)
    assert d.status == Status.WAITING
    m = fake.human("C0001", "What about the &lt;cost&gt; of on-call?", "U0002", d.thread_ref)
    event = {"type": "message", "user": "U0002", "text": m.text, "ts": m.ts, "thread_ts": d.thread_ref,
             "channel": "C0001", "event_ts": m.ts, "channel_type": "channel"}
    for retry in range(3):  # Slack's retries carry the same event_id
        headers = {"X-Slack-Retry-Num": str(retry + 1), "X-Slack-Retry-Reason": "http_timeout"} if retry else {}
        status, _ = await slack.event(event, event_id="EvSAME", headers=headers)
        assert status == 200
    await server.idle()
    [h] = await humans(server, d)
    assert h.author_name == "Lee" and h.text == "What about the <cost> of on-call?" and h.answered
    thread = fake.thread("C0001", d.thread_ref)
    answer = [x for x in thread if x.username == "Moderator"][-1]
    assert float(answer.ts) > float(m.ts)  # the moderator answered between rounds


async def test_naming_a_persona_addresses_it_and_bots_and_edits_are_ignored(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we rewrite the billing service?")
    await server.idle()
    d = await only(server)
    await slack.reply(d.thread_ref, "Contrarian, is that really the biggest risk?", user="U0002")
    bot = {"type": "message", "subtype": "bot_message", "bot_id": "BOTHER", "text": "beep", "ts": "1.1",
           "thread_ts": d.thread_ref, "channel": "C0001"}
    edit = {"type": "message", "subtype": "message_changed", "channel": "C0001", "ts": "1.2",
            "message": {"text": "edited", "user": "U0001"}}
    top = {"type": "message", "user": "U0001", "text": "unrelated", "ts": "1.3", "channel": "C0001"}
    for event in (bot, edit, top):
        assert (await slack.event(event))[0] == 200
    await server.idle()
    [h] = await humans(server, d)
    assert h.addressed_to == "contrarian" and h.answered
    last = fake.thread("C0001", d.thread_ref)[-1]
    assert last.username == "Contrarian"


async def test_mentions_steer_a_discussion_from_its_thread(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt a monorepo?")
    await server.idle()
    d = await only(server)
    await slack.mention("<@UBOT> status", thread_ts=d.thread_ref)
    await slack.mention("<@UBOT> pause", thread_ts=d.thread_ref, user="U0002")
    await server.idle()
    assert (await only(server)).status == Status.WAITING
    texts = [e["text"] for e in fake.ephemerals]
    assert texts[0].startswith(f"`{d.id}`") and "waiting" in texts[0]
    assert "Only Dana or a workspace admin can pause" in texts[1]
    await slack.mention("<@UBOT> pause", thread_ts=d.thread_ref)
    await server.idle()
    assert (await only(server)).status == Status.PAUSED
    await slack.mention("<@UBOT> resume", thread_ts=d.thread_ref)
    await server.idle()
    assert (await only(server)).status == Status.WAITING
    await slack.mention("<@UBOT> synthesize", thread_ts=d.thread_ref)
    await server.idle()
    assert (await only(server)).status == Status.DONE


async def test_a_mention_in_an_ordinary_thread_starts_a_council_about_it(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    fake.add_channel("C0001", member=True)  # Slack sends app mentions only from channels the app is in
    parent = fake.human("C0001", "Our build takes 40 minutes. Should we split the test suite?", "U0002")
    fake.human("C0001", "I think flaky tests are the real problem", "U0001", parent.ts)
    await slack.mention("<@UBOT> --rounds 1", thread_ts=parent.ts)
    await server.idle()
    d = await only(server)
    assert d.thread_ref == parent.ts and d.topic.startswith("Our build takes 40 minutes")
    assert "Lee: Our build takes 40 minutes" in d.context and "Dana: I think flaky tests" in d.context
    thread = fake.thread("C0001", parent.ts)
    header = next(m for m in thread if m.text.startswith("Council:"))
    assert header.thread_ts == parent.ts and d.status == Status.DONE


async def test_the_message_shortcut_prefills_the_start_form_for_that_thread(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    parent = fake.human("C0001", "Should we merge our services back into a monolith?", "U0002")
    fake.human("C0001", "Our deploys take an hour &amp; break weekly", "U0003", parent.ts)
    payload = fixture("message_action")
    payload["message"] |= {"ts": parent.ts, "text": parent.text}
    status, _ = await slack.interaction(payload)
    assert status == 200
    await server.idle()
    assert server.core is not None and await server.core.service.guard.discussions() == [], "nothing starts unreviewed"
    [opened] = fake.views
    form = opened["view"]
    topic = next(b for b in form["blocks"] if b["block_id"] == "topic")
    assert topic["element"]["initial_value"] == parent.text
    assert json.loads(form["private_metadata"]) == {"channel": "C0001", "thread_ts": parent.ts}

    submit = fixture("view_submission")
    submit["view"]["private_metadata"] = form["private_metadata"]
    submit["view"]["state"]["values"]["topic"]["value"]["value"] = parent.text + " (edited)"
    submit["view"]["state"]["values"]["rounds"]["value"]["selected_option"]["value"] = "steer"
    status, _ = await slack.interaction(submit)
    assert status == 200
    await server.idle()
    d = await only(server)
    assert d.thread_ref == parent.ts and d.topic == parent.text + " (edited)" and d.created_by == "U0001"
    assert "deploys take an hour & break weekly" in d.context, "the thread is the discussion's context"
    await slack.interaction(payload)  # a second start in the same thread is refused politely, in the form it opened
    await server.idle()
    assert len(fake.views) == 2 and "already hosts a council" in json.dumps(fake.views[-1]["view"])


async def test_a_mention_arriving_as_two_events_counts_once(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt a monorepo?")
    await server.idle()
    d = await only(server)
    m = fake.human("C0001", "<@UBOT> Historian, what did we decide last time?", "U0002", d.thread_ref)
    base = {"user": "U0002", "text": m.text, "ts": m.ts, "thread_ts": d.thread_ref, "channel": "C0001",
            "event_ts": m.ts}
    await slack.event({"type": "message", **base, "channel_type": "channel"})
    await slack.event({"type": "app_mention", **base}, kind="event_app_mention")
    top = fake.human("C0001", "<@UBOT>", "U0002")
    await slack.event({"type": "app_mention", "user": "U0002", "text": top.text, "ts": top.ts, "channel": "C0001"},
                      kind="event_app_mention")
    await server.idle()
    [h] = await humans(server, d)
    assert h.text == "Historian, what did we decide last time?" and h.addressed_to == "historian"
    assert fake.thread("C0001", d.thread_ref)[-1].username == "Historian"
    assert [e["user"] for e in fake.ephemerals] == ["U0002"] and "/council &lt;topic&gt;" in fake.ephemerals[0]["text"]
