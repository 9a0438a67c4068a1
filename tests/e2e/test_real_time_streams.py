"""Answers streamed over real time: the model writes at its own pace (the fake Messages API paced on the wall clock),
so these tests wait for it by nature, and live here, with the other tests allowed to wait on real time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.slack.server import BOT_SCOPES, SlackServer
from core.deliberation.schemas import RosterSpec
from core.llm import AnthropicLLM, LLMConfig
from tests.adapters.slack.conftest import TIME_SCALE, Seconds, Slack
from tests.adapters.slack.on_model import app_on_model
from tests.core.test_llm import SECRET, prompt
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_api import FakeSlack


async def test_a_structured_answer_longer_than_the_read_timeout_arrives_streamed_and_is_paid_once() -> None:
    # The model writes steadily (a chunk every 0.03 s) for longer in all than the client's read timeout (0.1 s):
    # httpx's read timeout counts real seconds between chunks, so only real time can show it is not hit.
    async with FakeAnthropic(delta_gap_s=0.03, chunk_chars=64) as slow:
        llm = AnthropicLLM(LLMConfig(api_key=SECRET, base_url=slow.base_url, turn_retry_delay_s=0.01, timeout_s=0.1))
        try:
            roster, _ = await llm.structured(prompt(), RosterSpec)
        finally:
            await llm.aclose()

    assert roster.experts
    assert slow.request_count == slow.completed_count == 1  # no timeout, so no retry billed the answer again
    assert slow.requests[0]["stream"] is True


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    """The fake Slack of tests/adapters/slack, with the scopes the app asks for at install."""
    async with FakeSlack(time_scale=TIME_SCALE, scopes={"xoxb-test": frozenset(BOT_SCOPES)},
                         trigger_clock=Seconds()) as f:
        f.add_user("U0001", "Dana")
        f.add_user("U0002", "Lee")
        f.add_user("U0003", "Ines", admin=True)
        yield f


@pytest.fixture
async def production(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[tuple[Slack, SlackServer]]:
    """The app as it runs: the HTTP app, each workspace's budgeted client, and the real anthropic SDK streaming
    from the Messages API (live text on, Slack's limits on skipping time), whose personas state their stances in
    their own words rather than naming a poll's option."""
    async with (FakeAnthropic(delta_gap_s=0.002) as anthropic,  # the model writes over time (its own pace)
                app_on_model(fake, anthropic.base_url, tmp_path) as app):
        yield app


async def test_a_one_round_discussion_on_the_real_path_brings_its_charts_into_the_thread(
        production: tuple[Slack, SlackServer], fake: FakeSlack) -> None:
    slack, server = production
    await slack.command("Should we adopt Rust? --rounds 1")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status.value == "done"
    assert any("is writing" in str(c.params.get("text")) for c in fake.called("chat.update")), "live text was on"
    assert fake.called("files.getUploadURLExternal") and fake.called("files.completeUploadExternal")
    [chart] = [f for f in fake.uploads if f["name"] == "stances.png"]
    assert chart["data"].startswith(b"\x89PNG") and chart["shares"]["thread_ts"] == d.thread_ref
    assert chart["alt_txt"].startswith("Grid of each persona's choice, round by round")
    assert "round 1 undecided" in chart["alt_txt"]  # what each persona's recorded stance says, in words
    synthesis = next(m for m in fake.messages if "Final synthesis" in m.text + str(m.blocks))
    shared = next(m for m in fake.messages if m.files)
    assert float(shared.ts) > float(synthesis.ts), "the charts follow the synthesis they illustrate"
