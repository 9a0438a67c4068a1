"""The ChatPort contract, run against the terminal (a recorded rich Console) with its journal of keys."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from adapters.console.chat import ConsoleChat
from core.models import Discussion, Persona, Post
from core.ports import ChatPort
from tests.adapters.contract import ChatPortContract

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


class Screen:
    """Wraps the real ConsoleChat and files what each call printed under the ref it concerns."""

    def __init__(self, chat: ConsoleChat) -> None:
        self.chat = chat
        self.by_ref: dict[str, str] = {}
        self.thought: dict[str, str] = {}  # turn key -> what thinking() printed

    def _printed(self) -> str:
        return self.chat.console.export_text(clear=True)

    async def publish(self, discussion: Discussion, post: Post) -> str:
        ref = await self.chat.publish(discussion, post)
        self.by_ref[ref] = self._printed()
        return ref

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        await self.chat.update(discussion, ref, post)
        self.by_ref[ref] = self._printed()  # what the terminal shows last for that post

    async def find(self, discussion: Discussion, key: str) -> str | None:
        return await self.chat.find(discussion, key)

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        await self.chat.thinking(discussion, persona, key)
        self.thought[key] = self._printed()

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        await self.chat.stream(discussion, persona, key, text)

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        ref = await self.chat.announce(workspace, channel, post)
        self.by_ref[ref] = self._printed()
        return ref

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        return await self.chat.find_announcement(workspace, channel, key)

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        await self.chat.tell(discussion, user_id, post)

    async def link(self, discussion: Discussion) -> str:
        return await self.chat.link(discussion)


class TestConsoleChatPort(ChatPortContract):
    has_links = False  # a terminal has nothing to link to

    @pytest.fixture
    def journal(self, tmp_path: Path) -> Path:
        return tmp_path / "council.console-journal"

    @pytest.fixture
    def screen(self, journal: Path) -> Screen:
        return Screen(ConsoleChat(Console(record=True, width=100, file=open("/dev/null", "w")), journal=journal))

    @pytest.fixture
    def port(self, screen: Screen) -> ChatPort:
        return screen

    @pytest.fixture
    def fresh_port(self, journal: Path) -> ChatPort:
        """A restarted terminal session: only the journal of printed keys survives."""
        return ConsoleChat(Console(file=open("/dev/null", "w")), journal=journal)

    @pytest.fixture
    def discussion(self) -> Discussion:
        return Discussion(id="c0ffee01", topic="Topic X", created_at=NOW, updated_at=NOW)

    @pytest.fixture
    async def thread(self, port: ChatPort, discussion: Discussion) -> Discussion:
        discussion.thread_ref = await port.publish(discussion, Post(kind="header", key="c0ffee01:header",
                                                                    title="Topic X", text="Roster"))
        return discussion

    async def queue(self, d: Discussion, post: Post) -> Post:
        return post

    @pytest.fixture
    def shown(self, screen: Screen) -> Callable[[str], str]:
        return lambda ref: " ".join(screen.by_ref[ref].split())

    @pytest.fixture
    def thinking_shown(self, screen: Screen) -> Callable[[Discussion, str], bool]:
        return lambda d, key: "Ada Lovelace is thinking" in " ".join(screen.thought.get(key, "").split())
