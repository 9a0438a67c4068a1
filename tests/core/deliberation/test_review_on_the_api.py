"""Peer review in every flow with the real Anthropic client on the loopback Messages API: structured reviews on
the light model, their letters read back as data, one aggregate per reviewed round, and no author named to a
reviewer."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.models import Phase, Status
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.chat import RecordingChat

LETTER = re.compile(r'<statement letter="([A-Z])"')


def words(body: dict[str, Any]) -> str:
    system = " ".join(b.get("text", "") for b in body.get("system") or [])
    said = [m["content"] if isinstance(m["content"], str) else " ".join(b.get("text", "") for b in m["content"])
            for m in body["messages"]]
    return system + "\n" + "\n".join(said)


def reviewer(reviews: list[dict[str, Any]]) -> Any:
    """A model that ranks the letters it was shown, the last one first."""
    def reply(body: dict[str, Any]) -> str:
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("schema", {}).get("title") != "PeerReview":
            return default_reply(body)
        reviews.append(body)
        shown = LETTER.findall(words(body))
        return json.dumps({"ranking": shown[::-1], "strongest": shown[-1], "why": "It names a cost."})
    return reply


@pytest.mark.parametrize(("flow", "rounds", "reviewed"), [("moderated", 1, 1), ("council", 2, 2), ("meeting", 3, 2),
                                                          ("open", 1, 1)])
async def test_each_flow_reviews_its_rounds_on_the_messages_api(tmp_path: Path, flow: str, rounds: int,
                                                                reviewed: int) -> None:
    reviews: list[dict[str, Any]] = []
    async with FakeAnthropic(reply=reviewer(reviews)) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(
                topic="Should we adopt a four-day week?", flow=flow, rounds=rounds, experts=3, user_id="U1",
                peer_review=True))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(reply.discussion_id)
                turns = await tx.turns(reply.discussion_id)
                personas = await tx.personas(reply.discussion_id)
            assert d is not None and d.status == Status.DONE, (d and d.status, d and d.blocked_reason)
            posted = [p.text for p in chat.posts(d.id) if "🏅 **Peer review, round" in p.text]
            assert len(posted) == reviewed
            done = [t for t in turns if t.phase == Phase.PEER_REVIEW]
            assert len(done) == len(reviews) and all(t.data and t.data["ranking"] for t in done)
            assert {b["model"] for b in reviews} == {settings.council_model_light}
            for body in reviews:  # no persona's name or icon reaches a reviewer (its own lens aside: its title)
                text = re.sub(r"you review from your own lens \([^)]*\)", "", words(body).lower())
                assert not [p.name for p in personas if p.name.lower() in text or p.icon in text]
        finally:
            await app.close()
