"""Rows of the shared rate budgets: read one under a row lock, write it back (the rules are core/running/budget)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite

from core.storage import tables as t
from core.storage.rows import Repo


class RateRepo(Repo):
    async def lock_bucket(self, key: str) -> tuple[float, float, float] | None:
        """The bucket's tokens, when they were counted and until when it is paused; locked until the transaction
        ends, so replicas change one bucket one at a time (None: no row yet)."""
        c = t.rate_budget.c
        query = select(c.tokens, c.at, c.paused_until).where(c.key == key)
        if self.conn.dialect.name == "postgresql":  # SQLite's writers already run one at a time
            # A new bucket's row is made first (empty a very long time ago: full), so two replicas that meet it at
            # once queue on its lock instead of both starting it full.
            await self.conn.execute(postgresql.insert(t.rate_budget).values(key=key, tokens=0.0, at=0.0,
                                                                            paused_until=0.0)
                                    .on_conflict_do_nothing(index_elements=["key"]))
            query = query.with_for_update()
        row = (await self.conn.execute(query)).first()
        return (float(row[0]), float(row[1]), float(row[2])) if row is not None else None

    async def save_bucket(self, key: str, tokens: float, at: float, paused_until: float) -> None:
        values = {"key": key, "tokens": tokens, "at": at, "paused_until": paused_until}
        insert = (postgresql.insert if self.conn.dialect.name == "postgresql" else sqlite.insert)(t.rate_budget)
        await self.conn.execute(insert.values(**values).on_conflict_do_update(
            index_elements=["key"], set_={k: v for k, v in values.items() if k != "key"}))
