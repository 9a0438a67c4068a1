"""Blocks Slack refuses: the post is re-rendered as plain sections that keep every line, split across messages where
needed, and says so; never its notification text cut to one line."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.slack.chat import SlackChat
from adapters.slack.render import render
from core.models import Action, Discussion, Persona, Post, Role
from tests.adapters.slack.conftest import skipping_chat
from tests.fakes.slack_api import LIMITS, FakeSlack, block_text

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")


@pytest.fixture
def fake(fake: FakeSlack) -> FakeSlack:
    """The package's fake Slack (the manifest's scopes), with the app a member of one channel."""
    fake.add_channel("C0001", member=True)
    return fake


async def started(fake: FakeSlack) -> tuple[Discussion, SlackChat]:
    c = skipping_chat(fake)
    d = Discussion(id="d1", topic="Trunk-based development?", platform="slack", workspace="T0001", channel="C0001",
                   created_at=NOW, updated_at=NOW)
    d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
    return d, c


def shown(fake: FakeSlack, d: Discussion) -> str:
    return "\n".join(b["text"]["text"] for m in fake.thread("C0001", d.thread_ref)[1:] for b in m.blocks
                     if b.get("type") == "section")


async def test_refused_blocks_become_plain_sections_that_keep_every_line_split_across_messages(
        fake: FakeSlack) -> None:
    d, c = await started(fake)
    lines = [f"Line {i:02d}: " + "the argument goes on " * 20 for i in range(20)]
    lines[-1] += " and on" * ((8950 - len("\n".join(lines))) // 7)  # just within one message of blocks
    post = Post(kind="turn", key="d1:r1:s1:ada", text="\n".join(lines), persona=ADA, title="Round 1")
    assert len(render(post)) == 1
    fake.fail("chat.postMessage", "msg_blocks_too_long")
    ts = await c.publish(d, post)
    parts = fake.thread("C0001", d.thread_ref)[1:]
    assert len(parts) == 2 and parts[0].ts == ts
    text = shown(fake, d)
    positions = [text.index(line.strip()) for line in lines]
    assert positions == sorted(positions)  # every line, in order, none cut
    assert "shown as plain text" in parts[0].blocks[0]["text"]["text"]
    for part in parts:
        assert block_text(part.blocks) <= LIMITS["block_text"] and len(part.blocks) <= LIMITS["blocks"]
        assert all(b["type"] == "section" and len(b["text"]["text"]) <= LIMITS["section"] for b in part.blocks)
    assert [p.metadata["event_payload"] for p in parts if p.metadata] == [
        {"key": post.key, "part": 0, "piece": 0}, {"key": post.key, "part": 0, "piece": 1}]
    assert await skipping_chat(fake).find(d, post.key) == ts  # the first piece is the post


async def test_a_refused_post_with_buttons_says_its_buttons_could_not_be_shown(fake: FakeSlack) -> None:
    d, c = await started(fake)
    post = Post(kind="choice", key="d1:r1:next", text="What next?\nA second line.",
                actions=[Action(id="next:round", label="Another round", value="d1")])
    fake.fail("chat.postMessage", "invalid_blocks")
    await c.publish(d, post)
    [part] = fake.thread("C0001", d.thread_ref)[1:]
    assert "buttons could not be shown" in part.blocks[0]["text"]["text"]
    assert "What next?\nA second line." in shown(fake, d)


async def test_an_edit_whose_blocks_are_refused_keeps_every_line_and_edits_its_pieces_in_place_next_time(
        fake: FakeSlack) -> None:
    d, c = await started(fake)
    lines = [f"Line {i:02d}: " + "the argument goes on " * 20 for i in range(20)]
    lines[-1] += " and on" * ((8950 - len("\n".join(lines))) // 7)
    post = Post(kind="turn", key="d1:r1:s1:ada", text="\n".join(lines), persona=ADA, title="Round 1")
    ts = await c.publish(d, Post(kind="turn", key=post.key, text="short", persona=ADA))
    for _ in range(2):  # the same post edited twice: its second piece is found again, not posted again
        fake.fail("chat.update", "msg_blocks_too_long")
        await c.update(d, ts, post)
        parts = fake.thread("C0001", d.thread_ref)[1:]
        assert parts[0].ts == ts and len(parts) == 2
        text = shown(fake, d)
        assert all(line.strip() in text for line in lines)
