"""Placeholders many discussions show at the same moment are stored together: each chat hears back only once its
own row is committed (a crash after that leaves the next process a row to remove the message by), and the rows that
come together (or while one is being written) share a transaction instead of taking one each."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from sqlalchemy import event

from bot.wiring import App
from core.models import Discussion


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
