"""Many discussions in one workspace, the whole app on Slack's limits (in-process, Slack's clock 5x the wall
clock: real time): their posts go out at the pace Slack allows new messages, none twice, no placeholder left.
The pace alone is pinned on virtual time in tests/adapters/slack/test_workspace_allowance.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.render import EVENT_TYPE, THINKING_EVENT
from adapters.slack.server import BOT_SCOPES, SlackServer
from bot.settings import Settings
from bot.wiring import build_app
from core.models import Status
from tests.adapters.slack.conftest import Slack, config
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack, Msg
from tests.fakes.slack_limits import TIER

# A Slack minute is 12 s: long enough that a Tier-3 budget would visibly hold the posts, short enough for the suite.
# The app spends new messages up to 6 short of the workspace's 300 a minute, counted when it sends them, and the fake
# counts them when they arrive: a delay between the two, sped up with Slack's clock, eats that margin. At 10x, 0.14 s
# of delay on a busy machine did (3 posts refused once, beside another suite); at 5x it takes 0.27 s.
SCALE = 5.0
CHANNELS = [f"C{i:04d}" for i in range(1, 13)]
TIER3 = TIER[3]


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


def _meta(metadata: object) -> tuple[str, str, int]:
    meta = metadata if isinstance(metadata, dict) else json.loads(str(metadata or "{}"))
    payload = meta.get("event_payload") or {}
    return str(meta.get("event_type") or ""), str(payload.get("key") or ""), int(payload.get("part") or 0)


def thinking_still(fake: FakeSlack, m: Msg) -> bool:
    """A placeholder whose last word is still the turn being written: never replaced by a post or a note."""
    if _meta(m.metadata)[0] != THINKING_EVENT:
        return False
    edits = [c for c in fake.called("chat.update") if not c.limited and c.params.get("ts") == m.ts]
    return not edits or _meta(edits[-1].params.get("metadata"))[0] == THINKING_EVENT


async def test_a_busy_workspaces_posts_go_out_as_new_messages_faster_than_tier_3_allows_edits(
    busy: tuple[FakeSlack, SlackServer],
) -> None:
    """A dozen discussions at once in one workspace want far more messages than chat.update's 50 a minute. New
    messages are limited per channel (about one a second) and by a workspace allowance of several hundred a minute,
    so the turns' posts must go out at that pace: never queued behind a Tier-3 budget. Nothing is posted twice,
    and no placeholder is left saying a persona is thinking."""
    fake, srv = busy
    async with aiohttp.ClientSession() as session:
        slack = Slack(f"http://127.0.0.1:{srv.port}/slack/events", session, fake)
        for channel in CHANNELS:
            await slack.command("Should we adopt trunk-based development? --rounds 1", channel=channel)
        await srv.idle()
    assert srv.core is not None
    async with srv.core.store.tx() as tx:
        assert [d.status for d in await tx.discussions()] == [Status.DONE] * len(CHANNELS)

    posted = sorted(c.at * SCALE for c in fake.called("chat.postMessage") if not c.limited)  # Slack seconds
    busiest = max(sum(1 for t in posted[i:] if t < start + 60) for i, start in enumerate(posted))
    assert busiest > 2 * TIER3, f"at most {busiest} new messages in a Slack minute: held to a Tier-3 budget"
    assert not fake.answered_429.get("chat.postMessage"), "paced within Slack's limits, never refused"

    shown = [m for m in fake.messages if m.channel in CHANNELS]
    assert not [m.ts for m in shown if thinking_still(fake, m)], "no placeholder left thinking"
    posts = [(key, part) for kind, key, part in map(_meta, (m.metadata for m in shown)) if kind == EVENT_TYPE]
    assert len(posts) == len(set(posts)), "no post shown twice"
