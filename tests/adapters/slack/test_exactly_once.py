"""Exactly once on Slack: a post whose answer was lost (the connection dropped after Slack stored it) is looked for
by its metadata, never sent twice; one that never landed is sent again."""

from __future__ import annotations

from datetime import UTC, datetime

import aiohttp
import pytest

from adapters.slack.chat import SlackChat
from adapters.slack.clients import web_client
from adapters.slack.landed import NotKnown, post_once
from core.models import Discussion, Persona, Post, Role
from tests.adapters.slack.conftest import skipping_chat
from tests.fakes.slack_api import FakeSlack

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")


@pytest.fixture
def fake(fake: FakeSlack) -> FakeSlack:
    """The package's fake Slack (the manifest's scopes), with the app a member of one channel."""
    fake.add_channel("C0001", member=True)
    return fake


async def started(c: SlackChat) -> Discussion:
    d = Discussion(id="d1", topic="Trunk-based development?", platform="slack", workspace="T0001", channel="C0001",
                   created_at=NOW, updated_at=NOW)
    d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
    return d


def turn(key: str, text: str = "I think we should.") -> Post:
    return Post(kind="turn", key=key, text=text, persona=ADA, title="Round 1 · Opening statement")


def keyed(fake: FakeSlack, key: str) -> list[str]:
    return [m.ts for m in fake.messages if (m.metadata or {}).get("event_payload", {}).get("key") == key]


async def test_a_post_stored_whose_answer_was_lost_is_found_by_its_metadata_not_sent_twice(fake: FakeSlack) -> None:
    c = skipping_chat(fake)
    d = await started(c)
    for i in range(20):  # a busy thread: the post is looked for after the newest message known, not from the start
        fake.human("C0001", f"reply {i}", "U0002", thread_ts=d.thread_ref)
    known = await c.publish(d, turn("d1:r1:s1:ada"))
    c.last_ref = lambda _id: _newest(known)
    fake.lose_answer("chat.postMessage", drop=True)
    ts = await c.publish(d, turn("d1:r1:s2:ada"))
    assert keyed(fake, "d1:r1:s2:ada") == [ts]  # stored once, and its ts is the one returned
    assert len([x for x in fake.called("chat.postMessage") if "s2" in str(x.params.get("metadata"))]) == 1
    [look] = fake.called("conversations.replies")
    assert look.params["oldest"] == known and look.params["include_all_metadata"] in ("1", "true", True)


async def test_a_post_cut_before_slack_stored_it_is_sent_again_once(fake: FakeSlack) -> None:
    c = skipping_chat(fake)
    d = await started(c)
    fake.cut("chat.postMessage")
    ts = await c.publish(d, turn("d1:r1:s1:ada"))
    assert keyed(fake, "d1:r1:s1:ada") == [ts]
    assert len(fake.called("chat.postMessage")) == 3  # the header, the cut call, the one that landed


async def test_a_top_level_announcement_whose_answer_was_lost_is_found_in_the_channel(fake: FakeSlack) -> None:
    c = skipping_chat(fake)
    post = Post(kind="notice", key="digest:1:20260303T080000Z", title="Council digest", text="**Council digest**")
    fake.lose_answer("chat.postMessage", drop=True)
    ref = await c.announce("T0001", "C0001", post)
    assert keyed(fake, post.key) == [ref]
    assert fake.called("conversations.history")


async def test_an_unreadable_thread_leaves_the_post_to_the_outbox_rather_than_posting_blindly(
        fake: FakeSlack) -> None:
    c = skipping_chat(fake)
    d = await started(c)
    fake.lose_answer("chat.postMessage", drop=True)
    fake.fail("conversations.replies", "internal_error")
    with pytest.raises(NotKnown):
        await c.publish(d, turn("d1:r1:s1:ada"))
    assert len(keyed(fake, "d1:r1:s1:ada")) == 1  # stored once; the outbox's next attempt finds it (find)
    assert await skipping_chat(fake).find(d, "d1:r1:s1:ada") == keyed(fake, "d1:r1:s1:ada")[0]


async def test_the_client_retries_a_dropped_connection_only_for_methods_a_second_call_cannot_duplicate(
        fake: FakeSlack) -> None:
    client = web_client(fake.base_url, "xoxb-test")
    fake.lose_answer("chat.postMessage", drop=True)
    with pytest.raises(aiohttp.ClientError):
        await client.chat_postMessage(channel="C0001", text="hello")
    assert len(fake.messages) == 1 and len(fake.called("chat.postMessage")) == 1
    fake.lose_answer("conversations.history", drop=True)  # a read: asked again, answered
    resp = await client.conversations_history(channel="C0001")
    assert resp["ok"] and len(fake.called("conversations.history")) == 2
    # A message without metadata has nothing to be found by: its fate is left to the caller, never guessed.
    fake.lose_answer("chat.postMessage", drop=True)
    with pytest.raises(NotKnown):
        await post_once(client, {"channel": "C0001", "text": "no key"})
    assert len(fake.messages) == 2


async def _newest(ts: str) -> str:
    return ts
