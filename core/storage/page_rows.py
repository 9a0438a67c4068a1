"""What the web pages read: a discussion's change mark, its turns' words so far, and a channel's log of discussions."""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy import Integer, bindparam, delete, func, select

from core.models import Decision, Discussion
from core.storage import tables as t
from core.storage.rows import Repo, _row, insert_in

_l = t.live_texts.c


def _scalar(query: Any) -> Any:
    return query.scalar_subquery()


def _mark_query(discussion_id: Any) -> Any:
    """One statement whose row changes whenever anything the page shows changes: the discussion's row (round,
    status, spend, key version), its turns (started, finished, failed), ballots, polls closed, people's messages,
    syntheses and the words being written."""
    d, tu, p, b = t.discussions.c, t.turns.c, t.polls.c, t.ballots.c
    polls = select(p.id).where(p.discussion_id == discussion_id)
    return select(
        d.updated_at, d.status, d.round, d.cost_usd, d.options,
        _scalar(select(func.count() * 100000 + func.count(tu.finished_at)).where(tu.discussion_id == discussion_id)),
        _scalar(select(func.max(tu.finished_at)).where(tu.discussion_id == discussion_id)),
        _scalar(select(func.count()).where(tu.discussion_id == discussion_id, tu.status == "failed")),
        _scalar(select(func.count() * 2 + func.coalesce(func.sum(p.closed.cast(Integer)), 0))
                .where(p.discussion_id == discussion_id)),
        _scalar(select(func.count() * 2 + func.coalesce(func.sum(b.superseded.cast(Integer)), 0))
                .where(b.poll_id.in_(polls))),
        _scalar(select(func.count()).select_from(t.human_messages)
                .where(t.human_messages.c.discussion_id == discussion_id)),
        _scalar(select(func.count()).select_from(t.syntheses).where(t.syntheses.c.discussion_id == discussion_id)),
        _scalar(select(func.count()).select_from(t.live_texts).where(_l.discussion_id == discussion_id)),
        _scalar(select(func.max(_l.updated_at)).where(_l.discussion_id == discussion_id)),
    ).where(d.id == discussion_id)


# Built once: a page open in a browser asks for its mark every few seconds, and building the statement cost more
# than running it.
_MARK = _mark_query(bindparam("did"))


class PageRepo(Repo):
    async def page_mark(self, discussion_id: str) -> tuple[str, int] | None:
        """A short fingerprint of everything the discussion's page shows, and its links' key version, in one
        statement (a polling page asks for it every few seconds: most answers are "nothing new"); None for an
        unknown discussion."""
        row = (await self.conn.execute(_MARK, {"did": discussion_id})).first()
        if row is None:
            return None
        options = row[4] or {}
        version = int(options.get("links", 0)) if isinstance(options, dict) else 0
        digest = hashlib.blake2s(repr(tuple(row)).encode(), digest_size=12).hexdigest()
        return digest, version

    async def live_text_shown(self, discussion_id: str, key: str, text: str, now: datetime) -> None:
        """A turn's words so far (the newest replaces the last)."""
        stmt = insert_in(self.conn.dialect.name, t.live_texts).values(
            discussion_id=discussion_id, key=key, text=text, updated_at=now)
        await self.conn.execute(stmt.on_conflict_do_update(
            index_elements=["discussion_id", "key"], set_={"text": stmt.excluded.text,
                                                           "updated_at": stmt.excluded.updated_at}))

    async def live_texts(self, discussion_id: str) -> dict[str, str]:
        """The words so far of the discussion's turns, by turn key (the page shows those of running turns)."""
        rows = (await self.conn.execute(select(_l.key, _l.text).where(_l.discussion_id == discussion_id))).all()
        return {str(k): str(v) for k, v in rows}

    async def forget_live_texts(self, discussion_id: str) -> None:
        """The discussion is over: its turns' records hold their words."""
        await self.conn.execute(delete(t.live_texts).where(_l.discussion_id == discussion_id))

    async def channel_log(self, platform: str, workspace: str, channel: str | None, *, limit: int = 100
                          ) -> list[tuple[Discussion, Decision | None]]:
        """A channel's discussions (the workspace's when `channel` is None), newest first, each with the record it
        left when it finished."""
        d = t.discussions.c
        query = select(t.discussions).where(d.platform == platform, d.workspace == workspace)
        if channel is not None:
            query = query.where(d.channel == channel)
        rows = [Discussion.model_validate(_row(x)) for x in
                (await self.conn.execute(query.order_by(d.created_at.desc(), d.id).limit(limit))).all()]
        return await self._with_records(rows)

    async def discussions_of(self, ids: list[str]) -> dict[str, Discussion]:
        """The discussions of these ids (records found by a search), by id."""
        if not ids:
            return {}
        rows = (await self.conn.execute(select(t.discussions).where(t.discussions.c.id.in_(ids)))).all()
        return {str(x.id): Discussion.model_validate(_row(x)) for x in rows}

    async def _with_records(self, rows: list[Discussion]) -> list[tuple[Discussion, Decision | None]]:
        ids = [x.id for x in rows]
        found: dict[str, Decision] = {}
        if ids:
            c = t.decisions.c
            for x in (await self.conn.execute(select(t.decisions).where(c.discussion_id.in_(ids)))).all():
                found[str(x.discussion_id)] = Decision.model_validate(_row(x))
        return [(x, found.get(x.id)) for x in rows]
