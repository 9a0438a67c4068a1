"""The synthesis as a living Slack canvas: created, linked in the thread, edited by later syntheses; without the
canvases:write scope, the thread says how to add it and the discussion goes on."""

from __future__ import annotations

from adapters.slack.server import SlackServer
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack


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
    assert len(said(fake, "The canvas is updated")) == 2
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
