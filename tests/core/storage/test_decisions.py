"""Decision records on SQLite (FTS5) and PostgreSQL (tsvector + GIN): found by words, scoped to channels."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from core.models import Decision, Discussion
from core.storage.store import Store

MARCH = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)


async def record(store: Store, did: str, topic: str, decided: str, channel: str = "C1", *,
                 workspace: str = "T1", when: datetime = MARCH) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id=did, topic=topic, platform="slack", workspace=workspace,
                                           channel=channel, created_at=when, updated_at=when))
        await tx.add_decision(Decision(discussion_id=did, platform="slack", workspace=workspace, channel=channel,
                                       topic=topic, flow="meeting", decided=decided, decided_at=when))


async def test_words_find_records_through_the_databases_own_index(store: Store) -> None:
    await record(store, "d1", "Should we move to trunk-based development?",
                 "Trunk-based development, with a four-week trial.")
    await record(store, "d2", "Which billing provider?", "Stay with the current provider for a year.")
    async with store.tx() as tx:
        found = await tx.decisions_found("slack", "T1", ["C1"], "trunk")
        stemmed = await tx.decisions_found("slack", "T1", ["C1"], "trials")  # the index stems: trial(s)
        both = await tx.decisions_found("slack", "T1", ["C1"], "trunk billing")  # every word must match
        either = await tx.decisions_found("slack", "T1", ["C1"], "trunk billing", match="any")
        hostile = await tx.decisions_found("slack", "T1", ["C1"], 'trunk" OR * NEAR( ) -- ; DROP')
        newest = await tx.decisions_found("slack", "T1", None, "")
        if store.engine.dialect.name == "postgresql":
            index = (await tx.conn.execute(text(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_decisions_search'"))).scalar()
            assert index is not None and "gin" in index.lower()
        else:
            assert (await tx.conn.execute(text("SELECT count(*) FROM decisions_fts"))).scalar() == 2
    assert [d.discussion_id for d in found] == ["d1"]
    assert [d.discussion_id for d in stemmed] == ["d1"]
    assert both == []
    assert {d.discussion_id for d in either} == {"d1", "d2"}
    assert hostile == []  # the words are searched as words; nothing the person typed is query syntax
    assert {d.discussion_id for d in newest} == {"d1", "d2"}


async def test_only_the_channels_given_and_only_this_workspace(store: Store) -> None:
    await record(store, "d1", "Trunk-based development?", "Adopt it.", channel="C1")
    await record(store, "d2", "Trunk-based development for mobile?", "Not yet.", channel="C2")
    await record(store, "d3", "Trunk-based development in another company?", "Yes.", workspace="T2")
    async with store.tx() as tx:
        member = await tx.decisions_found("slack", "T1", ["C1"], "trunk")
        admin = await tx.decisions_found("slack", "T1", None, "trunk")
    assert [d.discussion_id for d in member] == ["d1"]
    assert {d.discussion_id for d in admin} == {"d1", "d2"}


async def test_a_record_is_written_once(store: Store) -> None:
    await record(store, "d1", "Trunk?", "Adopt it.")
    async with store.tx() as tx:
        await tx.add_decision(Decision(discussion_id="d1", platform="slack", workspace="T1", channel="C1",
                                       topic="Trunk?", flow="meeting", decided="Twice", decided_at=MARCH))
        found = await tx.decisions_found("slack", "T1", None, "")
    assert [d.decided for d in found] == ["Adopt it."]


async def test_a_seat_wait_is_stored_once_with_its_deadline(store: Store) -> None:
    from datetime import timedelta

    from core.storage.seat_waits import SeatWait

    await record(store, "d1", "Trunk?", "Adopt it.")
    wait = SeatWait(turn_key="d1:r1:s0:dana", discussion_id="d1", persona_key="dana", user_id="U1", asked_at=MARCH,
                    nudge_at=MARCH + timedelta(minutes=15), deadline=MARCH + timedelta(minutes=30))
    async with store.tx() as tx:
        assert await tx.add_seat_wait(wait)
        assert not await tx.add_seat_wait(wait.model_copy(update={"deadline": MARCH + timedelta(hours=5)}))
    async with store.tx() as tx:
        [kept] = await tx.seat_waits("d1")
        kept.state, kept.answer = "answered", "Billing first."
        await tx.save_seat_wait(kept)
    async with store.tx() as tx:
        [again] = await tx.seat_waits("d1")
    assert (again.deadline, again.nudge_at, again.state, again.answer) == (
        MARCH + timedelta(minutes=30), MARCH + timedelta(minutes=15), "answered", "Billing first.")
