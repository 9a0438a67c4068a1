"""Failures on our side: every request still gets an answer, and a deleted message never wedges a discussion."""

from __future__ import annotations

import logging

import pytest

from adapters.slack.server import SlackServer
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_buttons import with_action
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

OUR_SIDE = "went wrong on our side; nothing was lost"


def answers(fake: FakeSlack, user: str = "U0001") -> list[str]:
    return [e["text"] for e in fake.ephemerals if e["user"] == user]


async def test_a_lookup_that_breaks_is_answered_privately_and_logged(
    slack: Slack, server: SlackServer, fake: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake.unreachable.add("users.info")  # a dropped connection, on every retry too: not a SlackApiError
    await slack.command("Should we adopt Rust? --rounds 1")
    await server.idle()
    [answer] = answers(fake)  # exactly one: the nested guards (run, then execute) answer once
    assert OUR_SIDE in answer and "try again" in answer
    assert server.core is not None and await server.core.service.guard.discussions() == []
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR and "StartDiscussion" in r.getMessage()]
    assert record.exc_info is not None and "U0001" in record.getMessage()
    fake.unreachable.clear()
    await slack.command("Should we adopt Rust? --rounds 1")  # trying again works
    await server.idle()
    assert (await only(server)).status == Status.DONE


async def test_user_errors_keep_their_own_words(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("status nope1234")
    await slack.command("stop nope1234")
    await server.idle()
    texts = answers(fake)
    assert len(texts) == 2 and all("can't find a discussion with id `nope1234`" in t for t in texts)


async def test_a_form_slack_will_not_open_is_explained(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.fail("views.open", "expired_trigger_id")
    await slack.command("")  # `/council` alone opens the start form
    await server.idle()
    [answer] = answers(fake)
    assert OUR_SIDE in answer and not fake.views


async def test_a_roster_form_slack_will_not_open_is_explained(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Which cloud should we standardise on? --confirm --experts 3")
    await server.idle()
    d = await only(server)
    [confirm] = with_action(fake, d.thread_ref, '"roster:start"')
    fake.fail("views.open", "expired_trigger_id")
    await slack.click(confirm.ts, "roster:modify", d.id, user="U0003")  # an admin, who may edit it
    await server.idle()
    [answer] = answers(fake, "U0003")
    assert OUR_SIDE in answer and not fake.views
    [told] = [e for e in fake.ephemerals if e["user"] == "U0003"]
    assert told["channel"] == "C0001" and told["thread_ts"] == d.thread_ref  # where the button was
    assert (await only(server)).status == Status.AWAITING_CONFIRMATION


async def test_a_reply_in_the_thread_that_breaks_is_answered(slack: Slack, server: SlackServer,
                                                             fake: FakeSlack) -> None:
    await slack.command("Is a four-day week worth trying?")  # waits after round 1
    await server.idle()
    d = await only(server)
    fake.unreachable.add("users.info")
    await slack.reply(d.thread_ref, "What about on-call cover?", user="U0002")
    await server.idle()
    [answer] = answers(fake, "U0002")
    assert OUR_SIDE in answer


async def test_a_deleted_poll_does_not_wedge_the_discussion(slack: Slack, server: SlackServer,
                                                           fake: FakeSlack) -> None:
    """Closing the poll edits its message (chat.update): gone, Slack answers message_not_found; the rest goes on."""
    await slack.command("Should we move the office to Lisbon?")
    await server.idle()
    d = await only(server)
    [poll] = with_action(fake, d.thread_ref, '"vote:0"')
    fake.messages.remove(poll)  # someone deleted it
    [choice] = with_action(fake, d.thread_ref, '"next:synthesize"')
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize")
    await server.idle()
    assert [c.params["ts"] for c in fake.called("chat.update")].count(poll.ts) >= 1  # it was tried, and refused
    d = await only(server)
    assert d.status == Status.DONE
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert not await tx.pending_posts(d.id)
    after = [m.text for m in fake.thread("C0001", d.thread_ref)]
    assert any("*Final synthesis.*" in t for t in after)


async def test_slack_asking_to_slow_down_never_blocks_a_discussion(slack: Slack, server: SlackServer,
                                                                  fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust? --rounds 1")
    fake.rate_limit("chat.postMessage", times=20, retry_after=1)  # far more 429s in a row than any retry count
    await server.idle()
    d = await only(server)
    assert d.status == Status.DONE and not d.blocked_reason
    assert not [m for m in fake.messages if m.channel.startswith("D")]  # the starter was never told "blocked"
    assert fake.answered_429["chat.postMessage"] == 20
