"""Every flow runs to its end with the real Anthropic client on the loopback Messages API (JSON and SSE)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.models import Status
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.chat import RecordingChat

CLOSING = {"moderated": "**Final synthesis.**", "council": "**Referee's reading.**",
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
            assert "**Verdict:**" in closing
            # Once in the thread: a closing right after its round's synthesis points to the table shown there.
            tables = sum("**Stances after round" in t for t in texts[texts.index(closing) - 3:texts.index(closing)])
            assert ("**Stances after round" in closing) != bool(tables), "the stance table shown twice in a row"
            assert fake.stats()["request_count"] > 3
        finally:
            await app.close()


@pytest.mark.parametrize(("flow", "rounds", "answerer"), [("moderated", 1, "Moderator"), ("council", 1, "Referee"),
                                                          ("meeting", 2, "Moderator"), ("open", 1, "Floor Lead")])
async def test_a_persons_message_is_answered_by_name_on_the_messages_api(tmp_path: Path, flow: str, rounds: int,
                                                                         answerer: str) -> None:
    async with FakeAnthropic() as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?", flow=flow,
                                                               rounds=rounds, experts=2, user_id="U1"))
            await app.service.handle(c.PostHumanMessage(discussion_id=reply.discussion_id, text="Who pays for it?",
                                                        event_id="Ev1", user_id="U7", user_name="Rosa"))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(reply.discussion_id)
                [message] = await tx.human_messages(reply.discussion_id)
                answers = [t for t in await tx.turns(reply.discussion_id) if t.reply_to == message.id]
                names = {p.key: p.name for p in await tx.personas(reply.discussion_id)}
            assert d is not None and d.status == Status.DONE
            assert [(names[t.persona_key], t.status.value) for t in answers] == [(answerer, "published")]
            asked = [r for r in fake.requests if "Answer them directly, naming them" in json.dumps(r["messages"])]
            assert len(asked) == 1 and "Rosa" in json.dumps(asked[0]["messages"][-1])
        finally:
            await app.close()


def skeptic_forgets_the_stance(body: dict[str, Any]) -> str:
    """Two advisors end with `Stance: O1` (the question's first answer); the Skeptic writes no stance line."""
    reply = default_reply(body)
    if "Stance: <label>" not in json.dumps(body["messages"][-1]):
        return reply
    body_text = reply.rsplit("\n\n", 1)[0]
    if 'and only as them:\\n<persona name=\\"Skeptic\\"' in json.dumps(body["messages"][-1]):  # its own brief
        return body_text
    return f"{body_text}\n\nStance: O1 — worth a trial"


async def test_a_missing_stance_counts_as_undecided_on_the_messages_api(tmp_path: Path) -> None:
    async with FakeAnthropic(reply=skeptic_forgets_the_stance) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?",
                                                               flow="council", rounds=1, user_id="U1"))
            await app.driver.idle()
            closing = next(p.text for p in chat.posts(reply.discussion_id) if "**Referee's reading.**" in p.text)
            assert "**Verdict:** LEANING: " in closing and "[O1] 2 · undecided 1 of 3" in closing
            assert "- Skeptic: **undecided**" in closing and "CONSENSUS" not in closing
        finally:
            await app.close()
