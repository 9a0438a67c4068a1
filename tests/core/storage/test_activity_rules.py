"""The activity store's rules, rule by rule, on both backends: which polls and ballots a round reads and in what
order; a poll's ref and a synthesis rewritten alone; what a transaction marks changed; the hold a saved turn leaves to
its save; and, on PostgreSQL, a poll locked for a vote and a racing second click's place."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, text

from core.models import Ballot, HumanMessage, Phase, Poll, Turn, TurnStatus, Usage
from core.storage.store import Store, Tx
from tests.core.storage.stores import two_discussions
from tests.core.storage.test_invariants_pg import waiting_on_a_lock
from tests.fakes.cluster import until

T0 = datetime(2026, 3, 2, 9, 7, tzinfo=UTC)


async def opened(url: str) -> Store:
    return await two_discussions(url, T0)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = await opened(db_url)
    yield s
    await s.close()


async def add_poll(tx: Tx, key: str, discussion_id: str = "d1", round_: int = 1) -> Poll:
    poll = await tx.add_poll(Poll(key=key, discussion_id=discussion_id, round=round_, question=f"{key}?",
                                  options=["A", "B"], created_at=T0))
    assert poll is not None
    return poll


async def vote(tx: Tx, poll: Poll, voter: str, choice: int, minute: int) -> None:
    await tx.cast(Ballot(poll_id=poll.id, voter_id=voter, voter_name=voter.lower(), choice=choice,
                         created_at=T0 + timedelta(minutes=minute)))


async def as_analyzed(tx: Tx, *tables: str) -> None:
    """PostgreSQL's statistics as a live database's autovacuum keeps them: knowing the tables are small, its planner
    reads them whole, in stored order, where a row updated since comes after the rows added after it."""
    if tx.conn.dialect.name == "postgresql":
        for table in tables:
            await tx.conn.execute(text(f"ANALYZE {table}"))


Shown = list[tuple[str, list[tuple[str, int]]]]


def shown(found: list[tuple[Poll, list[Ballot]]]) -> Shown:
    return [(poll.key, [(b.voter_id, b.choice) for b in ballots]) for poll, ballots in found]


async def test_a_rounds_polls_come_in_the_order_added_each_with_its_live_ballots_in_the_order_cast(
        store: Store) -> None:
    """What a round's verdict and its charts count: a poll's people's choices come in the order cast, so a tie is
    shown in the order its options were first chosen; a changed choice counts where it was cast again."""
    async with store.tx() as tx:
        first, second, unvoted = [await add_poll(tx, k) for k in ("p1", "p2", "p3")]
        later = await add_poll(tx, "p4", round_=2)
        elsewhere = await add_poll(tx, "q1", discussion_id="d2")
        await vote(tx, second, "U1", 0, 0)  # the second poll's ballot is cast before any of the first's
        await vote(tx, first, "U1", 1, 1)
        await vote(tx, first, "U2", 0, 2)
        await vote(tx, first, "U1", 0, 3)  # a change of mind: the earlier ballot no longer counts
        await tx.add_ballots([Ballot(poll_id=first.id, voter_id="ai:ana", voter_name="Ana", choice=1, is_ai=True,
                                     created_at=T0)])
        await vote(tx, later, "U3", 1, 4)
        await vote(tx, elsewhere, "U4", 0, 5)
        one = await tx.round_ballots("d1", 1)
        every = await tx.round_ballots("d1")
        other = await tx.round_ballots("d2", 1)
        assert await tx.round_ballots("d1", 3) == [] and await tx.round_ballots("d3") == []
    round_one: Shown = [("p1", [("U2", 0), ("U1", 0), ("ai:ana", 1)]), ("p2", [("U1", 0)]), ("p3", [])]
    assert shown(one) == round_one
    assert shown(every) == [*round_one, ("p4", [("U3", 1)])], "no round named: every round's polls"
    assert shown(other) == [("q1", [("U4", 0)])]
    assert [p for p, _ in one] == [first, second, unvoted], "each poll as stored"
    assert one[0][1][1] == Ballot(poll_id=first.id, voter_id="U1", voter_name="u1", choice=0,
                                  created_at=T0 + timedelta(minutes=3)), "each ballot as cast"
    assert one[0][1][2].is_ai and not any(b.superseded for _, ballots in every for b in ballots)


async def test_a_polls_ballots_come_in_the_order_first_cast_a_superseded_one_where_it_was_cast(
        store: Store) -> None:
    async with store.tx() as tx:
        poll = await add_poll(tx, "p1")
        await vote(tx, poll, "U1", 0, 0)
        await vote(tx, poll, "U2", 1, 1)
        await vote(tx, poll, "U1", 1, 2)  # marks the first ballot superseded after the second was cast
        every = await tx.ballots(poll.id, include_superseded=True)
        live = await tx.ballots(poll.id)
    assert [(b.voter_id, b.choice, b.superseded) for b in every] == [("U1", 0, True), ("U2", 1, False),
                                                                     ("U1", 1, False)]
    assert [(b.voter_id, b.choice) for b in live] == [("U2", 1), ("U1", 1)]


async def test_a_polls_message_ref_is_set_on_that_poll_alone_and_polls_keep_the_order_added(store: Store) -> None:
    async with store.tx() as tx:
        first, second = await add_poll(tx, "p1"), await add_poll(tx, "p2")
        await tx.set_poll_ref(first.id, "ts1")  # after the second poll was added
        await as_analyzed(tx, "polls")
        found = await tx.polls("d1")
    assert [(p.key, p.message_ref) for p in found] == [("p1", "ts1"), ("p2", "")]
    assert found[1] == second


async def test_a_rewritten_synthesis_changes_that_one_alone_and_keeps_its_place(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_synthesis("d1:s1", "d1", 1, "round", {"verdict": "A", "n": 1}, "Verdict: A", T0)
        await tx.add_synthesis("d2:s1", "d2", 1, "round", {"verdict": "A"}, "Verdict: A", T0)
        await tx.set_synthesis("d1:s1", {"verdict": "B", "n": 1}, "Verdict: B")
        every = await tx.syntheses()
        await tx.set_synthesis("d2:s1", None, "no verdict")
        cleared = await tx.syntheses("d2")
    assert [(s["turn_key"], s["data"], s["text"]) for s in every] == [
        ("d1:s1", {"verdict": "B", "n": 1}, "Verdict: B"), ("d2:s1", {"verdict": "A"}, "Verdict: A")]
    assert every[0]["kind"] == "round" and every[0]["created_at"] == T0, "the rest of the row as written"
    assert [(s["data"], s["text"]) for s in cleared] == [(None, "no verdict")]


async def test_adding_or_answering_a_message_marks_the_peoples_messages_changed(store: Store) -> None:
    async with store.tx() as tx:
        assert tx.changes.humans is False
        added = await tx.add_human_message(HumanMessage(discussion_id="d1", author_id="U1", author_name="Dana",
                                                        text="?", needs_answer=True, created_at=T0))
        assert tx.changes.humans is True
    async with store.tx() as tx:
        await tx.mark_answered(added.id)
        assert tx.changes.humans is True, "a driver's kept copy of the messages is read again"


async def test_a_turn_settled_for_a_caller_that_saves_it_leaves_its_row_to_that_save(store: Store) -> None:
    turn = Turn(key="t1", discussion_id="d1", round=1, step=1, phase=Phase.STATEMENT, persona_key="ana",
                created_at=T0)
    since = T0 - timedelta(hours=1)
    async with store.tx() as tx:
        await tx.start_turns([turn], hold=(0.1, T0))
        found = await tx.held_turn("t1")
        assert found is not None
        await tx.settle_turn("d1", "t1", found[1], Usage(model="m", cost_usd=0.04), T0, saved=True)
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.04), "the spend is settled"
        still = await tx.held_turn("t1")
        assert still is not None and still[1][0] == pytest.approx(0.1), "the row waits for the save"
        await tx.save_turn(found[0].model_copy(update={"status": TurnStatus.DONE, "finished_at": T0}))
        done = await tx.held_turn("t1")
        assert done is not None and done[1] == (0.0, None), "the save cleared it"
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.04)


async def test_on_postgresql_a_turns_usage_and_its_workspaces_spend_are_written_in_one_statement(
        pg_url: str) -> None:
    """Each a statement of its own, they were two of the twelve a model call cost with 100 discussions."""
    store = await opened(pg_url)
    sent: list[str] = []
    event.listen(store.engine.sync_engine, "before_cursor_execute", lambda _c, _cur, sql, *_: sent.append(sql))
    try:
        turn = Turn(key="t1", discussion_id="d1", round=1, step=1, phase=Phase.STATEMENT, persona_key="ana",
                    created_at=T0)
        async with store.tx() as tx:
            await tx.start_turns([turn], hold=(0.1, T0))
            found = await tx.held_turn("t1")
            assert found is not None
            sent.clear()
            await tx.settle_turn("d1", "t1", found[1], Usage(model="m", input_tokens=7, cost_usd=0.04), T0,
                                 saved=True, charged=True)
            assert len(sent) == 1, sent
            assert await tx.workspace_spend("slack", "T1", T0 - timedelta(hours=1)) == pytest.approx(0.04)
            assert await tx.usage_total(["d1"]) == Usage(input_tokens=7, cost_usd=0.04)  # the call's row
    finally:
        await store.close()


async def test_on_postgresql_a_poll_read_for_a_vote_holds_back_another_until_it_ends_and_a_plain_read_does_not(
        pg_url: str) -> None:
    """A vote and the poll's closing run one after the other; a page or a tally reading the poll waits for
    neither and holds neither up."""
    store = await opened(pg_url)
    try:
        async with store.tx() as tx:
            poll = await add_poll(tx, "p1")
        async with store.tx() as reader:
            assert await reader.poll(poll.id) == poll
            async with store.tx() as voter:  # not held back by the plain read
                assert await asyncio.wait_for(voter.poll(poll.id, for_update=True), 5) == poll
        async with store.tx() as first:
            await first.poll(poll.id, for_update=True)

            async def second() -> Poll | None:
                async with store.tx() as tx:
                    return await tx.poll(poll.id, for_update=True)

            async def held_back() -> bool:
                return await waiting_on_a_lock(store)

            late = asyncio.create_task(second())
            await until(held_back, 5, "the second vote to wait for the first")
            assert not late.done()
        assert await asyncio.wait_for(late, 5) == poll
    finally:
        await store.close()


async def test_on_postgresql_a_racing_second_click_takes_the_first_clicks_place_among_the_polls_ballots(
        pg_url: str) -> None:
    """Two first clicks of one person racing: the later waits for the earlier and takes its ballot over, so the
    person keeps the place their first click gave them, ahead of a vote cast while the two raced."""
    store = await opened(pg_url)
    try:
        async with store.tx() as tx:
            poll = await add_poll(tx, "p1")
        async with store.tx() as first:
            await vote(first, poll, "U1", 0, 0)
            async with store.tx() as other:
                await vote(other, poll, "U2", 0, 1)

            async def second_click() -> None:
                async with store.tx() as tx:
                    await vote(tx, poll, "U1", 1, 2)

            async def held_back() -> bool:
                return await waiting_on_a_lock(store)

            late = asyncio.create_task(second_click())
            await until(held_back, 5, "the second click to wait for the first")
        await asyncio.wait_for(late, 5)
        async with store.tx() as tx:
            await as_analyzed(tx, "polls", "ballots")
            found = await tx.round_ballots("d1", 1)
            every = await tx.ballots(poll.id, include_superseded=True)
    finally:
        await store.close()
    assert shown(found) == [("p1", [("U1", 1), ("U2", 0)])]
    assert [(b.voter_id, b.choice) for b in every] == [("U1", 1), ("U2", 0)], "nothing superseded: one ballot each"
