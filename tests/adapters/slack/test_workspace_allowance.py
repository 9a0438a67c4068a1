"""Many discussions in one workspace: their posts go out at the pace Slack allows new messages, not at Tier 3's."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from adapters.slack.budgeted import POSTS_PER_MINUTE, slack_budget
from adapters.slack.chat import SlackChat
from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.render import EVENT_TYPE
from core.models import Discussion, Persona, Post, Role
from core.running.budget import LocalBuckets
from tests.adapters.slack.conftest import slack_chat
from tests.fakes.clock import VirtualTime
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import TIER

CHANNELS = [f"C{i:04d}" for i in range(1, 13)]
TIER3 = TIER[3]


def _meta(metadata: object) -> tuple[str, str, int]:
    meta = metadata if isinstance(metadata, dict) else json.loads(str(metadata or "{}"))
    payload = meta.get("event_payload") or {}
    return str(meta.get("event_type") or ""), str(payload.get("key") or ""), int(payload.get("part") or 0)


PER_CHANNEL = 30  # turns each of the dozen discussions posts: 360 new messages, more than a Slack minute allows


async def test_a_busy_workspaces_posts_go_out_as_new_messages_faster_than_tier_3_allows_edits() -> None:
    """A dozen discussions at once in one workspace want far more messages than chat.update's 50 a minute. New
    messages are limited per channel (about one a second) and by a workspace allowance of several hundred a minute,
    so the turns' posts must go out at that pace: never queued behind a Tier-3 budget, never refused.
    On virtual time, the fake's and the budget's alike: Slack's seconds pass only while every post waits its turn,
    so no real time is waited and a busy machine cannot squeeze posts together."""
    time = VirtualTime()
    async with FakeSlack(clock=time) as fake:
        for channel in CHANNELS:
            fake.add_channel(channel, member=True)
        c = SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"),
                                      slack_budget(LocalBuckets(), wall=time, sleep=time.sleep)))
        now = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
        ada = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")

        async def discussion(channel: str) -> None:
            d = Discussion(id=f"d{channel}", topic="Trunk-based development?", platform="slack", workspace="T0001",
                           channel=channel, created_at=now, updated_at=now)
            d.thread_ref = await c.publish(d, Post(kind="header", key=f"{d.id}:header", title=d.topic, text="roster"))
            for i in range(PER_CHANNEL):
                await c.publish(d, Post(kind="turn", key=f"{d.id}:r1:s{i}:ada", text=f"Point {i}.", persona=ada,
                                        title="Round 1"))

        await time.run(*(discussion(channel) for channel in CHANNELS), within_s=60)
    posted = sorted(c.at for c in fake.called("chat.postMessage") if not c.limited)  # Slack seconds
    assert len(posted) == len(CHANNELS) * (PER_CHANNEL + 1), "every post went out, once"
    busiest = max(sum(1 for t in posted[i:] if t < start + 60) for i, start in enumerate(posted))
    assert busiest > 2 * TIER3, f"at most {busiest} new messages in a Slack minute: held to a Tier-3 budget"
    assert busiest <= POSTS_PER_MINUTE, "within the workspace's allowance"
    assert not fake.answered_429.get("chat.postMessage"), "paced within Slack's limits, never refused"


async def test_a_post_whose_placeholder_finds_no_edit_to_spare_goes_out_anew_and_the_placeholder_is_removed() -> None:
    """Slack counts an edit when it is made. A placeholder's edit into its post, paid for when the placeholder was
    posted, was made a turn later, into a minute other discussions' edits had filled: 10 of 100 such edits were
    refused (429) with 100 discussions in one workspace, each refusal pausing the workspace's edits. So a post
    takes a chat.update only if one is there when it lands; otherwise it goes out at once as a new message, and
    its placeholder is removed."""
    now = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    ada = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")
    key = "d1:r1:s1:ada"
    async with FakeSlack() as fake:  # Slack's own speed: the budget refills a call in more than a second
        fake.add_channel("C0001", member=True)
        budget = slack_budget(LocalBuckets())
        c = slack_chat(fake, pace_s=0.01, budget=budget)
        d = Discussion(id="d1", topic="Trunk-based development?", platform="slack", workspace="T0001",
                       channel="C0001", created_at=now, updated_at=now)
        d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
        await c.thinking(d, ada, key)
        await c.drain()
        [placeholder] = fake.thread("C0001", d.thread_ref)[1:]
        while await budget.spend_spare("T0001", "chat.update"):  # other discussions' edits take what is there
            pass
        ts = await c.publish(d, Post(kind="turn", key=key, text="I think we should.", persona=ada, title="Round 1"))
    assert not fake.called("chat.update"), "no edit the workspace had no call for"
    assert fake.find("C0001", placeholder.ts) is None, "the placeholder removed"
    [shown] = fake.thread("C0001", d.thread_ref)[1:]
    assert shown.ts == ts and _meta(shown.metadata)[:2] == (EVENT_TYPE, key)
