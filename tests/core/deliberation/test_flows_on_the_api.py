"""Every flow runs to its end with the real Anthropic client on the loopback Messages API (JSON and SSE)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.models import Status
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import RecordingChat

CLOSING = {"moderated": "**Final synthesis.**", "council": "**Referee's verdict.**",
           "meeting": "**Council Recommendation**", "open": "**Final synthesis.**"}


@pytest.mark.parametrize(("flow", "rounds"), [("moderated", 1), ("council", 2), ("meeting", 3), ("open", 1)])
async def test_each_flow_finishes_on_the_messages_api(tmp_path: Path, flow: str, rounds: int) -> None:
    async with FakeAnthropic() as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?", flow=flow,
                                                               rounds=rounds, experts=3, user_id="U1"))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(reply.discussion_id)
            assert d is not None and d.status == Status.DONE, (d and d.status, d and d.blocked_reason)
            texts = [p.text for p in chat.posts(d.id)]
            closing = next(t for t in texts if CLOSING[flow] in t)
            assert "**Stances after round" in closing and "**Verdict:**" in closing
            assert fake.stats()["request_count"] > 3
        finally:
            await app.close()
