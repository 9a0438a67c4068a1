"""`--rounds N` in a moderated discussion started in Slack runs "another round" on the same topic each time (the
real Slack app, the real anthropic SDK on the loopback Messages API); a deep dive stays a choice people make."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from core.models import Phase, Status
from tests.adapters.slack.on_model import app_on_model
from tests.core.deliberation.test_floor_and_rounds import openings
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_api import FakeSlack


@pytest.fixture
async def anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_rounds_n_runs_another_round_on_the_same_topic_in_slack(
        fake: FakeSlack, anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with app_on_model(fake, anthropic.base_url, tmp_path) as (slack, server):
        await slack.command("Should we adopt Rust for billing? --rounds 2 --experts 2")
        await server.idle()
        assert server.core is not None
        [d] = await server.core.service.guard.discussions()
        async with server.core.store.tx() as tx:
            suggested = [t.data for t in await tx.turns(d.id) if t.phase == Phase.ROUND_SYNTHESIS and t.round == 1]
    assert d.status == Status.DONE and d.round == 2, (d.status, d.blocked_reason)
    assert suggested and suggested[0] and suggested[0]["next_topic_suggestions"], "a deep dive was on offer"
    assert openings(anthropic) == {1: "Should we adopt Rust for billing?", 2: "Should we adopt Rust for billing?"}
    assert d.round_topic == "Should we adopt Rust for billing?"
