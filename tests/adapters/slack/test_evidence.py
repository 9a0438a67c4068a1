"""What the issue is done by: a moderated discussion with --check, in Slack, with the real anthropic SDK on the
loopback Messages API, shows a fact check with cited sources after its statements and its synthesis as a canvas."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.slack.on_model import app_on_model
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_api import FakeSlack


@pytest.fixture
async def anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        server.search_answer = [
            ("[false] Ada: Rust halves every team's bug count — ", []),
            ("the study found 20% fewer memory bugs.", [("https://research.example.org/rust", "Rust study")]),
            (" A blog says otherwise: https://made-up.example.com/post", []),
        ]
        yield server


async def test_a_checked_discussion_shows_cited_sources_after_its_statements_and_its_canvas(
        fake: FakeSlack, anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with app_on_model(fake, anthropic.base_url, tmp_path) as (slack, server):
        await slack.command("Should we adopt Rust? --rounds 1 --check --experts 2")
        await server.idle()
        thread = [m for m in fake.messages if m.thread_ts]
        [check] = [m for m in thread if m.username == "Fact-checker"]
        shown = check.text + str(check.blocks)
        assert "<https://research.example.org/rust|Rust study>" in shown and "made-up.example.com" not in shown
        statements = [i for i, m in enumerate(thread) if "Initial statement" in str(m.blocks)]
        assert statements and thread.index(check) > max(statements)
        [canvas] = fake.canvases.values()
        assert "## Final synthesis" in canvas.markdown and "**Claims that fell**" in canvas.markdown
        assert "https://research.example.org/rust" in canvas.markdown
        assert any(f"/docs/T0001/{canvas.id}" in m.text + str(m.blocks) for m in thread)
