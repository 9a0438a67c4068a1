"""Placeholders (core/running/placeholders.py): what one costs the database. Placeholders many discussions show at
the same moment are stored together: each chat hears back only once its own row is committed (a crash after that
leaves the next process a row to remove the message by), and the rows that come together (or while one is being
written) share a transaction instead of taking one each. A turn's post settles its placeholder by being marked
sent: no statement of its own, and no takeover removes a placeholder that became a post."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import event, func, select
from sqlalchemy.engine.default import CACHE_HIT

from bot.wiring import App
from core.models import Discussion, Post, Status
from core.storage import tables as t
from core.storage.store import Store


async def test_placeholders_shown_at_once_are_each_stored_before_their_chat_hears_back_in_one_transaction(
        app: App) -> None:
    shown_by = 12  # discussions whose turns begin at once, each showing a "thinking…" message
    now = datetime.now(UTC)
    discussions = [Discussion(id=f"d{i}", topic=f"Adopt trunk-based development in team {i}?", platform="slack",
                              channel=f"C{i}", created_at=now, updated_at=now) for i in range(shown_by)]
    async with app.store.tx() as tx:
        for d in discussions:
            await tx.add_discussion(d)
    begun: list[int] = []
    event.listen(app.store.engine.sync_engine, "begin", lambda conn: begun.append(1))
    stored_at_return: dict[str, list[str]] = {}

    async def show(d: Discussion) -> None:
        await app.driver.placeholder_shown(d, f"{d.id}:r1:s1:expert", f"17000000{d.id[1:]}.0001")
        async with app.store.tx() as tx:  # what a process taking over would find, once the chat has heard back
            stored_at_return[d.id] = [key for key, _, _ in await tx.placeholders(d.id)]

    await asyncio.gather(*(show(d) for d in discussions))
    assert stored_at_return == {d.id: [f"{d.id}:r1:s1:expert"] for d in discussions}
    writes = len(begun) - shown_by  # each caller's own read above took one
    assert writes == 1, f"{writes} transactions stored {shown_by} placeholders shown at once"


async def test_a_takeover_finds_left_only_the_placeholders_whose_turns_posts_have_not_gone_out(store: Store) -> None:
    now = datetime.now(UTC)
    d = Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack", channel="C1", created_at=now,
                   updated_at=now)
    posted, queued, writing = "d1:r1:s1:expert", "d1:r1:s1:contrarian", "d1:r1:s1:historian"
    async with store.tx() as tx:
        await tx.add_discussion(d)
        await tx.placeholders_shown([(d.id, key, f"ts-{key}", "a-dead-process", now)
                                     for key in (posted, queued, writing)])
        for key in (posted, queued):
            await tx.enqueue(d.id, Post(kind="turn", key=key, text=f"What {key} wrote."), now, turn_key=key)
        [(sent_id, _, _, _), _] = await tx.pending_posts(d.id)
        await tx.mark_sent(sent_id, f"ts-{posted}", now, posted)
    async with store.tx() as tx:
        left = [key for key, _, _ in await tx.placeholders(d.id)]
        keys = sorted(await tx.placeholder_keys(d.id))
    assert left == [queued, writing], "the placeholder that became its post is not removed by a takeover"
    assert keys == sorted([queued, writing])
    counts = []
    for status in (Status.RUNNING, Status.STOPPED):  # the discussion ends: the settled row goes, the others stay
        async with store.tx() as tx:
            d.status = status
            await tx.save_discussion(d, now)
            await tx.forget_settled_placeholders(d.id)
            counts.append((await tx.conn.execute(select(func.count()).select_from(t.placeholders))).scalar())
    assert counts == [3, 2], "a running discussion's settled rows are kept; an ended one's let go"


async def test_placeholder_writes_of_any_number_of_rows_are_compiled_once(store: Store) -> None:
    """Built with its rows as a list, the write was a statement SQLAlchemy cannot cache: compiled anew at every
    batch, it cost more than running it."""
    now = datetime.now(UTC)
    async with store.tx() as tx:
        for i in range(3):
            await tx.add_discussion(Discussion(id=f"d{i}", topic="Adopt trunk?", platform="slack", channel=f"C{i}",
                                               created_at=now, updated_at=now))
    stats: list[object] = []

    def note(conn: object, cursor: object, sql: str, params: object, context: Any, *_: object) -> None:
        if "INTO placeholders" in sql:
            stats.append(context.cache_hit)

    event.listen(store.engine.sync_engine, "before_cursor_execute", note)
    for batch in (1, 3, 2, 3, 1):  # one row is one shape to compile, many rows another
        async with store.tx() as tx:
            await tx.placeholders_shown([(f"d{i}", f"d{i}:r1:s{batch}", f"ts-{batch}", "me", now)
                                         for i in range(batch)])
    assert stats[2:] == [CACHE_HIT] * 3, stats
