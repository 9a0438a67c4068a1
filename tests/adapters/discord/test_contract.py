"""The ChatPort contract, run against DiscordChat on the fake Discord (the suite every ChatPort passes)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from core.models import Discussion, Post, Status
from core.ports import ChatPort
from tests.adapters.contract import ChatPortContract, Later
from tests.adapters.discord.conftest import Council

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


class TestDiscordChatPort(ChatPortContract):
    @pytest.fixture(autouse=True)
    def _council(self, council: Council) -> None:
        self.council = council

    @pytest.fixture
    def port(self, council: Council) -> ChatPort:
        return council.chat

    @pytest.fixture
    def fresh_port(self, council: Council) -> ChatPort:
        """A new process: nothing cached, only Discord and the database."""
        from adapters.discord.chat import DiscordChat

        chat = DiscordChat()
        chat.attach(council.client, council.app.store)
        return chat

    @pytest.fixture
    async def discussion(self, council: Council) -> Discussion:
        fake = council.fake
        d = Discussion(id="c0ffee01", topic="Topic X", platform="discord", workspace=fake.guild_id,
                       channel=fake.channel_id, status=Status.STOPPED, created_at=NOW, updated_at=NOW)
        async with council.app.store.tx() as tx:
            await tx.add_discussion(d)
        return d

    @pytest.fixture
    async def thread(self, council: Council, discussion: Discussion) -> Discussion:
        header = await self.queue(discussion, Post(kind="header", key=f"{discussion.id}:header", title="Topic X",
                                                   text="Roster"))
        discussion.thread_ref = await council.chat.publish(discussion, header)
        return discussion

    async def queue(self, d: Discussion, post: Post) -> Post:
        async with self.council.app.store.tx() as tx:
            await tx.enqueue(d.id, post, NOW)
        return post

    @pytest.fixture
    def shown(self, council: Council) -> Callable[[str], str]:
        fake = council.fake

        def text(ref: str) -> str:
            channel, ids = (ref.split(":")[0], ref.split(":")[1].split(",")) if ":" in ref else (fake.channel_id,
                                                                                                    [ref])
            found = [m for m in fake.messages.get(channel, []) if m["id"] in ids]
            assert len(found) == len(ids), f"{ref} is not on Discord"
            return "\n".join(m["content"] + "".join(_embed_text(e) for e in m["embeds"]) for m in found)

        return text

    @pytest.fixture
    def shown_later(self, council: Council) -> Later:
        """The typing indicator is started by a task of its own: the fake signals every request it answers, and
        this wakes on each until the check holds."""
        async def signalled(check: Callable[[], bool]) -> None:
            await council.fake.wait_for(check)

        return signalled

    @pytest.fixture
    def thinking_shown(self, council: Council) -> Callable[[Discussion, str], bool]:
        """Discord shows a typing indicator in the thread: the fake records the call that starts it."""
        return lambda d, key: bool(council.fake.calls_to("POST", rf"^/channels/{d.thread_ref}/typing$"))


def _embed_text(e: dict[str, Any]) -> str:
    return " ".join(str(e.get(k) or "") for k in ("title", "description")) + str((e.get("footer") or {}).get("text"))


async def test_a_lost_header_is_found_and_its_thread_opened(council: Council) -> None:
    fake = council.fake
    d = Discussion(id="feed0001", topic="T", platform="discord", workspace=fake.guild_id, channel=fake.channel_id,
                   status=Status.STOPPED, created_at=NOW, updated_at=NOW)
    header = Post(kind="header", key=f"{d.id}:header", title="T", text="Roster")
    async with council.app.store.tx() as tx:
        await tx.add_discussion(d)
        await tx.enqueue(d.id, header, NOW)
    ref = await council.chat.publish(d, header)
    del fake.channels[ref]  # the crash came between posting the header and opening its thread
    assert await council.chat.find(d, header.key) == ref
    assert fake.channels[ref]["type"] == 11 and len(fake.messages[fake.channel_id]) == 1
