"""40 discussions in one workspace, the whole app on Slack's limits sped up 20x (in-process, real time), one delete
in five refused: when each round's choice is posted, no "… is thinking…" or "… is writing…" message is left in its
thread. The refusal itself is pinned on virtual time in tests/adapters/slack/test_placeholders_left.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.render import EVENT_TYPE
from adapters.slack.server import BOT_SCOPES, SlackServer
from bot.settings import Settings
from bot.wiring import build_app
from core.models import Status
from tests.adapters.slack.conftest import Slack, config
from tests.e2e.test_slack_workspace_allowance import _meta, thinking_still
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

SCALE = 20.0
CHANNELS = [f"C{i:04d}" for i in range(1, 41)]
REFUSED_EVERY = 5  # one chat.delete in this many answers internal_error


@pytest.fixture
async def busy(tmp_path: Path) -> AsyncIterator[tuple[FakeSlack, SlackServer]]:
    async with FakeSlack(time_scale=SCALE, scopes={"xoxb-test": frozenset(BOT_SCOPES)}) as fake:
        fake.add_user("U0001", "Dana")
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                            slack_time_scale=SCALE, council_starts_per_user_per_hour=0,
                            council_workspace_budget_usd_per_day=0)
        srv = SlackServer(config(fake, time_scale=SCALE), lambda chats: build_app(settings, chats, llm=ScriptedLLM()))
        await srv.start()
        yield fake, srv
        await srv.stop()


async def test_no_placeholder_is_left_beside_any_threads_choice(busy: tuple[FakeSlack, SlackServer]) -> None:
    fake, srv = busy
    for _ in range(200):
        fake.fail("chat.delete", "internal_error", after=REFUSED_EVERY - 1)
    async with aiohttp.ClientSession() as session:
        slack = Slack(f"http://127.0.0.1:{srv.port}/slack/events", session, fake)
        for channel in CHANNELS:
            await slack.command("Should we adopt trunk-based development?", channel=channel)
        await srv.idle()
    assert srv.core is not None
    async with srv.core.store.tx() as tx:
        assert [d.status for d in await tx.discussions()] == [Status.WAITING] * len(CHANNELS)
    assert len(fake.called("chat.delete")) >= 2 * REFUSED_EVERY, "placeholders were removed, some refused"
    left = {}
    for channel in CHANNELS:
        thread = [m for m in fake.messages if m.channel == channel and m.thread_ts]
        last = _meta(thread[-1].metadata)
        assert last[0] == EVENT_TYPE and ":choice:" in last[1], "the round's choice is the thread's last message"
        # Nothing is posted after the choice: the thread as it is now is the thread the choice was posted into.
        if stale := [m.ts for m in thread if thinking_still(fake, m)]:
            left[channel] = stale
    assert not left, f"placeholders left beside the choice in {len(left)} of {len(CHANNELS)} threads"
