"""Marks on a person's message in the thread: the reaction saying a turn has answered it, queued as a post."""

from __future__ import annotations

from datetime import datetime

from core.models import Discussion, Post
from core.storage.store import Tx

ANSWERED = "answered"  # the mark's name; each adapter shows it as its platform's reaction (✅)


def answered_post(d: Discussion, message_id: int, ref: str) -> Post:
    return Post(kind="reaction", key=f"{d.id}:h{message_id}:{ANSWERED}", text=ANSWERED, reacts_to=ref)


async def mark_heard(tx: Tx, d: Discussion, message_id: int, now: datetime) -> None:
    """Queue the ✅ on the message a turn has just answered (in the turn's transaction: durable, sent once, in
    order after the answer); a message with no ref on the platform (the console, an older row) gets none."""
    ref = next((m.ref for m in await tx.human_messages(d.id) if m.id == message_id), "")
    if ref:
        await tx.enqueue(d.id, answered_post(d, message_id, ref), now)
