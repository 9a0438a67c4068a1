"""No placeholder outlives its turn: a "… is thinking…" message whose delete (or whose post) Slack refused once is
still removed before the round's choice is posted. On virtual time, the fake's and the budget's alike."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from slack_sdk.errors import SlackApiError

from adapters.slack.budgeted import slack_budget
from adapters.slack.chat import SlackChat
from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.render import EVENT_TYPE, THINKING_EVENT
from core.models import Discussion, Persona, Post, Role
from core.running.budget import LocalBuckets
from tests.fakes.clock import VirtualTime
from tests.fakes.slack_api import FakeSlack, Msg

ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")
KEY = "d1:r1:s1:ada"


def meta(m: Msg) -> tuple[str, str]:
    data = m.metadata if isinstance(m.metadata, dict) else json.loads(str(m.metadata or "{}"))
    return str(data.get("event_type") or ""), str((data.get("event_payload") or {}).get("key") or "")


@pytest.mark.parametrize("refused", ["chat.delete", "chat.postMessage"])
async def test_a_placeholder_slack_refused_to_replace_once_is_gone_before_the_choice(refused: str) -> None:
    """The workspace has no chat.update to spare, so the turn's post goes out as a new message and its placeholder
    must be deleted. Slack refuses once: the delete (the post is out, so the outbox never sends it again), or the
    post itself (the outbox sends it again later). Either way the placeholder was forgotten and stayed "thinking"
    beside the round's choice. Now a refused delete is tried again before the thread's next message, and a post
    that failed gives its placeholder back for its next try."""
    time = VirtualTime()
    now = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    async with FakeSlack(clock=time) as fake:
        fake.add_channel("C0001", member=True)
        budget = slack_budget(LocalBuckets(), wall=time, sleep=time.sleep)
        c = SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"), budget))
        recorded: list[tuple[str, str]] = []

        async def record(_: Discussion, key: str, ts: str) -> None:  # what the core stores of each placeholder
            recorded.append((key, ts))

        c.placeholders = record
        d = Discussion(id="d1", topic="Trunk-based development?", platform="slack", workspace="T0001",
                       channel="C0001", created_at=now, updated_at=now)
        turn = Post(kind="turn", key=KEY, text="I think we should.", persona=ADA, title="Round 1")

        async def round_() -> None:
            d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
            await c.thinking(d, ADA, KEY)
            await c.drain()
            while await budget.spend_spare("T0001", "chat.update"):  # other discussions' edits took them all
                pass
            fake.fail(refused, "internal_error")
            try:
                await c.publish(d, turn)
            except SlackApiError:  # the outbox sends a post again when its publish fails
                await c.publish(d, turn)
            await c.publish(d, Post(kind="choice", key="d1:r1:choice:0", text="What next?"))

        await time.run(round_(), within_s=30)
        shown = fake.thread("C0001", d.thread_ref)
    assert not [m for m in shown if meta(m)[0] == THINKING_EVENT], "no placeholder left beside the posts"
    assert [meta(m) for m in shown[1:]] == [(EVENT_TYPE, KEY), (EVENT_TYPE, "d1:r1:choice:0")], "each post once"
    posts = [i for i, call in enumerate(fake.calls) if call.method == "chat.postMessage" and not call.limited]
    deleted = [i for i, call in enumerate(fake.calls) if call.method == "chat.delete"]
    assert deleted and deleted[-1] < posts[-1], "the placeholder was gone before the choice was posted"
    [(_, shown_ts)] = [r for r in recorded if r[0] == KEY]
    # A refused delete is stored as a placeholder no post settles: after a crash, the process taking over removes it.
    assert [r for r in recorded if r[0] != KEY] == ([(KEY + ":left", shown_ts)] if refused == "chat.delete" else [])
