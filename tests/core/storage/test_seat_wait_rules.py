"""A seated person's turns in the store, rule by rule, on both backends: what waits, in the order asked; one wait a
turn; a saved answer; and the queued post a person's own reply makes unneeded, forgotten only while no drain has
touched it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from core.models import Post
from core.storage.seat_waits import SeatWait
from core.storage.store import Store
from tests.core.storage.stores import two_discussions

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = await two_discussions(db_url, T0)
    yield s
    await s.close()


def wait(turn_key: str, did: str = "d1", minutes: int = 0, user: str = "U1") -> SeatWait:
    asked = T0 + timedelta(minutes=minutes)
    return SeatWait(turn_key=turn_key, discussion_id=did, persona_key="p1", user_id=user, asked_at=asked,
                    nudge_at=asked + timedelta(minutes=15), deadline=asked + timedelta(minutes=30))


async def queued(store: Store, did: str) -> list[str]:
    async with store.tx() as tx:
        return [post.key for _, post, _, _ in await tx.pending_posts(did)]


async def test_a_discussions_waits_come_in_the_order_they_were_asked(store: Store) -> None:
    async with store.tx() as tx:
        for key, minutes in (("t-late", 20), ("t-early", 0), ("t-middle", 10)):
            assert await tx.add_seat_wait(wait(key, minutes=minutes))
        await tx.add_seat_wait(wait("t-other", did="d2", minutes=5))
        got = await tx.seat_waits("d1")
    assert [w.turn_key for w in got] == ["t-early", "t-middle", "t-late"]
    assert got[0] == wait("t-early")  # everything stored comes back as it was written


async def test_a_turn_waits_once_however_often_it_is_asked(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.add_seat_wait(wait("t1"))
        assert not await tx.add_seat_wait(wait("t1", user="U2", minutes=5))  # a re-run found it: kept as first
        got = await tx.seat_waits("d1")
    assert [(w.turn_key, w.user_id, w.asked_at) for w in got] == [("t1", "U1", T0)]


async def test_an_answer_saved_is_that_turns_alone(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_seat_wait(wait("t1"))
        await tx.add_seat_wait(wait("t2", minutes=1))
        answered = wait("t1").model_copy(update={"state": "answered", "answer": "Ship it", "stance": "for"})
        await tx.save_seat_wait(answered)
        got = {w.turn_key: w for w in await tx.seat_waits("d1")}
    assert got["t1"] == answered
    assert got["t2"] == wait("t2", minutes=1)


async def test_a_reply_forgets_only_its_turns_untried_post(store: Store) -> None:
    async with store.tx() as tx:
        for key in ("d1-r1-p1", "d1-r1-p2"):
            await tx.enqueue("d1", Post(kind="turn", key=key, text=key), T0)
        await tx.enqueue("d2", Post(kind="turn", key="d2-r1-p1", text="other"), T0)
        await tx.drop_post("d1", "d1-r1-p1")
        # Asked for in the wrong discussion, another discussion's post stays.
        await tx.drop_post("d1", "d2-r1-p1")
    assert await queued(store, "d1") == ["d1-r1-p2"]
    assert await queued(store, "d2") == ["d2-r1-p1"]


async def test_a_post_a_drain_has_tried_or_sent_is_not_forgotten(store: Store) -> None:
    async with store.tx() as tx:
        for key in ("tried", "sent"):
            await tx.enqueue("d1", Post(kind="turn", key=key, text=key), T0)
        ids = {post.key: oid for oid, post, _, _ in await tx.pending_posts("d1")}
        # A claimed attempt may have reached the platform already: the post is no longer the store's to drop. A
        # drain claims every post before sending it, so a sent post was claimed too.
        for key in ("tried", "sent"):
            assert await tx.claim_send(ids[key], 0, "me", T0, "d1", fenced=True)
        await tx.mark_sent(ids["sent"], "ts-1", T0, None)
        await tx.drop_post("d1", "tried")
        await tx.drop_post("d1", "sent")
        assert [post.key for _, post, _, _ in await tx.pending_posts("d1")] == ["tried"]
        assert await tx.post_ref("sent") == "ts-1"


@pytest.mark.parametrize("state", ["waiting", "answered", "stand_in", "back", "done"])
async def test_each_state_a_seats_turn_goes_through_is_stored_and_read_back(store: Store, state: str) -> None:
    """Asked, answered, handed to the stand-in, the person back, done: a restart reads the turn where it was."""
    async with store.tx() as tx:
        await tx.add_seat_wait(wait("t1"))
        await tx.save_seat_wait(SeatWait.model_validate({**wait("t1").model_dump(), "state": state}))
        [got] = await tx.seat_waits("d1")
    assert got.state == state
