"""Starting discussions over HTTP through the real AsyncApp: the header, the thread, the personas."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from pathlib import Path

import aiohttp

from adapters.slack.server import SlackServer
from bot.wiring import App, build_app
from core.models import Status
from core.ports import ChatPort
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, settings
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.clock import settle
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def discussions(server: SlackServer) -> list:
    assert server.core is not None
    return await server.core.service.guard.discussions()


async def test_healthz_answers_once_migrated(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> None:
    migrate = asyncio.Event()
    s = settings(tmp_path)

    async def build(chats: Mapping[str, ChatPort]) -> App:
        await migrate.wait()  # the port is already open: the platform's health check may come now
        return await build_app(s, chats, llm=llm)

    server = SlackServer(skipping_config(fake), build)
    starting = asyncio.create_task(server.start())
    try:
        await settle()  # binding the port takes loop passes, no timer: start() then waits for the migration
        assert server.port and not starting.done(), "the server should listen before it migrates"
        url = f"http://127.0.0.1:{server.port}/healthz"
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as resp:
                assert resp.status == 503, "not healthy before the database is migrated"
            migrate.set()
            await asyncio.wait_for(starting, 10)
            async with session.get(url) as resp:
                assert resp.status == 200
    finally:
        migrate.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(starting, 10)
        await server.stop()


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
    assert "trunk-based" in text and "(moderator)" in text and "(expert)" in text
    assert "Finished after 1 round" in text and "$0.00 spent" in text, "the header says where it stands"
    assert [e["action_id"] for b in header.blocks if b["type"] == "actions" for e in b["elements"]] == \
        ["ctl:export"], "a finished discussion offers no Pause, Resume or Stop"
    edits = [u for u in fake.called("chat.update") if u.params.get("ts") == d.thread_ref]
    shown = [next(w for w in ("Running", "Writing the final synthesis", "Finished") if w in str(u.params["blocks"]))
             for u in edits]
    assert shown == ["Running", "Writing the final synthesis", "Finished"], "one edit per change, not per turn"
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
