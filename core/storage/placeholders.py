"""The messages turns show while they are written, by the process that showed them: what a takeover removes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select

from core.storage import tables as t
from core.storage.rows import Repo, insert_in

_p = t.placeholders.c
Shown = tuple[str, str, str, str, datetime]  # discussion id, turn key, message ref, owner, when shown


class PlaceholderRepo(Repo):
    async def placeholders_shown(self, shown: list[Shown]) -> None:
        """The messages showing turns while they are written, by (discussion, turn key, message ref, owner, when),
        in one statement: one per turn, a newer one replacing it (the last of one turn given here wins)."""
        rows = {(d, key): {"discussion_id": d, "key": key, "ref": ref, "owner": owner, "created_at": at}
                for d, key, ref, owner, at in shown}
        if not rows:
            return
        stmt = insert_in(self.conn.dialect.name, t.placeholders).values(list(rows.values()))
        await self.conn.execute(stmt.on_conflict_do_update(
            index_elements=["discussion_id", "key"],
            set_={"ref": stmt.excluded.ref, "owner": stmt.excluded.owner, "created_at": stmt.excluded.created_at}))

    async def placeholders(self, discussion_id: str) -> list[tuple[str, str, str]]:
        """(turn key, message ref, the process that showed it) of every placeholder not settled yet, oldest first."""
        query = (select(_p.key, _p.ref, _p.owner).where(_p.discussion_id == discussion_id).order_by(_p.created_at))
        return [(str(k), str(r), str(o)) for k, r, o in (await self.conn.execute(query)).all()]

    async def placeholder_keys(self, discussion_id: str) -> list[str]:
        query = select(_p.key).where(_p.discussion_id == discussion_id)
        return [str(k) for k in (await self.conn.execute(query)).scalars()]

    async def forget_placeholders(self, discussion_id: str, keys: list[str]) -> None:
        """These placeholders became their posts, or are gone: nothing is left to remove."""
        if keys:
            await self.conn.execute(delete(t.placeholders).where(_p.discussion_id == discussion_id,
                                                                 _p.key.in_(keys)))
