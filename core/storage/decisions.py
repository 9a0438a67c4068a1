"""Decision records: written when a discussion finishes, found with the database's own full-text search."""

from __future__ import annotations

import re
from typing import Any, Literal

from sqlalchemy import ColumnElement, Float, Integer, Select, and_, desc, or_, select, text, update

from core.models import Decision
from core.storage import tables as t
from core.storage.rows import Repo, _row

_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits: an underscore is no word for either index
# Words too common to say two topics are alike (asking "any word" of a whole topic); typed searches keep them. It
# holds PostgreSQL's English stop words of four letters or more, so that both backends weigh the same words.
COMMON = frozenset("""should would could about above after again against also among been before being below
between both does doing down during each from further have having here into itself just more most move much must
only other ours over same shall some such than that their them then there these they this those through under
until very what when where which while will with within without your yours make made take need needs want
ourselves yourself yourselves himself hers herself theirs themselves whom were because once""".split())


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
        """The people's counts and the verdict they change; a record whose `decided` quotes the verdict (a
        council's does) quotes the new one, so nothing shows a verdict that is no longer the record's."""
        c = t.decisions.c
        row = (await self.conn.execute(select(c.decided, c.verdict).where(c.discussion_id == discussion_id))
               ).first()
        if row is None:
            return
        decided, old = str(row[0]), str(row[1])
        if old and old != verdict:
            decided = decided.replace(old, verdict)  # the record's own text, written from that verdict
        await self.conn.execute(update(t.decisions).where(c.discussion_id == discussion_id)
                                .values(people=people, verdict=verdict, decided=decided))

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
        where = self._place(platform, workspace, channels, private_in)
        words = words_of(query, significant=match == "any")
        if not words:
            if query.strip():
                return []  # only common words: nothing to say two topics are alike
            return await self._rows(select(t.decisions).where(and_(*where))
                                    .order_by(desc(c.decided_at), desc(c.id)).limit(limit))
        return await self._rows(self._ranked(where, words, match).limit(limit))

    async def decisions_related(self, platform: str, workspace: str, channels: list[str] | None, topic: str,
                                *, limit: int, private_in: list[str] | None = None) -> list[Decision]:
        """The records on the same subject as a new discussion's topic, best match first (scoped as
        `decisions_found`).

        Related means the two topics, the questions people typed, share most of their significant words: more
        than half of the shorter one's (the overlap coefficient |A∩B| / min(|A|, |B|) above ½, words matched by
        the database's own stemming). Common words never count (`COMMON`, short words). Half is no tuned
        number but the line between a shared subject and a shared word: two topics that have one word of two in
        common ("Move the team to a monorepo?" and "Rotate team leads every six months?") share vocabulary; a
        record that names most of what the new topic names is about it. The overlap is judged on topics only:
        a record's decided text is prose, and prose shares "team", "next" or "ship" with anything. Among the
        related, the ranking is the database's own (bm25 on SQLite, ts_rank on PostgreSQL) over the whole
        record, newest first on a tie."""
        words = words_of(topic, significant=True)
        if not words:
            return []
        where = self._place(platform, workspace, channels, private_in)
        shared: dict[int, int] = {}
        topics: dict[int, str] = {}
        for word in words:
            for rid, rtopic in (await self.conn.execute(self._topics_with(where, word))).all():
                shared[rid] = shared.get(rid, 0) + 1
                topics[rid] = str(rtopic)
        related = [rid for rid, n in shared.items()
                   if 2 * n > min(len(words), len(words_of(topics[rid], significant=True)) or 1)]
        if not related:
            return []
        return await self._rows(self._ranked([*where, t.decisions.c.id.in_(related)], words, "any").limit(limit))

    @staticmethod
    def _place(platform: str, workspace: str, channels: list[str] | None,
               private_in: list[str] | None) -> list[ColumnElement[bool]]:
        c = t.decisions.c
        where: list[ColumnElement[bool]] = [c.platform == platform, c.workspace == workspace]
        if channels is not None:
            where.append(c.channel.in_(channels))
        if private_in is not None:
            where.append(or_(c.private.is_(False), c.channel.in_(private_in)))
        return where

    def _ranked(self, where: list[ColumnElement[bool]], words: list[str], match: Literal["all", "any"]
                ) -> Select[Any]:
        """The records matching the words (every one, or any), best first by the database's own ranking."""
        c = t.decisions.c
        if self.conn.dialect.name == "postgresql":
            joined = (" & " if match == "all" else " | ").join(words)
            found = text("search @@ to_tsquery('english', :q)").bindparams(q=joined)
            rank = text("ts_rank(search, to_tsquery('english', :q)) DESC").bindparams(q=joined)
            return select(t.decisions).where(and_(*where), found).order_by(rank, desc(c.decided_at))
        joined = (" " if match == "all" else " OR ").join(f'"{w}"' for w in words)  # quoted: never syntax
        ranked = text("SELECT rowid AS id, bm25(decisions_fts) AS score FROM decisions_fts "
                      "WHERE decisions_fts MATCH :q").bindparams(q=joined).columns(
            id=Integer, score=Float).subquery("fts")
        return (select(t.decisions).join(ranked, ranked.c.id == c.id).where(and_(*where))
                .order_by(ranked.c.score, desc(c.decided_at)))

    def _topics_with(self, where: list[ColumnElement[bool]], word: str) -> Select[Any]:
        """The ids and topics of the records whose topic holds the word, as the database's index stems it."""
        c = t.decisions.c
        if self.conn.dialect.name == "postgresql":
            holds = text("to_tsvector('english', decisions.topic) @@ to_tsquery('english', :w)").bindparams(w=word)
            return select(c.id, c.topic).where(and_(*where), holds)
        fts = text("SELECT rowid AS id FROM decisions_fts WHERE decisions_fts MATCH :w").bindparams(
            w=f'topic : "{word}"').columns(id=Integer).subquery("fts_topic")
        return select(c.id, c.topic).join(fts, fts.c.id == c.id).where(and_(*where))

    async def _rows(self, query: Select[Any]) -> list[Decision]:
        return [Decision.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]
