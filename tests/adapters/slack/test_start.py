"""Starting discussions over HTTP through the real AsyncApp: the header, the thread, the personas."""

from __future__ import annotations

import aiohttp

from adapters.slack.server import SlackServer
from core.models import Status
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack


async def discussions(server: SlackServer) -> list:
    assert server.core is not None
    return await server.core.service.discussions()


async def test_healthz_answers_once_migrated(server: SlackServer) -> None:
    async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{server.port}/healthz") as resp:
        assert resp.status == 200


async def test_council_posts_a_header_and_runs_the_discussion_in_its_thread(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    status, body = await slack.command("Should we move to trunk-based development? --rounds 1")
    assert status == 200 and body == ""
    await server.idle()
    [d] = await discussions(server)
    assert d.status == Status.DONE and d.workspace == "T0001" and d.channel == "C0001"
    assert d.created_by == "U0001" and d.created_by_name == "Dana" and d.tz == "Europe/Berlin"
    header = fake.find("C0001", d.thread_ref)
    assert header is not None and header.thread_ts is None
    text = str(header.blocks)
    assert "trunk-based" in text and "(moderator)" in text and "(expert)" in text and "ctl:stop" in text
    assert header.metadata == {"event_type": "council_post", "event_payload": {"key": f"{d.id}:header", "part": 0}}
    thread = fake.thread("C0001", d.thread_ref)[1:]
    assert len(thread) > 8 and all(m.thread_ts == d.thread_ref for m in thread)
    names = {m.username for m in thread}
    assert {"Moderator", "Historian", "Contrarian", "Cross-Domain Thinker"} <= names
    turns = [m for m in thread if m.username == "Contrarian"]
    assert turns[0].icon_emoji == ":smiling_imp:" and "Offline model" in str(turns[0].blocks)
    assert not any("is thinking" in m.text for m in thread)  # every placeholder became its turn
    thinking = [c for c in fake.called("chat.postMessage") if "council_thinking" in str(c.params.get("metadata"))]
    assert thinking and len(fake.called("chat.update")) >= len(thinking)
