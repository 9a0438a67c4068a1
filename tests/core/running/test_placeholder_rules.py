"""Placeholder rules (core/running/placeholders.py), one at a time on both stores: a takeover removes only the
placeholders another process left, keeps the ones its chat would not remove, and says so; a turn's post, its
failure notice (keyed under the turn's key) and the header a roster turn drew settle a placeholder, and nothing
else does; a stopped discussion's post settles every one still shown; what this process knows is read from the
store again once its lease is let go."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from core.models import Discussion, Post, Status
from core.running.config import DriverConfig
from core.running.placeholders import Placeholders
from core.storage.store import Store
from tests.fakes.chat import ChatDown, RecordingChat
from tests.fakes.clock import FakeClock

ME, DEAD = "this-process", "a-dead-process"
A, B, C = "d1:r1:s1:analyst", "d1:r1:s1:builder", "d1:r1:s1:critic"


class RetractingChat(RecordingChat):
    """The recording chat, which also removes messages as a takeover asks; a ref in `refuse` it cannot remove."""

    def __init__(self) -> None:
        super().__init__(platform="slack")
        self.retracted: list[str] = []
        self.refuse: set[str] = set()

    async def retract(self, discussion: Discussion, ref: str) -> None:
        if ref in self.refuse:
            raise ChatDown(f"cannot remove {ref}")
        self.retracted.append(ref)


def discussion(status: Status = Status.RUNNING) -> Discussion:
    now = datetime.now(UTC)
    return Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack", channel="C1",
                      created_at=now, updated_at=now, status=status)


async def setup(store: Store, rows: list[tuple[str, str]], status: Status = Status.RUNNING
                ) -> tuple[Placeholders, RetractingChat, Discussion]:
    """A discussion with these placeholders stored (turn key, owner), each shown as the message `ts-KEY`."""
    d, chat, clock = discussion(status), RetractingChat(), FakeClock()
    async with store.tx() as tx:
        await tx.add_discussion(d)
        await tx.placeholders_shown([(d.id, key, f"ts-{key}", owner, clock.now()) for key, owner in rows])
    return Placeholders(store, {"slack": chat}, clock, DriverConfig(owner=ME)), chat, d


async def stored(store: Store) -> list[str]:
    async with store.tx() as tx:
        return sorted(key for key, _, _ in await tx.placeholders("d1"))


async def settle(store: Store, p: Placeholders, d: Discussion, post: Post, of_turn: bool) -> list[str]:
    async with store.tx() as tx:
        settled = await p.settle(tx, d, post, of_turn=of_turn)
    p.settled(d.id, settled)
    return settled


async def lease(store: Store, p: Placeholders) -> None:
    """The lease is taken: what is stored is read, as the driver reads it in the lease's transaction."""
    async with store.tx() as tx:
        left = await tx.placeholders("d1")
    await p.retract_left("d1", left)


async def test_a_takeover_removes_only_what_another_process_left(store: Store,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    p, chat, _ = await setup(store, [(A, DEAD), (B, ME), (C, DEAD)])
    with caplog.at_level(logging.INFO, logger="core.running.placeholders"):
        await lease(store, p)
    assert sorted(chat.retracted) == sorted([f"ts-{A}", f"ts-{C}"]), "this process's own placeholder stays"
    assert await stored(store) == [B]
    assert [r.getMessage() for r in caplog.records] == [
        "removed 2 placeholder(s) of d1 left by another process"]


async def test_a_takeover_with_nothing_left_by_others_removes_nothing(store: Store) -> None:
    p, chat, _ = await setup(store, [(A, ME)])
    await lease(store, p)
    assert chat.retracted == []
    assert await stored(store) == [A]


async def test_a_placeholder_the_chat_would_not_remove_is_kept_for_the_next_takeover(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    p, chat, d = await setup(store, [(A, DEAD), (B, DEAD)])
    chat.refuse.add(f"ts-{A}")
    with caplog.at_level(logging.INFO, logger="core.running.placeholders"):
        await lease(store, p)
    assert chat.retracted == [f"ts-{B}"]
    assert await stored(store) == [A], "the one not removed is kept: the next takeover tries again"
    [warned, told] = caplog.records
    assert (warned.levelno, warned.getMessage()) == (
        logging.WARNING, f"could not remove the placeholder of {A} left by another process")
    assert warned.exc_info is not None and isinstance(warned.exc_info[1], ChatDown), "the chat's error is logged"
    assert (told.levelno, told.getMessage()) == (logging.INFO, "removed 1 placeholder(s) of d1 left by another "
                                                               "process")
    # What this process knows: the kept one is still shown (its turn's post settles it), the removed one is not.
    assert await settle(store, p, d, Post(kind="turn", key=A, text="..."), of_turn=True) == [A]
    assert await settle(store, p, d, Post(kind="turn", key=B, text="..."), of_turn=True) == []


async def test_when_the_chat_removes_none_the_store_keeps_them_all_and_logs_no_removal(
        store: Store, caplog: pytest.LogCaptureFixture) -> None:
    p, chat, _ = await setup(store, [(A, DEAD)])
    chat.refuse.add(f"ts-{A}")
    with caplog.at_level(logging.INFO, logger="core.running.placeholders"):
        await lease(store, p)
    assert await stored(store) == [A]
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


async def test_a_discussion_gone_from_the_store_has_nothing_removed(store: Store) -> None:
    p, chat, _ = await setup(store, [(A, DEAD)])
    await p.retract_left("d-gone", [(A, f"ts-{A}", DEAD)])
    assert chat.retracted == []


async def test_only_a_turns_own_post_its_failure_notice_or_its_header_settle_it(store: Store) -> None:
    p, _, d = await setup(store, [(A, ME), (B, ME), (C, ME)])
    await lease(store, p)
    # Posts that are no turn's and settle nothing: a message, a notice keyed under no stored turn, a poll.
    for post in (Post(kind="synthesis", key=f"{A}:failed", text="..."), Post(kind="poll", key=f"x:{A}", text="..."),
                 Post(kind="notice", key=f"{A}x:failed", text="..."), Post(kind="header", key=f"{A}:x", text="..."),
                 Post(kind="header", key=f"x{A}", text="..."), Post(kind="notice", key=f"x:{A}", text="...")):
        assert await settle(store, p, d, post, of_turn=False) == [], post
    assert await stored(store) == [A, B, C]
    # A failure notice or an error keyed under the turn's key, and a header ending with it, settle it: deleted.
    assert await settle(store, p, d, Post(kind="notice", key=f"{A}:failed", text="..."), of_turn=False) == [A]
    assert await settle(store, p, d, Post(kind="error", key=f"{B}:failed", text="..."), of_turn=False) == [B]
    assert await settle(store, p, d, Post(kind="header", key=f"roster:{C}", text="..."), of_turn=False) == [C]
    assert await stored(store) == []


async def test_a_turns_own_post_settles_its_placeholder_by_being_sent_not_by_a_delete(store: Store) -> None:
    p, _, d = await setup(store, [(A, ME), (B, ME)])
    await lease(store, p)
    assert await settle(store, p, d, Post(kind="turn", key=A, text="..."), of_turn=True) == [A]
    assert await stored(store) == [A, B], "its row goes when the post is marked sent, not here"
    assert await settle(store, p, d, Post(kind="turn", key=A, text="..."), of_turn=True) == [], "settled once"
    assert await settle(store, p, d, Post(kind="turn", key="d1:r1:s1:other", text="..."), of_turn=True) == []


async def test_any_post_of_a_stopped_discussion_settles_every_placeholder_still_shown(store: Store) -> None:
    p, _, d = await setup(store, [(A, ME), (B, ME)], status=Status.STOPPED)
    await lease(store, p)
    assert sorted(await settle(store, p, d, Post(kind="notice", key="d1:stopped", text="..."), of_turn=False)) == [
        A, B]
    assert await stored(store) == []


async def test_what_was_shown_here_is_known_and_what_is_stored_is_read_again_after_the_lease_goes(
        store: Store) -> None:
    p, _, d = await setup(store, [])
    await lease(store, p)
    await p.shown(d, A, f"ts-{A}")
    assert await stored(store) == [A]
    async with store.tx() as tx:  # another process shows one while this one holds nothing of it in memory
        await tx.placeholders_shown([(d.id, B, f"ts-{B}", DEAD, datetime.now(UTC))])
    assert await settle(store, p, d, Post(kind="turn", key=A, text="..."), of_turn=True) == [A]
    assert await settle(store, p, d, Post(kind="turn", key=B, text="..."), of_turn=True) == [], \
        "what this lease knows is what it read and showed"
    p.forget(d.id)
    p.forget("d-never-driven")  # letting go of a discussion never driven here is no error
    p.settled("d-never-driven", [A])
    assert await settle(store, p, d, Post(kind="turn", key=B, text="..."), of_turn=True) == [B], \
        "the next lease reads the store"
    assert await settle(store, p, d, Post(kind="notice", key=f"{B}:failed", text="..."), of_turn=False) == [B]
    assert await stored(store) == [A]


async def test_a_placeholder_shown_for_a_discussion_not_driven_here_is_stored_only(store: Store) -> None:
    p, chat, d = await setup(store, [])
    await p.shown(d, A, f"ts-{A}")
    assert await stored(store) == [A]
    await lease(store, p)
    assert chat.retracted == [], "stored as this process's own"
    other = Placeholders(store, {"slack": chat}, FakeClock(), DriverConfig(owner="the-next-process"))
    await lease(store, other)
    assert chat.retracted == [f"ts-{A}"], "stored with the message it is, for the next process to remove"
    async with store.tx() as tx:
        await tx.placeholders_shown([(d.id, A, f"ts-{A}", ME, datetime.now(UTC))])
    assert await settle(store, p, d, Post(kind="notice", key=f"{A}:failed", text="..."), of_turn=False) == [A]
    assert await stored(store) == []
