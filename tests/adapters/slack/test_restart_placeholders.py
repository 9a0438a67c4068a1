"""A restart mid-step on Slack: the "is thinking…" placeholders a dead process left are removed by the process that
takes over, even when it cannot read the thread to find them, so no turn shows twice."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import aiohttp
from sqlalchemy import func, select

from adapters.slack.server import SlackServer
from bot.wiring import App, build_app
from core.ports import ChatPort
from core.storage import tables as t
from tests.adapters.slack.conftest import Slack, settings
from tests.adapters.slack.skipping import skipping_chat, skipping_config
from tests.fakes.clock import FakeClock
from tests.fakes.cluster import until
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

TTL_S = 60.0


def half_written(fake: FakeSlack, thread: str) -> list:
    return [m for m in fake.thread("C0001", thread)[1:] if m.text.endswith(("is thinking…", "is writing…"))]


async def test_a_takeover_removes_the_placeholders_a_dead_process_left(fake: FakeSlack, tmp_path: Path) -> None:
    clock, stalled = FakeClock(), ScriptedLLM()
    gate = stalled.hold()  # the first process's model never answers: it dies while its turns are written
    s = settings(tmp_path).model_copy(update={"council_lease_ttl_s": TTL_S})

    async def first_app(chats: Mapping[str, ChatPort]) -> App:
        return await build_app(s, chats, llm=stalled, clock=clock, owner="the-first-process")

    server = SlackServer(skipping_config(fake), first_app)
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
            status, _ = await slack.command("Should we move to trunk-based development? --rounds 1")
            assert status == 200
        assert server.core is not None
        await until(lambda: [m for m in fake.messages if m.text.endswith("is thinking…")], 10, "a placeholder")
        [d] = await server.core.service.guard.discussions()
        left = half_written(fake, d.thread_ref)
        assert left, "a turn is being written when the process dies"

        # Its lease runs out; a new process, with nothing in memory and no thread read to spend, takes over.
        clock.advance(seconds=TTL_S + 1)
        fake.disabled.add("conversations.replies")
        second = await build_app(s, {"slack": skipping_chat(fake)}, llm=ScriptedLLM(), clock=clock,
                                 owner="the-next-process")
        try:
            assert await second.driver.sweep() == [d.id]
            await second.driver.idle()
            [done] = await second.service.guard.discussions()
            async with second.store.tx() as tx:  # its turns' posts settled their rows; the end deleted them
                kept = (await tx.conn.execute(select(func.count()).select_from(t.placeholders).where(
                    t.placeholders.c.discussion_id == d.id))).scalar()
        finally:
            gate.set()  # the first process's turns end: its lease is gone, so they record and post nothing
            await second.close(0)
        assert done.status.value == "done", done.blocked_reason
        assert not half_written(fake, d.thread_ref), "no placeholder of the dead process is left"
        assert kept == 0, f"a finished discussion keeps {kept} placeholder rows"
        assert {m.ts for m in left}.isdisjoint(m.ts for m in fake.thread("C0001", d.thread_ref))
        shown = [(m.metadata["event_payload"]["key"], m.metadata["event_payload"].get("part", 0))
                 for m in fake.thread("C0001", d.thread_ref) if (m.metadata or {}).get("event_type") == "council_post"]
        assert len(shown) == len(set(shown)), "no post shows twice"
    finally:
        await server.stop()


async def test_a_stopped_discussion_keeps_no_placeholder_rows(fake: FakeSlack, tmp_path: Path) -> None:
    """Stop pressed while turns are being written: the turns whose posts went out leave no row behind (only a
    finished discussion's end deleted them), and the turns set aside remove their placeholders."""
    llm = ScriptedLLM()
    server = SlackServer(skipping_config(fake), lambda chats: build_app(settings(tmp_path), chats, llm=llm))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
            assert (await slack.command("Should we move to trunk-based development? --rounds 2"))[0] == 200
            assert server.core is not None
            await until(lambda: [m for m in fake.messages if (m.metadata or {}).get("event_type") == "council_post"
                                 and m.metadata["event_payload"]["key"].count(":r2:")], 20, "round 2 has begun")
            gate = llm.hold()
            await until(lambda: llm.waiting > 0, 10, "a turn of round 2 is being written")
            [d] = await server.core.service.guard.discussions()
            header = fake.find("C0001", d.thread_ref)
            assert header is not None
            assert (await slack.click(header.ts, "ctl:stop", d.id))[0] == 200
            gate.set()
            await server.core.driver.idle()
            async with server.core.store.tx() as tx:
                kept = (await tx.conn.execute(select(func.count()).select_from(t.placeholders).where(
                    t.placeholders.c.discussion_id == d.id))).scalar()
            [stopped] = await server.core.service.guard.discussions()
    finally:
        await server.stop()
    assert stopped.status.value == "stopped"
    assert not half_written(fake, d.thread_ref), "no placeholder is left in the thread"
    assert kept == 0, f"a stopped discussion keeps {kept} placeholder rows"
