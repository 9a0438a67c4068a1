"""What PostgreSQL itself enforces between concurrent transactions (two replicas, or two clicks at once): one live
ballot per person and poll, a synthesis and a roster written once; and event ids forgotten after a day."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from core.deliberation.engine import State, TurnPlan
from core.deliberation.schemas import ExpertSpec, RosterSpec
from core.models import Ballot, Discussion, Phase, Poll, Turn
from core.running.effects import record_turn
from core.storage.db import make_engine, migrate
from core.storage.store import Store, Tx
from tests.fakes.cluster import until

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[Store]:
    engine = make_engine(pg_url)
    await migrate(engine)
    s = Store(engine)
    async with s.tx() as tx:
        await tx.add_discussion(Discussion(id="d1", topic="Trunk-based development?", created_at=T0, updated_at=T0))
    yield s
    await s.close()


async def waiting_on_a_lock(store: Store) -> bool:
    async with store.engine.connect() as conn:
        query = text("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                     "AND wait_event_type = 'Lock'")
        return bool((await conn.execute(query)).scalar())


async def race(store: Store, first: Callable[[Tx], Awaitable[None]], second: Callable[[Tx], Awaitable[None]]) -> None:
    """`first` writes and stays uncommitted until `second`, in its own transaction, is blocked behind it; then
    both commit: the interleaving two replicas (or two clicks) produce, made certain."""
    async with store.tx() as tx1:
        await first(tx1)

        async def other() -> None:
            async with store.tx() as tx2:
                await second(tx2)

        late = asyncio.create_task(other())

        async def blocked() -> bool:
            return await waiting_on_a_lock(store)

        await until(blocked, 5, "the second writer to wait for the first")
    await asyncio.wait_for(late, 5)  # raises if the second writer failed


async def test_a_double_click_on_a_first_vote_leaves_one_live_ballot(store: Store) -> None:
    async with store.tx() as tx:
        poll = await tx.add_poll(Poll(key="p", discussion_id="d1", round=1, question="?", options=["a", "b"],
                                      created_at=T0))
    assert poll is not None

    def click(choice: int) -> Callable[[Tx], Awaitable[None]]:
        return lambda tx: tx.cast(Ballot(poll_id=poll.id, voter_id="U1", voter_name="Dana", choice=choice,
                                         created_at=T0))

    await race(store, click(0), click(1))
    async with store.tx() as tx:
        live = await tx.ballots(poll.id)
    assert [(b.voter_id, b.choice) for b in live] == [("U1", 1)], "one live ballot: the later click's"


async def test_a_synthesis_is_written_once_by_racing_writers(store: Store) -> None:
    def write(text_: str) -> Callable[[Tx], Awaitable[None]]:
        return lambda tx: tx.add_synthesis("d1:r1:s5:moderator", "d1", 1, "round", None, text_, T0)

    await race(store, write("first"), write("second"))
    async with store.tx() as tx:
        rows = await tx.syntheses("d1")
    assert [r["text"] for r in rows] == ["first"]


async def test_a_roster_turn_is_recorded_once_by_racing_writers(store: Store) -> None:
    """Two drivers that both ran the roster turn (one whose lease ran out mid-call): one roster, one header."""
    plan = TurnPlan(key="d1:roster", round=1, step=0, phase=Phase.ROSTER, persona_key="moderator")
    async with store.tx() as tx:
        await tx.start_turns([Turn(key=plan.key, discussion_id="d1", round=1, step=0, phase=Phase.ROSTER,
                                   persona_key="moderator", created_at=T0)])
        d = await tx.discussion("d1")
    assert d is not None
    state = State(discussion=d, personas=[], turns=[])

    def roster(surname: str) -> Callable[[Tx], Awaitable[None]]:
        spec = RosterSpec(experts=[
            ExpertSpec(name=f"{first} {surname}", title="Engineer", expertise=["delivery"], thinking_style="careful",
                       bias="none", reply_tendency="brief") for first in ("Ana", "Ben", "Chloé", "Dev")])
        return lambda tx: record_turn(tx, state, plan, "", spec.model_dump(), None, "", T0, offline=True)

    await race(store, roster("First"), roster("Second"))
    async with store.tx() as tx:
        names = [p.name for p in await tx.personas("d1")]
        posts = [post.key for post, _ in await tx.posts("d1")]
        turn = await tx.turn(plan.key)
    assert turn is not None and turn.data is not None
    assert next(e["name"] for e in turn.data["experts"]) == "Ana First", "the turn records what the roster shows"
    assert [n for n in names if n.endswith(("First", "Second"))] == ["Ana First", "Ben First", "Chloé First",
                                                                     "Dev First"]
    assert posts == [f"d1:header:{plan.key}"], "one header, keyed by the roster turn it shows"


async def test_event_ids_are_forgotten_after_a_day(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.first_sight("Ev-old", T0)
        assert await tx.first_sight("Ev-new", T0 + timedelta(hours=23))
    async with store.tx() as tx:
        assert await tx.prune_events(T0 + timedelta(days=1, seconds=1) - timedelta(days=1)) == 1
    async with store.tx() as tx:
        assert await tx.first_sight("Ev-old", T0 + timedelta(days=1, seconds=2)), "a day later: forgotten"
        assert not await tx.first_sight("Ev-new", T0 + timedelta(days=1, seconds=2)), "still within its day"
