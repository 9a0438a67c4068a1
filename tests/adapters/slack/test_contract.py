"""The ChatPort contract, run against SlackChat on the real AsyncWebClient and the fake Web API."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime

import pytest

from adapters.slack.chat import SlackChat
from core.models import Discussion, Post
from core.ports import ChatPort
from tests.adapters.contract import ChatPortContract, Later
from tests.adapters.slack.conftest import skipping_chat
from tests.fakes.slack_api import FakeSlack

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


class TestSlackChatPort(ChatPortContract):
    @pytest.fixture
    async def fake(self) -> AsyncIterator[FakeSlack]:
        async with FakeSlack() as f:
            yield f

    @pytest.fixture
    def port(self, fake: FakeSlack) -> ChatPort:
        return skipping_chat(fake)

    @pytest.fixture
    def fresh_port(self, fake: FakeSlack) -> ChatPort:
        """A new process: nothing cached, only what Slack itself holds (message metadata)."""
        return skipping_chat(fake)

    @pytest.fixture
    def discussion(self) -> Discussion:
        return Discussion(id="c0ffee01", topic="Topic X", platform="slack", workspace="T0001", channel="C0001",
                          created_at=NOW, updated_at=NOW)

    @pytest.fixture
    async def thread(self, port: ChatPort, discussion: Discussion) -> Discussion:
        header = Post(kind="header", key=f"{discussion.id}:header", title="Topic X", text="Roster")
        discussion.thread_ref = await port.publish(discussion, header)
        return discussion

    async def queue(self, d: Discussion, post: Post) -> Post:
        return post  # Slack finds posts by their own metadata; it needs nothing from the outbox

    @pytest.fixture
    def shown(self, fake: FakeSlack) -> Callable[[str], str]:
        def text(ref: str) -> str:
            first = next((m for m in fake.messages if m.ts == ref), None)
            assert first is not None, f"{ref} is not on Slack"
            key = (first.metadata or {}).get("event_payload", {}).get("key")
            parts = [m for m in fake.messages if m is first or (
                key and (m.metadata or {}).get("event_payload", {}).get("key") == key)]
            return "\n".join(m.text + json.dumps(m.blocks, ensure_ascii=False) for m in parts)

        return text

    @pytest.fixture
    def shown_later(self, port: ChatPort) -> Later:
        """The placeholder is posted by a task of the port's own: drain() awaits those tasks."""
        assert isinstance(port, SlackChat)

        async def drained(check: Callable[[], bool]) -> None:
            await port.drain()

        return drained

    @pytest.fixture
    def thinking_shown(self, fake: FakeSlack) -> Callable[[Discussion, str], bool]:
        """A "… is thinking" placeholder in the discussion's thread, tagged with the turn's key."""
        return lambda d, key: any(
            m.channel == d.channel and m.thread_ts == d.thread_ref and "Ada Lovelace is thinking" in m.text
            and (m.metadata or {}).get("event_payload", {}).get("key") == key for m in fake.messages)
