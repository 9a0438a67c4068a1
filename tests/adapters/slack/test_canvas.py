"""The synthesis as a living Slack canvas: created, linked in the thread, edited by later syntheses; without the
canvases:write scope, the thread says how to add it and the discussion goes on."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from adapters.slack.server import SlackServer
from bot.wiring import build_app
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, settings
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


def said(fake: FakeSlack, words: str) -> list[str]:
    return [m.text + str(m.blocks) for m in fake.messages if words in m.text or words in str(m.blocks)]


async def test_the_synthesis_becomes_a_canvas_linked_in_the_thread_and_later_rounds_edit_it(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status.value == "done"
    [canvas] = fake.canvases.values()  # one canvas, however many syntheses
    assert [c.params["title"] for c in fake.called("canvases.create")] == ["Council: Should we adopt Rust?"]
    # Round 1's synthesis created it; round 2's and the final synthesis replaced it in place.
    assert canvas.edits == 2
    for change in (c.params["changes"] for c in fake.called("canvases.edit")):
        assert change[0]["operation"] == "replace" and change[0]["document_content"]["type"] == "markdown"
    assert canvas.markdown.startswith("# Should we adopt Rust?\n\n## Final synthesis")
    assert "**Stances after round 2**" in canvas.markdown and "## Open questions" in canvas.markdown
    assert canvas.access == {"C0001": "read"}
    # The thread links it, with the address Slack opens canvases at.
    link = f"https://fake.slack.test/docs/T0001/{canvas.id}"
    [first] = said(fake, "kept in a canvas")
    assert link in first
    assert not said(fake, "The canvas is updated"), "one canvas notice per discussion: its link still serves"
    assert all(m.thread_ts == d.thread_ref for m in fake.messages if "canvas" in m.text)


async def test_without_the_canvas_scope_council_says_how_to_add_it_and_everything_else_works(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.missing_scopes.add("canvases:write")
    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status.value == "done" and not fake.canvases
    [help_] = said(fake, "lacks the `canvases:write` scope")  # said once, not after every synthesis
    assert "OAuth &amp; Permissions" in help_ or "OAuth & Permissions" in help_
    assert said(fake, "Final synthesis")  # the synthesis itself is in the thread
    assert not any("kept in a canvas" in m.text for m in fake.messages)


async def test_on_a_free_workspace_the_synthesis_becomes_a_canvas_tabbed_in_the_channel(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    """A free plan has no standalone canvases (canvases.create without channel_id is refused there): the
    synthesis becomes a canvas tabbed in the channel (canvases.create with channel_id), created once and edited by the
    later syntheses; never the channel's one canvas (conversations.canvases.create)."""
    fake.free_teams.add("T0001")
    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status.value == "done"
    [canvas] = fake.canvases.values()
    assert canvas.channel_id == "C0001" and not canvas.channel_canvas and canvas.edits == 2
    assert canvas.markdown.startswith("# Should we adopt Rust?\n\n## Final synthesis")
    creates = fake.called("canvases.create")
    assert [c.params.get("channel_id") for c in creates] == [None, "C0001"], "the plan is learnt once"
    assert not fake.called("conversations.canvases.create") and not fake.called("canvases.access.set")
    [first] = said(fake, "kept in a canvas")
    assert f"https://fake.slack.test/docs/T0001/{canvas.id}" in first


@pytest.mark.parametrize("free", [True, False])
async def test_every_discussion_sharing_a_channel_gets_its_own_canvas_on_every_plan(
        slack: Slack, server: SlackServer, fake: FakeSlack, free: bool) -> None:
    if free:
        fake.free_teams.add("T0001")
    fake.no_channel_canvases.add("T0001")  # a plan without channel canvases: Council never needs one
    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    await slack.command("Should we adopt Go? --rounds 2")
    await server.idle()
    assert server.core is not None
    discussions = await server.core.service.guard.discussions()
    assert len(discussions) == 2 and all(d.status.value == "done" for d in discussions)
    canvases = sorted(fake.canvases.values(), key=lambda c: c.title)
    assert [c.title for c in canvases] == ["Council: Should we adopt Go?", "Council: Should we adopt Rust?"]
    for canvas, topic in zip(canvases, ("Go", "Rust"), strict=True):  # each edited by its own discussion only
        assert canvas.edits == 2 and canvas.markdown.startswith(f"# Should we adopt {topic}?")
        assert canvas.access.get("C0001") in ("read", "write")
    assert len(said(fake, "kept in a canvas")) == 2 and not said(fake, "kept in this thread only")
    assert not fake.called("conversations.canvases.create")


async def test_a_failure_after_the_canvas_is_created_never_makes_a_second_one(
        fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> None:
    """canvases.create and canvases.access.set are two calls: when the second fails, the outbox's retry goes on
    with the canvas the first made."""
    clock = FakeClock()
    s = settings(tmp_path)
    server = SlackServer(skipping_config(fake), lambda chats: build_app(s, chats, llm=llm, clock=clock))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
            fake.fail("canvases.access.set", "internal_error", times=1)
            await slack.command("Should we adopt Rust? --rounds 1")
            await server.idle()
            assert server.core is not None
            for _ in range(5):  # the refused post waits its backoff; the sweep then sends what is due
                clock.advance(seconds=30)
                await server.core.driver.sweep()
                await server.idle()
            d = (await server.core.service.guard.discussions())[0]
            assert d.status.value == "done"
    finally:
        await server.stop()
    [canvas] = fake.canvases.values()
    assert len(fake.called("canvases.create")) == 1 and len(fake.called("canvases.access.set")) >= 2
    assert canvas.access == {"C0001": "read"} and "## Final synthesis" in canvas.markdown
    assert len(said(fake, "kept in a canvas")) == 1


async def test_a_channel_slack_would_not_share_the_canvas_with_is_told_so(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    """canvases.access.set can answer ok and still list the channel in failed_to_update_channel_ids."""
    fake.unshareable.add("C0001")
    await slack.command("Should we adopt Rust? --rounds 1")
    await server.idle()
    [canvas] = fake.canvases.values()
    assert canvas.access == {}
    assert not said(fake, "kept in a canvas"), "no link the channel cannot open"
    [told] = said(fake, "would not share")
    assert "synthesis is in this thread" in told


async def test_a_missing_canvas_scope_is_remembered_not_asked_again_at_every_synthesis(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.missing_scopes.add("canvases:write")
    await slack.command("Should we adopt Rust? --rounds 2")
    await server.idle()
    creates = [c for c in fake.calls if c.method in ("canvases.create", "conversations.canvases.create")]
    assert len(creates) == 1, [c.method for c in creates]


async def test_a_lost_answer_to_the_canvas_link_neither_repeats_the_link_nor_makes_a_second_canvas(
        fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> None:
    """The link to a new canvas is posted but Slack's answer is lost: the outbox tries the document again, finds
    its canvas and its link, and later syntheses edit that canvas."""
    clock = FakeClock()
    s = settings(tmp_path)
    server = SlackServer(skipping_config(fake), lambda chats: build_app(s, chats, llm=llm, clock=clock))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
            fake.lose_answer_when("chat.postMessage", lambda p: "kept in a canvas" in str(p.get("text")))
            await slack.command("Should we adopt Rust? --rounds 2")
            await server.idle()
            assert server.core is not None
            for _ in range(5):  # the post waits its backoff; the sweep then sends what is due
                clock.advance(seconds=30)
                await server.core.driver.sweep()
                await server.idle()
            d = (await server.core.service.guard.discussions())[0]
            assert d.status.value == "done"
    finally:
        await server.stop()
    [canvas] = fake.canvases.values()
    assert canvas.edits == 2 and "## Final synthesis" in canvas.markdown
    assert len(said(fake, "kept in a canvas")) == 1


async def test_a_topics_link_goes_live_neither_in_the_canvas_notice_nor_in_the_canvas_heading(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    # A topic written to close Council's own link label early and open one of its own.
    await slack.command("Pay now](https://evil.example/a) or [sign in](https://bank.evil.example/b)? --rounds 1")
    await server.idle()
    [canvas] = fake.canvases.values()
    heading = canvas.markdown.splitlines()[0]
    assert heading == "# Pay now](`https://evil.example/a`) or sign in (`https://bank.evil.example/b`)?"
    [notice] = [m for m in fake.messages if "kept in a canvas" in m.text + str(m.blocks)]
    wire = notice.text + str(notice.blocks)
    assert "|Council: Pay now)(`https://evil.example/a`) or sign in (`https://bank.evil.example/b`)?>" in wire
    assert "<https://evil.example" not in wire and "<https://bank.evil.example" not in wire
