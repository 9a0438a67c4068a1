"""Seats held by people: each of their turns waits here, with its deadline stored so a restart keeps it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel
from sqlalchemy import delete, select, update

from core.storage import tables as t
from core.storage.rows import Repo, _row

SeatState = Literal["waiting", "answered", "stand_in", "back", "done"]


class SeatWait(BaseModel):
    """One turn of a person's seat: asked, nudged once at half the wait, answered or handed to the stand-in."""

    turn_key: str
    discussion_id: str
    persona_key: str
    user_id: str
    asked_at: datetime
    nudge_at: datetime | None
    deadline: datetime
    state: SeatState = "waiting"
    answer: str = ""
    stance: str = ""  # the stance menu's pick; on a ranked turn, the places' option ids from its menus, "|"-joined


class SeatRepo(Repo):
    async def seat_waits(self, discussion_id: str) -> list[SeatWait]:
        c = t.seat_waits.c
        rows = (await self.conn.execute(select(t.seat_waits).where(c.discussion_id == discussion_id)
                                        .order_by(c.asked_at))).all()
        return [SeatWait.model_validate(_row(r)) for r in rows]

    async def add_seat_wait(self, wait: SeatWait) -> bool:
        """Start waiting for a person's turn; False when that turn already waits (a re-run found it)."""
        result = await self.conn.execute(self.insert(t.seat_waits).values(**wait.model_dump())
                                         .on_conflict_do_nothing(index_elements=["turn_key"]))
        return bool(result.rowcount)

    async def save_seat_wait(self, wait: SeatWait) -> None:
        c = t.seat_waits.c
        await self.conn.execute(update(t.seat_waits).where(c.turn_key == wait.turn_key)
                                .values(**wait.model_dump(exclude={"turn_key"})))

    async def drop_post(self, discussion_id: str, key: str) -> None:
        """Forget one queued post no drain has tried yet (a person's turn is in the thread in their own words)."""
        self.outbox_changed()
        o = t.outbox.c
        await self.conn.execute(delete(t.outbox).where(o.discussion_id == discussion_id, o.key == key,
                                                       o.sent.is_(False), o.attempts == 0))
