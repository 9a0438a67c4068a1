"""What people and models add to a discussion, through the real store on both backends: replies, polls and
ballots, syntheses, usage, the workspace's spend per quarter hour and the turns' reservations of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from core.models import Ballot, Discussion, HumanMessage, Phase, Poll, Status, Turn, Usage
from core.storage.db import make_engine, migrate
from core.storage.store import Store

T0 = datetime(2026, 3, 2, 9, 7, tzinfo=UTC)  # 09:07: in the 09:00 quarter hour


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    engine = make_engine(db_url)
    await migrate(engine)
    s = Store(engine)
    async with s.tx() as tx:
        for did, workspace in (("d1", "T1"), ("d2", "T1"), ("d3", "T2")):
            await tx.add_discussion(Discussion(id=did, topic=did, status=Status.RUNNING, platform="slack",
                                               workspace=workspace, channel="C1", created_at=T0, updated_at=T0,
                                               budget_usd=5.0))
    yield s
    await s.close()


def usage(cost: float, tokens: int = 10) -> Usage:
    return Usage(model="m", input_tokens=tokens, output_tokens=2 * tokens, cache_write_tokens=3 * tokens,
                 cache_read_tokens=4 * tokens, cost_usd=cost)


async def test_an_event_is_seen_once_and_forgotten_after_a_day(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.first_sight("Ev1", T0) and not await tx.first_sight("Ev1", T0)
        assert await tx.first_sight("", T0) and await tx.first_sight("", T0)  # no id: never a duplicate
        assert await tx.first_sight("Ev2", T0 + timedelta(hours=2))
        assert await tx.prune_events(T0) == 0  # seen at that instant: kept
        assert await tx.prune_events(T0 + timedelta(hours=1)) == 1
        assert await tx.first_sight("Ev1", T0) and not await tx.first_sight("Ev2", T0)


async def test_replies_are_kept_in_order_and_marked_answered(store: Store) -> None:
    async with store.tx() as tx:
        first = await tx.add_human_message(HumanMessage(discussion_id="d1", author_id="U1", author_name="Dana",
                                                        text="one", needs_answer=True, created_at=T0))
        second = await tx.add_human_message(HumanMessage(discussion_id="d1", author_id="U2", author_name="Lee",
                                                         text="two", created_at=T0))
        await tx.add_human_message(HumanMessage(discussion_id="d2", author_id="U2", author_name="Lee", text="x",
                                                created_at=T0))
        assert first.id and second.id > first.id
        await tx.mark_answered(first.id)
        got = await tx.human_messages("d1")
    assert [(m.text, m.answered, m.needs_answer) for m in got] == [("one", True, True), ("two", False, False)]


async def test_a_poll_is_added_once_per_key_and_saved(store: Store) -> None:
    poll = Poll(key="d1:p1", discussion_id="d1", round=1, question="Which?", options=["A", "B"], created_at=T0)
    async with store.tx() as tx:
        added = await tx.add_poll(poll)
        assert added is not None and added.id > 0
        assert await tx.add_poll(poll) is None
        other = await tx.add_poll(poll.model_copy(update={"key": "d1:p2"}))
        assert other is not None and other.id > added.id
        await tx.save_poll(added.model_copy(update={"closed": True, "message_ref": "ts1"}))
        found = await tx.poll(added.id, for_update=True)
        assert found is not None and found.closed and found.message_ref == "ts1" and found.options == ["A", "B"]
        assert await tx.poll(987654) is None
        assert [p.key for p in await tx.polls("d1")] == ["d1:p1", "d1:p2"] and await tx.polls("d2") == []


async def test_one_live_ballot_per_voter_the_old_ones_kept(store: Store) -> None:
    async with store.tx() as tx:
        poll = await tx.add_poll(Poll(key="p", discussion_id="d1", round=1, question="?", options=["A", "B"],
                                      created_at=T0))
        assert poll is not None
        await tx.cast(Ballot(poll_id=poll.id, voter_id="U1", voter_name="Dana", choice=0, created_at=T0))
        await tx.cast(Ballot(poll_id=poll.id, voter_id="U1", voter_name="Dana D.", choice=1,
                             created_at=T0 + timedelta(minutes=1)))
        await tx.cast(Ballot(poll_id=poll.id, voter_id="U2", voter_name="Lee", choice=1, created_at=T0))
        await tx.add_ballots([Ballot(poll_id=poll.id, voter_id="ai:ana", voter_name="Ana", choice=0, is_ai=True,
                                     created_at=T0)])
        await tx.add_ballots([])
        other = await tx.add_poll(Poll(key="q", discussion_id="d1", round=1, question="?", options=["A", "B"],
                                       created_at=T0))
        assert other is not None
        await tx.cast(Ballot(poll_id=other.id, voter_id="U1", voter_name="Dana", choice=0, created_at=T0))
        assert [b.choice for b in await tx.ballots(other.id)] == [0]
        live = await tx.ballots(poll.id)
        every = await tx.ballots(poll.id, include_superseded=True)
    assert [(b.voter_id, b.choice, b.voter_name) for b in live] == [("U1", 1, "Dana D."), ("U2", 1, "Lee"),
                                                                    ("ai:ana", 0, "Ana")]
    assert len(every) == 4 and [b.superseded for b in every if b.voter_id == "U1"] == [True, False]


async def test_a_synthesis_is_written_once_per_turn_and_read_by_discussion_and_time(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_synthesis("d1:s1", "d1", 1, "round", {"a": 1}, "first", T0)
        await tx.add_synthesis("d1:s1", "d1", 1, "round", {"a": 2}, "again", T0)
        await tx.add_synthesis("d2:s1", "d2", 1, "final", None, "other", T0 + timedelta(hours=1))
        mine = await tx.syntheses("d1")
        later = await tx.syntheses(since=T0 + timedelta(minutes=30))
        assert [x["text"] for x in await tx.syntheses(since=T0 + timedelta(hours=1))] == ["other"]  # from then on
        every = await tx.syntheses()
    assert [(s["text"], s["data"]) for s in mine] == [("first", {"a": 1})]
    assert [s["text"] for s in later] == ["other"] and [s["text"] for s in every] == ["first", "other"]


async def test_usage_adds_to_its_discussion_and_its_workspaces_quarter_hour(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_usage("d1", "k1", usage(0.25), T0)
        await tx.add_usage("d1", "k2", usage(0.5, 1), T0 + timedelta(minutes=7))  # 09:14: the same quarter hour
        await tx.add_usage("d2", "k3", usage(1.0), T0 + timedelta(minutes=8))  # 09:15: the next one
        await tx.add_usage("d3", "k4", usage(2.0), T0)  # another workspace
        await tx.add_usage(None, "digest:1", usage(4.0), T0, workspace=("slack", "T1"))
        await tx.add_usage(None, "orphan", usage(8.0), T0)  # no discussion, no workspace: recorded, not charged
        d1 = await tx.discussion("d1")
        assert d1 is not None and d1.cost_usd == pytest.approx(0.75)
        assert await tx.workspace_spend("slack", "T1", T0 - timedelta(hours=1)) == pytest.approx(5.75)
        assert await tx.workspace_spend("slack", "T1", datetime(2026, 3, 2, 9, 15, tzinfo=UTC)) == pytest.approx(1.0)
        assert await tx.workspace_spend("slack", "T2", T0 - timedelta(hours=1)) == pytest.approx(2.0)
        assert await tx.workspace_spend("discord", "T1", T0 - timedelta(hours=1)) == 0.0
        assert d1.costliest_call_usd == pytest.approx(0.5)  # kept on the row: what its next turns reserve
        total = await tx.usage_total(["d1", "d2"])
        assert (total.input_tokens, total.output_tokens, total.cache_write_tokens, total.cache_read_tokens) == (
            21, 42, 63, 84)
        assert total.cost_usd == pytest.approx(1.75)
        window = await tx.usage_total(since=T0 + timedelta(minutes=1), until=T0 + timedelta(minutes=8))
        assert window.cost_usd == pytest.approx(0.5)
        assert (await tx.usage_total()).cost_usd == pytest.approx(15.75)
        none = await tx.usage_total([])
        assert (none.input_tokens, none.output_tokens, none.cache_write_tokens, none.cache_read_tokens,
                none.cost_usd) == (0, 0, 0, 0, 0.0)
        assert (await tx.usage_total(since=T0 + timedelta(minutes=8))).cost_usd == pytest.approx(1.0)  # from then on
        assert await tx.prune_spend(datetime(2026, 3, 2, 9, 15, tzinfo=UTC)) == 2  # T1's and T2's 09:00
        assert await tx.workspace_spend("slack", "T1", T0 - timedelta(hours=1)) == pytest.approx(1.0)


def turn(key: str, at: datetime) -> Turn:
    return Turn(key=key, discussion_id="d1", round=1, step=1, phase=Phase.STATEMENT, persona_key=key, created_at=at)


async def test_a_discussion_keeps_its_costliest_call_so_far_which_a_saved_copy_never_writes_back(
        store: Store) -> None:
    async with store.tx() as tx:
        before = await tx.discussion("d1")
        assert before is not None and before.costliest_call_usd == 0.0
        for i, cost in enumerate((0.25, 0.5, 0.1)):
            await tx.add_usage("d1", f"k{i}", usage(cost), T0)
        d1 = await tx.discussion("d1")
        assert d1 is not None and (d1.cost_usd, d1.costliest_call_usd) == pytest.approx((0.85, 0.5))
        await tx.save_discussion(before, T0)  # a copy read before the calls
        saved = await tx.discussion("d1")
        assert saved is not None and (saved.cost_usd, saved.costliest_call_usd) == pytest.approx((0.85, 0.5))


async def test_a_reservation_is_held_in_its_quarter_hour_until_released_once(store: Store) -> None:
    async with store.tx() as tx:
        await tx.start_turns([turn(k, T0) for k in ("t1", "t2")], hold=(0.1, T0))
        since = T0 - timedelta(hours=1)
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.2)
        again = T0 + timedelta(minutes=30)
        await tx.start_turns([turn("t1", again)], hold=(0.3, again))  # started again: one reservation, anew
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.4)
        assert await tx.workspace_spend("slack", "T1", T0 + timedelta(minutes=23)) == pytest.approx(0.3)
        await tx.add_usage("d1", "t1", usage(0.05), T0 + timedelta(minutes=40))
        for _ in range(2):  # twice changes nothing
            found = await tx.held_turn("t1")
            assert found is not None
            await tx.settle_turn("d1", "t1", found[1], None, T0 + timedelta(minutes=40))
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.15)
        # Held again at 09:37, given back at 09:47: from the 09:30 quarter hour it was held in, not from 09:45's.
        assert await tx.workspace_spend("slack", "T1", T0 + timedelta(minutes=38)) == pytest.approx(0.05)
        await tx.set_turn_status(["t2"], Turn.model_fields["status"].default)  # set aside: released too
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.05)
        await tx.start_turns([], hold=(0.1, T0))
        await tx.start_turns([turn("t2", T0)], hold=(0.0, T0))  # nothing to hold
        assert await tx.workspace_spend("slack", "T1", since) == pytest.approx(0.05)


async def test_a_finished_turn_gives_back_its_hold_where_it_was_held_and_pays_where_it_ended(store: Store) -> None:
    """The hold and the cost meet in one write only inside one quarter hour: a turn started at 09:14 and finished
    at 09:16 takes its hold back from 09:00's quarter hour and pays in 09:15's, so a budget day (or any window)
    that starts between them sees what was really spent."""
    started, ended = T0 + timedelta(minutes=7), T0 + timedelta(minutes=9)  # 09:14 and 09:16
    async with store.tx() as tx:
        fresh = await tx.start_turns([turn(k, started) for k in ("t1", "t2")], hold=(0.1, started))
        assert fresh == {"t1", "t2"}
        again = await tx.start_turns([turn("t2", started)], hold=(0.1, started))
        assert again == set(), "a turn started again is not fresh: its earlier hold is given back first"
        assert await tx.workspace_spend("slack", "T1", T0 - timedelta(hours=1)) == pytest.approx(0.2)
        found = await tx.held_turn("t1")
        assert found is not None and found[1][0] == pytest.approx(0.1)
        await tx.settle_turn("d1", "t1", found[1], usage(0.04), ended)
        found = await tx.held_turn("t2")
        assert found is not None
        await tx.settle_turn("d1", "t2", found[1], usage(0.03), started + timedelta(seconds=30))  # same quarter
        assert (await tx.held_turn("t1") or (None, (1.0, None)))[1][0] == 0.0, "the hold is given back once"
        quarter = T0 + timedelta(minutes=8)  # 09:15
        assert await tx.workspace_spend("slack", "T1", quarter) == pytest.approx(0.04)
        assert await tx.workspace_spend("slack", "T1", T0 - timedelta(hours=1)) == pytest.approx(0.07)
        d = await tx.discussion("d1")
        assert d is not None and d.cost_usd == pytest.approx(0.07)
