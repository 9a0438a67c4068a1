"""The ChatPort contract, run against DiscordChat on the fake Discord (the suite every ChatPort passes)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from core.models import Action, Discussion, Persona, Post, Role, Status
from core.ports import ChatPort
from tests.adapters.discord.conftest import Council

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analyst", icon=":bulb:")


class ChatPortContract:
    """Subclasses provide `port`, `discussion` (persisted) and `shown(ref)`: the text people see for a ref."""

    @pytest.fixture
    def shown(self) -> Callable[[str], str]:
        raise NotImplementedError

    async def queue(self, d: Discussion, post: Post) -> Post:
        """Posts reach a port through the outbox; recovery (find) may consult it."""
        raise NotImplementedError

    async def test_a_header_starts_the_thread(self, port: ChatPort, discussion: Discussion,
                                              shown: Callable[[str], str]) -> None:
        header = await self.queue(discussion, Post(kind="header", key=f"{discussion.id}:header", title="Topic X",
                                                   text="Roster here", actions=[Action(id="ctl:stop", label="Stop",
                                                                                       value=discussion.id)]))
        ref = await port.publish(discussion, header)
        assert ref and "Topic X" in shown(ref)

    async def test_posts_are_shown_and_edited_in_place(self, port: ChatPort, thread: Discussion,
                                                       shown: Callable[[str], str]) -> None:
        post = await self.queue(thread, Post(kind="turn", key=f"{thread.id}:t1", text="First thoughts.",
                                             persona=ADA, title="Round 1 · Opening"))
        ref = await port.publish(thread, post)
        assert "First thoughts." in shown(ref)
        await port.update(thread, ref, post.model_copy(update={"text": "Second thoughts."}))
        assert "Second thoughts." in shown(ref) and "First thoughts." not in shown(ref)

    async def test_long_text_is_shown_whole_and_offline_is_labelled(self, port: ChatPort, thread: Discussion,
                                                                    shown: Callable[[str], str]) -> None:
        text = " ".join(f"word{i}" for i in range(1500))
        post = await self.queue(thread, Post(kind="notice", key=f"{thread.id}:long", text=text, offline=True))
        seen = shown(await port.publish(thread, post))
        assert all(f"word{i}" in seen for i in (0, 700, 1499)) and "offline" in seen.lower()

    async def test_find_recovers_a_post_whose_ref_was_lost(self, port: ChatPort, thread: Discussion,
                                                           fresh_port: ChatPort) -> None:
        posts = [await self.queue(thread, Post(kind="turn", key=f"{thread.id}:t{i}", text=f"Turn {i} says hi.",
                                               persona=ADA)) for i in range(2)]
        posts.append(await self.queue(thread, Post(kind="notice", key=f"{thread.id}:n", text="A notice.")))
        refs = [await port.publish(thread, p) for p in posts]
        assert [await fresh_port.find(thread, p.key) for p in posts] == refs
        assert await fresh_port.find(thread, f"{thread.id}:never") is None

    async def test_thinking_announce_and_link(self, port: ChatPort, thread: Discussion,
                                              shown: Callable[[str], str]) -> None:
        await port.thinking(thread, ADA, f"{thread.id}:t9")
        ref = await port.announce(thread.workspace, thread.channel, Post(kind="notice", key="digest:1",
                                                                         text="Digest: two councils."))
        assert "Digest: two councils." in shown(ref)
        assert await port.find_announcement(thread.workspace, thread.channel, "digest:1") == ref
        assert await port.find_announcement(thread.workspace, thread.channel, "digest:2") is None
        assert isinstance(await port.link(thread), str)


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
