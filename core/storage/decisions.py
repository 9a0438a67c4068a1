"""Decision records: written when a discussion finishes, found with the database's own full-text search."""

from __future__ import annotations

import re
from typing import Any, Literal

from sqlalchemy import ColumnElement, Float, Integer, Select, and_, desc, or_, select, text, update

from core.models import Decision
from core.storage import tables as t
from core.storage.rows import Repo, _row

_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to say two topics are alike (asking "any word" of a whole topic); typed searches keep them.
COMMON = frozenset("""should would could about above after again against also among been before being below
between both does doing down during each from further have having here into itself just more most move much must
only other ours over same shall some such than that their them then there these they this those through under
until very what when where which while will with within without your yours make made take need needs want""".split())


def words_of(query: str, *, significant: bool = False) -> list[str]:
    """The words of a query, lowered and deduplicated in order; `significant`: without short and common ones."""
    out: list[str] = []
    for w in _WORD.findall(query.lower()):
        if significant and (len(w) < 4 or w in COMMON):
            continue
        if w not in out:
            out.append(w)
    return out[:16]


class DecisionRepo(Repo):
    async def add_decision(self, d: Decision) -> None:
        """Record what a discussion decided, once (a re-run of its last step finds the record there)."""
        values = d.model_dump(exclude={"id"})
        await self.conn.execute(self.insert(t.decisions).values(**values).on_conflict_do_nothing(
            index_elements=["discussion_id"]))

    async def set_decision_people(self, discussion_id: str, people: dict[str, int], verdict: str) -> None:
        await self.conn.execute(update(t.decisions).where(t.decisions.c.discussion_id == discussion_id)
                                .values(people=people, verdict=verdict))

    async def decision_of(self, discussion_id: str) -> Decision | None:
        """The record a discussion left, if it has finished."""
        row = (await self.conn.execute(select(t.decisions).where(t.decisions.c.discussion_id == discussion_id))
               ).first()
        return Decision.model_validate(_row(row)) if row is not None else None

    async def decision_places(self) -> list[tuple[str, str]]:
        """Every (platform, workspace) with records: the operator's search covers them all."""
        c = t.decisions.c
        rows = (await self.conn.execute(select(c.platform, c.workspace).distinct())).all()
        return [(str(r[0]), str(r[1])) for r in rows]

    async def decision(self, decision_id: int) -> Decision | None:
        row = (await self.conn.execute(select(t.decisions).where(t.decisions.c.id == decision_id))).first()
        return Decision.model_validate(_row(row)) if row is not None else None

    async def decisions_found(self, platform: str, workspace: str, channels: list[str] | None, query: str = "",
                              *, match: Literal["all", "any"] = "all", limit: int = 10,
                              private_in: list[str] | None = None) -> list[Decision]:
        """The workspace's records (only those of `channels`, unless None; a private channel's only when it is
        one of `private_in`, unless None), best match first for a query (every word, or any significant one),
        newest first without one."""
        c = t.decisions.c
        where: list[ColumnElement[bool]] = [c.platform == platform, c.workspace == workspace]
        if channels is not None:
            where.append(c.channel.in_(channels))
        if private_in is not None:
            where.append(or_(c.private.is_(False), c.channel.in_(private_in)))
        words = words_of(query, significant=match == "any")
        if not words:
            if query.strip():
                return []  # only common words: nothing to say two topics are alike
            return await self._rows(select(t.decisions).where(and_(*where))
                                    .order_by(desc(c.decided_at), desc(c.id)).limit(limit))
        if self.conn.dialect.name == "postgresql":
            joined = (" & " if match == "all" else " | ").join(words)
            found = text("search @@ to_tsquery('english', :q)").bindparams(q=joined)
            rank = text("ts_rank(search, to_tsquery('english', :q)) DESC").bindparams(q=joined)
            query_rows = select(t.decisions).where(and_(*where), found).order_by(rank, desc(c.decided_at))
        else:
            joined = (" " if match == "all" else " OR ").join(f'"{w}"' for w in words)  # quoted: never syntax
            ranked = text("SELECT rowid AS id, bm25(decisions_fts) AS score FROM decisions_fts "
                          "WHERE decisions_fts MATCH :q").bindparams(q=joined).columns(
                id=Integer, score=Float).subquery("fts")
            query_rows = (select(t.decisions).join(ranked, ranked.c.id == c.id).where(and_(*where))
                          .order_by(ranked.c.score, desc(c.decided_at)))
        return await self._rows(query_rows.limit(limit))

    async def _rows(self, query: Select[Any]) -> list[Decision]:
        return [Decision.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]
