"""What a streamed turn costs Slack, counted through the fake Web API: one new message (its placeholder), its live
text's edits (LIVE_EDITS at most, however long the turn writes), and the edit that fills the placeholder with the
post; nothing people must see goes (the first words live, the post's words and buttons, no placeholder left)."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from adapters.slack.budgeted import slack_budget
from adapters.slack.chat import LIVE_EDITS, SlackChat
from adapters.slack.clients import SingleWorkspace, web_client
from core.models import Discussion, Persona, Post, Role
from core.running.budget import LocalBuckets
from tests.fakes.clock import SkippingTime
from tests.fakes.slack_api import FakeSlack

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ROSTER = [Persona(key=k, name=n, role=Role.EXPERT, title="Engines", icon=":gear:")
          for k, n in (("ada", "Ada Lovelace"), ("lin", "Lin Ostrom"), ("cy", "Cy Young"))]
WORDS = "We should move to trunk-based development, with flags for unfinished work and a short review. " * 20
SECONDS = 30  # a long turn: the model writes for half a minute, the words growing every second
# The design's Slack mix for a streamed turn: one new message and, with the placeholder's fill, 1.7 chat.update a
# model call where 11 of 13 model calls are streamed turns (2.0 a streamed turn); 3.0 calls a model call in all.
UPDATES_A_TURN = 1.7 * 13 / 11


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as f:
        f.add_channel("C0001", member=True)
        yield f


def chat(fake: FakeSlack) -> tuple[SlackChat, SkippingTime]:
    """SlackChat on the real client and the app's budget, Slack's limits and the budget on one skipping clock; the
    per-channel gap between live edits (real seconds) scaled away, so only the turn's own cap holds its edits."""
    time = SkippingTime()
    fake.clock, fake.time_scale = time, 1.0
    budget = slack_budget(LocalBuckets(), read_limited=fake.limits.read_limited, wall=time, sleep=time.sleep)
    return SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"), budget), time_scale=1e9), time


def calls(fake: FakeSlack, since: int) -> Counter[str]:
    return Counter(c.method for c in fake.calls[since:] if not c.limited)


async def started(c: SlackChat) -> Discussion:
    d = Discussion(id="d1", topic="Trunk?", platform="slack", workspace="T0001", channel="C0001", created_at=NOW,
                   updated_at=NOW)
    d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
    return d


async def test_a_long_streamed_turn_costs_slack_one_message_its_first_words_and_the_fill(fake: FakeSlack) -> None:
    c, time = chat(fake)
    d = await started(c)
    ada, key = ROSTER[0], "d1:r1:s1:ada"
    before = len(fake.calls)
    await c.thinking(d, ada, key)
    await c.drain()
    for second in range(1, SECONDS + 1):  # the live text's pushes: the words so far, once a second
        await c.stream(d, ada, key, WORDS[: second * 60])
        time.t += 2.0  # chat.update's tier refills: the workspace has edits to spare all along
    ts = await c.publish(d, Post(kind="turn", key=key, text="Ada's finished post.", persona=ada, title="R1"))
    made = calls(fake, before)
    assert made["chat.postMessage"] == 1, made  # the placeholder, filled with the post: one new message a turn
    live = [u for u in fake.called("chat.update") if "is writing" in str(u.params.get("text"))]
    assert 1 <= len(live) <= LIVE_EDITS, len(live)  # live text is shown, its first words at once
    assert WORDS[:60].split()[0] in str(live[0].params.get("blocks"))
    assert made["chat.update"] == len(live) + 1 <= UPDATES_A_TURN + 1e-9, made  # its live edits and the fill
    assert sum(made.values()) <= 1 + UPDATES_A_TURN, made
    # Nothing people must see is dropped: the placeholder became the post, and no placeholder is left.
    [post] = fake.thread("C0001", d.thread_ref)[1:]
    assert post.ts == ts and "Ada's finished post." in post.text and "thinking" not in post.text


async def test_turns_written_at_once_in_one_channel_each_keep_to_the_cap(fake: FakeSlack) -> None:
    c, time = chat(fake)
    d = await started(c)
    keys = {p.key: f"d1:r1:s1:{p.key}" for p in ROSTER}
    before = len(fake.calls)
    for p in ROSTER:
        await c.thinking(d, p, keys[p.key])
    await c.drain()
    for second in range(1, SECONDS + 1):
        for p in ROSTER:
            await c.stream(d, p, keys[p.key], f"{p.name}: " + WORDS[: second * 60])
        time.t += 2.0
    for p in ROSTER:
        await c.publish(d, Post(kind="turn", key=keys[p.key], text=f"{p.name}'s post.", persona=p, title="R1"))
    made = calls(fake, before)
    live = Counter(next(p.key for p in ROSTER if p.name in str(u.params.get("text")))
                   for u in fake.called("chat.update") if "is writing" in str(u.params.get("text")))
    assert set(live) == {p.key for p in ROSTER} and max(live.values()) <= LIVE_EDITS, live
    assert made["chat.postMessage"] == len(ROSTER) and "chat.delete" not in made, made
    assert sum(made.values()) / len(ROSTER) <= 1 + UPDATES_A_TURN, made
    shown = [m.text for m in fake.thread("C0001", d.thread_ref)[1:]]
    assert len(shown) == len(ROSTER) and all(any(f"{p.name}'s post." in t for t in shown) for p in ROSTER), shown
    assert not any("thinking" in t or "writing" in t for t in shown), shown
