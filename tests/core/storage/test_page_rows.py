"""What the pages read, on SQLite and PostgreSQL: a page's mark moves with each thing it shows and with nothing
else; words so far are one row per turn, the newest kept; a channel's log pairs discussions with their records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.models import Ballot, Decision, Discussion, HumanMessage, Poll
from core.storage.store import Store

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


async def test_the_mark_moves_with_what_the_page_shows(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.page_mark("nope") is None
        await tx.add_discussion(Discussion(id="d1", topic="Monorepo?", channel="C1", created_at=T0, updated_at=T0))
        await tx.add_discussion(Discussion(id="d2", topic="Other", channel="C1", created_at=T0, updated_at=T0))
    marks = []

    async def mark() -> str:
        async with store.tx() as tx:
            got = await tx.page_mark("d1")
        assert got is not None and got[1] == 0
        marks.append(got[0])
        return got[0]

    await mark()
    assert await mark() == marks[0], "nothing changed, the same mark"
    async with store.tx() as tx:
        await tx.live_text_shown("d2", "k", "another discussion's words", T0)
    assert await mark() == marks[0], "another discussion's changes are not this page's"
    async with store.tx() as tx:
        await tx.live_text_shown("d1", "k", "So far", T0)
    assert await mark() != marks[-2]
    async with store.tx() as tx:
        await tx.live_text_shown("d1", "k", "So far, more", T0 + timedelta(seconds=3))
        assert await tx.live_texts("d1") == {"k": "So far, more"}
    assert await mark() != marks[-2]
    async with store.tx() as tx:
        await tx.add_human_message(HumanMessage(discussion_id="d1", author_id="U2", author_name="Lee", text="Hi",
                                                created_at=T0))
    assert await mark() != marks[-2]
    async with store.tx() as tx:
        poll = await tx.add_poll(Poll(discussion_id="d1", key="d1:poll:1", round=1, question="Which?",
                                      options=["A", "B"], created_at=T0))
    assert await mark() != marks[-2]
    async with store.tx() as tx:
        assert poll is not None
        await tx.add_ballots([Ballot(poll_id=poll.id, voter_id="U2", voter_name="Lee", choice=0, created_at=T0)])
    assert await mark() != marks[-2]
    async with store.tx() as tx:
        d = await tx.discussion("d1")
        assert d is not None
        d.options.links += 1
        await tx.save_discussion(d, T0 + timedelta(seconds=5))
        got = await tx.page_mark("d1")
    assert got is not None and got[1] == 1, "the links' key version, read with the mark"
    async with store.tx() as tx:
        await tx.forget_live_texts("d1")
        assert await tx.live_texts("d1") == {} and await tx.live_texts("d2") != {}


async def test_a_channels_log_pairs_discussions_with_their_records(store: Store) -> None:
    async with store.tx() as tx:
        for i, channel in enumerate(["C1", "C1", "C2"]):
            at = T0 + timedelta(minutes=i)
            await tx.add_discussion(Discussion(id=f"d{i}", topic=f"Topic {i}", platform="slack", workspace="T1",
                                               channel=channel, created_at=at, updated_at=at))
        await tx.add_decision(Decision(discussion_id="d0", platform="slack", workspace="T1", channel="C1",
                                       topic="Topic 0", flow="moderated", decided="Yes.", decided_at=T0))
        log = await tx.channel_log("slack", "T1", "C1")
        everywhere = await tx.channel_log("slack", "T1", None)
        elsewhere = await tx.channel_log("slack", "T2", None)
    assert [(d.id, r.decided if r else None) for d, r in log] == [("d1", None), ("d0", "Yes.")]
    assert [d.id for d, _ in everywhere] == ["d2", "d1", "d0"] and elsewhere == []
