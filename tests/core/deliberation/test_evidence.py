"""Invented references are labelled: on the real Anthropic client through the loopback Messages API, and pure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.deliberation.evidence import mark_unverified
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.chat import RecordingChat


def test_a_reference_people_never_gave_is_marked_once() -> None:
    text = "As issue #4521 and PR 88 show, and ticket #77 says; see #4521 (unverified) again. COVID-19 aside."
    out = mark_unverified(text, known="Our topic mentions ticket #77.")
    assert out == ("As issue #4521 (unverified) and PR 88 (unverified) show, and ticket #77 says; "
                   "see #4521 (unverified) again. COVID-19 aside.")
    assert mark_unverified("Nothing cited here, 40% faster.", known="") == "Nothing cited here, 40% faster."


def inventive(body: dict[str, Any]) -> str:
    """A model without tools that cites numbers nobody gave it (and one the topic did)."""
    reply = default_reply(body)
    if (body.get("output_config") or {}).get("format"):
        return reply
    head, _, stance = reply.rpartition("\n\n")
    return f"{head} Issue #4521 proves it, and #77 is the one you named.\n\n{stance}" if head else reply


async def test_invented_issue_numbers_reach_the_thread_marked_unverified(tmp_path: Path) -> None:
    async with FakeAnthropic(reply=inventive) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(topic="Should we finally fix ticket #77?",
                                                               flow="council", rounds=1, user_id="U1"))
            await app.driver.idle()
            turns = [p.text for p in chat.posts(reply.discussion_id) if "Issue #4521" in p.text]
            assert len(turns) == 3, "each advisor's turn"
            assert all("Issue #4521 (unverified) proves it, and #77 is the one" in t for t in turns)
            system = json.dumps(fake.requests[0]["system"])
            assert "Never invent" in system and "(unverified)" in system
        finally:
            await app.close()
