"""A restart mid-step: the "✍️ writing…" messages a dead process left are removed by the one that takes over, so
no turn shows twice (once half-written, once whole), in a thread and in a forum post alike."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.discord.chat import DiscordChat, Ref
from bot.wiring import build_app
from core.ports import Completion, Prompt, TextSink
from tests.adapters.discord.conftest import RecordingLLM, running, settings_for
from tests.fakes import discord_rules as r
from tests.fakes.clock import FakeClock
from tests.fakes.discord_api import FakeDiscord

TTL_S = 60.0
WRITING = "✍️ writing…"


class Stalled(RecordingLLM):
    """A model that writes the first words of each turn, then never answers: the process dies meanwhile."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        if on_text is not None:
            on_text(["I think the first thing to settle is"])
            await self.gate.wait()
        return await super().complete(prompt, on_text)


def writing(fake: FakeDiscord, thread: str) -> list[dict]:
    return [m for m in fake.thread_messages(thread) if WRITING in str(m.get("content") or "")]


@pytest.mark.parametrize("kind", [r.TEXT, r.FORUM])
async def test_a_takeover_removes_the_writing_messages_a_dead_process_left(fake: FakeDiscord, tmp_path: Path,
                                                                           kind: int) -> None:
    clock, stalled = FakeClock(), Stalled()
    async with running(fake, tmp_path, llm=stalled, clock=clock,
                       settings={"council_lease_ttl_s": TTL_S}) as first:
        channel = fake.channel_id if kind == r.TEXT else await fake.add_channel(kind, "decisions")
        i = await fake.slash(fake.add_user("Dana"), "council", channel_id=channel, topic="Kanban or Scrum?",
                             rounds=1)
        await fake.wait_for(lambda: i.followups)
        await fake.wait_for(lambda: any(writing(fake, cid) for cid, ch in fake.channels.items()
                                        if ch.get("parent_id") == channel))
        d = await first.discussion()
        left = writing(fake, d.thread_ref)
        assert left, "a turn is being written when the process dies"

        # The first process is gone (its model never answers, it renews nothing): its lease runs out, and a new
        # process, with nothing in memory, takes the discussion over.
        clock.advance(seconds=TTL_S + 1)
        chat = DiscordChat()
        chat.attach(first.client, first.app.store)
        second = await build_app(settings_for(fake, tmp_path, council_lease_ttl_s=TTL_S), {"discord": chat},
                                 llm=RecordingLLM(), owner="the-next-process", clock=clock)
        try:
            assert await second.driver.sweep() == [d.id]
            await second.driver.idle()
        finally:
            stalled.gate.set()  # the first process's turns end: its lease is gone, so they record and post nothing
            await second.close(0)
        done = await first.discussion()
        assert done.status.value == "done", done.blocked_reason

    assert not writing(fake, d.thread_ref), "no half-written turn is left in the thread"
    assert {m["id"] for m in left}.isdisjoint(m["id"] for m in fake.thread_messages(d.thread_ref))
    async with first.app.store.tx() as tx:
        sent = [(post, ref) for post, ref in await tx.posts(d.id) if ref and post.persona is not None]
    posted = {i for _, ref in sent for i in Ref.parse(ref, d).ids}
    shown = {m["id"] for m in fake.thread_messages(d.thread_ref) if m.get("webhook_id")}
    assert shown == posted, "every persona message in the thread is one recorded post: no turn shows twice"


class Streaming(RecordingLLM):
    """The offline model, each turn's first words shown before the whole of it."""

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        if on_text is not None:
            on_text(["I think the first thing to settle is"])
            await asyncio.sleep(0)  # the live message goes out before the finished post
        return await super().complete(prompt, on_text)


async def test_a_live_message_that_became_its_post_is_never_removed_by_a_later_process(
        fake: FakeDiscord, tmp_path: Path) -> None:
    async with running(fake, tmp_path, llm=Streaming()) as first:
        i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?", rounds=1)
        await fake.wait_for(lambda: i.followups)
        await first.settle()
        d = await first.discussion()
        assert d.status.value == "done", d.blocked_reason
        grown = [c for c in fake.calls if c.method == "PATCH" and "/webhooks/" in c.path]
        assert grown, "live messages were shown and turned into their posts"
        chat = DiscordChat()
        chat.attach(first.client, first.app.store)
        second = await build_app(settings_for(fake, tmp_path), {"discord": chat}, llm=RecordingLLM(),
                                 owner="the-next-process")
        try:
            await second.driver.drive(d.id)  # takes the discussion over, as after a restart
        finally:
            await second.close(0)
        async with first.app.store.tx() as tx:
            sent = [ref for post, ref in await tx.posts(d.id) if ref and post.persona is not None]
        shown = {m["id"] for m in fake.thread_messages(d.thread_ref)}
        assert {i for ref in sent for i in Ref.parse(ref, d).ids} <= shown, "every post is still there"
        assert not fake.calls_to("DELETE", "/webhooks/")
