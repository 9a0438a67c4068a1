"""The messages turns show while they are written, by the process that showed them: what a takeover removes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, exists, select
from sqlalchemy.dialects.postgresql import Insert as PgInsert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert

from core.models import Status
from core.storage import tables as t
from core.storage.rows import Repo, insert_in

_p = t.placeholders.c
_o = t.outbox.c
Shown = tuple[str, str, str, str, datetime]  # discussion id, turn key, message ref, owner, when shown
# A turn's post went out: the chat turned its placeholder into it (or removed it), so no takeover may remove it.
# Read so rather than deleted as each post is sent: the row is left to the discussion's end (a statement a turn).
_SETTLED = exists().where(_o.key == _p.key, _o.discussion_id == _p.discussion_id, _o.sent.is_(True))


def _upsert(dialect: str) -> PgInsert | SqliteInsert:
    stmt = insert_in(dialect, t.placeholders)
    return stmt.on_conflict_do_update(index_elements=["discussion_id", "key"], set_={
        "ref": stmt.excluded.ref, "owner": stmt.excluded.owner, "created_at": stmt.excluded.created_at})


# Prebuilt and run once for all the rows: a statement built with a list of rows is compiled anew every time
# (SQLAlchemy caches no multi-row VALUES); compiling it cost more than running it.
_SHOWN = {name: _upsert(name) for name in ("sqlite", "postgresql")}
_ENDED = exists().where(t.discussions.c.id == _p.discussion_id,
                        t.discussions.c.status.in_([Status.DONE.value, Status.STOPPED.value]))


class PlaceholderRepo(Repo):
    async def placeholders_shown(self, shown: list[Shown]) -> None:
        """The messages showing turns while they are written, by (discussion, turn key, message ref, owner, when),
        in one statement: one per turn, a newer one replacing it (the last of one turn given here wins)."""
        rows = {(d, key): {"discussion_id": d, "key": key, "ref": ref, "owner": owner, "created_at": at}
                for d, key, ref, owner, at in shown}
        if not rows:
            return
        await self.conn.execute(_SHOWN[self.conn.dialect.name], list(rows.values()))

    async def placeholders(self, discussion_id: str) -> list[tuple[str, str, str]]:
        """(turn key, message ref, the process that showed it) of every placeholder not settled yet, oldest first."""
        query = (select(_p.key, _p.ref, _p.owner).where(_p.discussion_id == discussion_id, ~_SETTLED)
                 .order_by(_p.created_at))
        return [(str(k), str(r), str(o)) for k, r, o in (await self.conn.execute(query)).all()]

    async def placeholder_keys(self, discussion_id: str) -> list[str]:
        query = select(_p.key).where(_p.discussion_id == discussion_id, ~_SETTLED)
        return [str(k) for k in (await self.conn.execute(query)).scalars()]

    async def forget_settled_placeholders(self, discussion_id: str) -> None:
        """The rows of placeholders whose turns' posts went out, once the discussion is over (finished or
        stopped: no turn shows more); called as its header is sent, the ending's last post, so every turn's post
        queued before the ending is out by then."""
        await self.conn.execute(delete(t.placeholders).where(_p.discussion_id == discussion_id, _SETTLED, _ENDED))

    async def forget_placeholders(self, discussion_id: str, keys: list[str]) -> None:
        """These placeholders became notes, or are gone: nothing is left to remove."""
        if keys:
            await self.conn.execute(delete(t.placeholders).where(_p.discussion_id == discussion_id,
                                                                 _p.key.in_(keys)))
