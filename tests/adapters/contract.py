"""The ChatPort contract: one suite that the console, Slack (on its fake) and Discord (on its fake) all pass."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from core.models import Action, Discussion, Persona, Post, Role
from core.ports import ChatPort

Later = Callable[[Callable[[], bool]], Awaitable[None]]
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analyst", icon=":bulb:")


class ChatPortContract:
    """Subclasses provide `port`, `discussion` (persisted), `shown(ref)`: the text people see for a ref, and
    `thinking_shown(thread, key)`: whether people can see that the turn `key` is being worked on (ADA thinking).
    A port that shows something from a background task overrides `shown_later`. A platform without web links to a
    discussion (the terminal) sets `has_links = False`."""

    has_links = True

    @pytest.fixture
    def shown(self) -> Callable[[str], str]:
        raise NotImplementedError

    @pytest.fixture
    def thinking_shown(self) -> Callable[[Discussion, str], bool]:
        raise NotImplementedError

    @pytest.fixture
    def shown_later(self) -> Later:
        """Awaits what a port shows from a background task (Slack's placeholder, Discord's typing), given the check
        that it is shown: what the fake or the port signals once it is done. A port that shows everything before
        its call returns has nothing to wait for."""
        async def at_once(check: Callable[[], bool]) -> None:
            return None

        return at_once

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

    async def test_thinking_announce_and_link(self, port: ChatPort, thread: Discussion, shown: Callable[[str], str],
                                              thinking_shown: Callable[[Discussion, str], bool],
                                              shown_later: Later) -> None:
        key = f"{thread.id}:t9"
        assert not thinking_shown(thread, key)
        await port.thinking(thread, ADA, key)
        await until(shown_later, lambda: thinking_shown(thread, key), "thinking() showed nothing")
        ref = await port.announce(thread.workspace, thread.channel, Post(kind="notice", key="digest:1",
                                                                         text="Digest: two councils."))
        assert "Digest: two councils." in shown(ref)
        assert await port.find_announcement(thread.workspace, thread.channel, "digest:1") == ref
        assert await port.find_announcement(thread.workspace, thread.channel, "digest:2") is None
        link = await port.link(thread)
        if self.has_links:
            assert link.startswith("https://") and len(link) > len("https://"), f"link: {link!r}"
        else:
            assert link == ""


async def until(shown_later: Later, check: Callable[[], bool], why: str, limit_s: float = 10.0) -> None:
    """Await the port's or the fake's signal that a background task showed its part, then check once; the timeout
    only ends a wait that would hang."""
    await asyncio.wait_for(shown_later(check), limit_s)
    assert check(), why
