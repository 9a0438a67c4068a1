"""Live text is as plain as the finished post: every chat.update that grows a placeholder carries the words under
the same link rule, so a masked link the post will show as text is never a live link meanwhile."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from adapters.slack.chat import SlackChat
from core.models import Discussion, Persona, Post, Role
from tests.adapters.slack.conftest import skipping_chat
from tests.fakes.clock import SkippingTime
from tests.fakes.slack_api import FakeSlack

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")
ANSWER = ("We should move. [Sign in to your bank](https://bank.evil.example/login) first, and read "
          "<https://evil.example|the bank's notice> before the vote.")
CODE = re.compile(r"`[^`]*`")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as f:
        f.add_channel("C0001", member=True)
        yield f


def live_links(text: str) -> list[str]:
    """What Slack would make a link of in a section's mrkdwn: `<url|label>` or `<url>`, and an address outside
    code (Slack links bare addresses, never code)."""
    outside = CODE.sub("", text)
    return re.findall(r"<(?:https?://|mailto:)[^>]*>", outside) + re.findall(r"https?://\S+|\bevil\.example", outside)


async def test_no_live_update_carries_a_link_the_finished_post_shows_as_text(fake: FakeSlack) -> None:
    c: SlackChat = skipping_chat(fake)
    d = Discussion(id="d1", topic="Move?", platform="slack", workspace="T0001", channel="C0001", created_at=NOW,
                   updated_at=NOW)
    d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
    # The words as a stream shows them: every prefix, each a turn's first words (shown at once, no gap to wait).
    cuts = [*range(20, len(ANSWER) + 1, 6), len(ANSWER)]
    time = fake.clock
    assert isinstance(time, SkippingTime)
    for i, cut in enumerate(cuts):
        key = f"d1:r1:s{i}:ada"
        await c.thinking(d, ADA, key)
        await c.stream(d, ADA, key, ANSWER[:cut])
        time.t += 2.0  # chat.update's tier refills (50 a minute): each prefix has its edit
    updates = [call for call in fake.called("chat.update") if "is writing" in str(call.params.get("text"))]
    assert len(updates) == len(cuts), "every prefix was shown live"
    texts = [json.loads(u.params["blocks"])[0]["text"]["text"] if isinstance(u.params["blocks"], str)
             else u.params["blocks"][0]["text"]["text"] for u in updates]
    whole = texts[-1]
    assert "Sign in to your bank (`https://bank.evil.example/login`)" in whole, "the words stay, the link goes"
    for shown in texts:
        assert live_links(shown) == [], shown
