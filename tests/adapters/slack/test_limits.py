"""Slack's limits as the fake enforces them, met by the app: chat.update's tier under streaming discussions, and
missing_scope for a method the token's scopes do not cover."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.render import THINKING_EVENT
from adapters.slack.server import BOT_SCOPES, SlackServer
from bot.settings import Settings
from bot.wiring import build_app
from core.deliberation.offline import OfflineLLM
from core.models import Discussion, Persona, Post, Role, Status
from tests.adapters.slack.conftest import Slack, config, skipping_chat
from tests.adapters.slack.test_threads import only
from tests.fakes.clock import VirtualTime
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import Call, FakeSlack

# The app's live-text interval is 1 / slack_time_scale seconds of the loop's timer: this makes it nothing, so the
# model's every chunk reaches the chat, which keeps Slack's pace itself on the virtual clock.
LIVE_EVERY_CHUNK = 1e9
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")


@pytest.fixture
def time() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
async def streaming(fake: FakeSlack, tmp_path: Path, time: VirtualTime) -> AsyncIterator[SlackServer]:
    """The app with a model that writes slowly (30 s a turn), Slack's limits, the app's rate budget and its live
    edits all on one virtual clock: every limit holds as in real time, and nothing waits for it."""
    fake.clock, fake.time_scale = time, 1.0  # trigger_ids keep their own clock (`trigger_time`)
    # Live text goes to the chat as the model writes: the chat's own gap per channel and the budget, both on the
    # virtual clock, decide what is shown (the interval before them waits on the loop's timer).
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        slack_time_scale=LIVE_EVERY_CHUNK, council_starts_per_user_per_hour=0)
    llm = OfflineLLM(delay=30.0, sleep=time.sleep)
    srv = SlackServer(config(fake, time_scale=1.0, wall=time, sleep=time.sleep),
                      lambda chats: build_app(settings, chats, llm=llm))
    await srv.start()
    yield srv
    await srv.stop()


async def three_discussions(srv: SlackServer, fake: FakeSlack, time: VirtualTime) -> None:
    """A one-round discussion started in each of three channels, run to its end on the virtual clock."""
    async def run() -> None:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{srv.port}/slack/events", session, fake)
            for channel in ("C0001", "C0002", "C0003"):
                await slack.command("Should we adopt trunk-based development? --rounds 1", channel=channel)
            await srv.idle()

    await time.run(run(), within_s=120)


async def test_streaming_discussions_stay_within_chat_updates_tier(streaming: SlackServer, fake: FakeSlack,
                                                                  time: VirtualTime) -> None:
    await three_discussions(streaming, fake, time)
    assert streaming.core is not None
    async with streaming.core.store.tx() as tx:
        assert {d.status for d in await tx.discussions()} == {Status.DONE}
    live = [c for c in fake.called("chat.update") if "is writing" in str(c.params.get("text"))]
    assert live, "live text was shown"
    assert not fake.answered_429, dict(fake.answered_429)  # 50 a minute per workspace, never one too many
    assert streaming.budget is not None and streaming.budget.spent[("chat.update", "skipped")] > 0, \
        "more live text was written than the budget had room for: the rest was skipped, not sent"
    assert len(live) == streaming.budget.spent[("chat.update", "live")], \
        "every live edit sent was one the budget had to spare, none waited for"


def _event_type(call: Call) -> str:
    meta = call.params.get("metadata") or {}
    return str((json.loads(meta) if isinstance(meta, str) else meta).get("event_type", ""))


async def test_a_placeholder_is_shown_only_with_edits_to_spare_and_filled_only_with_one_there_when_its_post_lands(
    streaming: SlackServer, fake: FakeSlack, time: VirtualTime
) -> None:
    """chat.update is limited per workspace: a finished turn's post that edits its placeholder must not wait
    behind every other discussion's edits. So a placeholder is posted only while the workspace has edits to spare,
    and filled only with an edit there when its post lands; otherwise the post is a new message and the placeholder
    is removed. Every edit is paid for once, when it is made."""
    await three_discussions(streaming, fake, time)
    budget = streaming.budget
    assert budget is not None
    placeholders = [c for c in fake.called("chat.postMessage") if _event_type(c) == THINKING_EVENT]
    assert placeholders, "turns were shown thinking"
    removed = [c for c in fake.called("chat.delete") if not c.limited]
    assert budget.spent[("chat.update", "spare")] + len(removed) == len(placeholders), \
        "each placeholder filled with an edit to spare, or removed"
    edits = [c for c in fake.called("chat.update") if not c.limited]
    paid = sum(budget.spent[("chat.update", how)] for how in ("final", "live", "spare"))
    assert len(edits) == paid, "every edit was paid for once, when it was made"


async def test_a_placeholder_edit_that_slack_refuses_with_429_gives_way_to_a_new_message(fake: FakeSlack) -> None:
    """An edit into a placeholder is work a new message can do: one Slack refused is not waited for; the post goes
    out as a new message and the placeholder is removed."""
    chat = skipping_chat(fake)
    now = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    d = Discussion(id="d1", topic="Trunk?", platform="slack", workspace="T0001", channel="C0001", created_at=now,
                   updated_at=now)
    await (await chat.client_for("T0001")).conversations_join(channel="C0001")  # the app posts where it is a member
    d.thread_ref = await chat.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
    await chat.thinking(d, ADA, "d1:r1:s1:ada")
    await chat.drain()
    [placeholder] = fake.thread("C0001", d.thread_ref)[1:]
    fake.rate_limit("chat.update", times=1, retry_after=1)
    ts = await chat.publish(d, Post(kind="turn", key="d1:r1:s1:ada", text="Ada's post", persona=ADA, title="R1"))
    assert fake.answered_429["chat.update"] == 1 and len(fake.called("chat.update")) == 1, "not tried again"
    assert fake.find("C0001", placeholder.ts) is None
    assert ts != placeholder.ts and "Ada's post" in str(fake.find("C0001", ts).blocks)  # type: ignore[union-attr]


async def test_a_method_outside_the_tokens_scopes_is_refused_and_explained(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    fake.scopes["xoxb-test"] = frozenset(BOT_SCOPES) - {"files:write"}  # installed before the app asked for it
    await slack.command("Should we adopt trunk-based development? --rounds 1")
    await server.idle()
    d = await only(server)
    await slack.click(d.thread_ref, "ctl:export", d.id)
    await server.idle()
    assert not fake.uploads
    assert "files:write" in fake.ephemerals[-1]["text"]


async def test_without_chat_write_customize_personas_post_as_the_app_with_their_names_in_the_message(
        fake: FakeSlack, tmp_path: Path) -> None:
    """An install whose token lacks chat:write.customize (an older manifest): Slack refuses a post under a persona's
    name; the discussion goes on with each post naming its persona, and the refusal is learnt once."""
    fake.scopes["xoxb-test"] = frozenset(BOT_SCOPES) - {"chat:write.customize"}
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    srv = SlackServer(config(fake), lambda chats: build_app(settings, chats, llm=ScriptedLLM()))
    await srv.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{srv.port}/slack/events", session, fake)
            await slack.command("Should we adopt trunk-based development? --rounds 1")
            await srv.idle()
        assert srv.core is not None
        async with srv.core.store.tx() as tx:
            [d] = await tx.discussions()
        assert d.status == Status.DONE
    finally:
        await srv.stop()
    refused = [c for c in fake.called("chat.postMessage") if c.params.get("username")]
    assert len(refused) == 1, "learnt from the first refusal"
    posts = [m for m in fake.messages if m.thread_ts == d.thread_ref and "Moderator" in json.dumps(m.blocks)]
    assert posts and all(m.username is None for m in fake.messages)
