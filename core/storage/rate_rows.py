"""Rows of the shared rate budgets: read under a row lock, written back (the rules are core/running/budget)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from core.storage import tables as t
from core.storage.rows import Repo

_c = t.rate_budget.c
_READ = select(_c.key, _c.tokens, _c.at, _c.paused_until).where(
    _c.key.in_(bindparam("keys", expanding=True))).order_by(_c.key)
_UPDATE = update(t.rate_budget).where(_c.key == bindparam("b_key"))
_SWAP = _UPDATE.where(_c.tokens == bindparam("b_tokens"), _c.at == bindparam("b_at"),
                      _c.paused_until == bindparam("b_paused"))
# A new bucket's row is made empty a very long time ago (so: full) before it is locked, so two replicas that meet it
# at once queue on its lock instead of both starting it full.
_MAKE = postgresql.insert(t.rate_budget).on_conflict_do_nothing(index_elements=["key"])

Row = tuple[float, float, float]


class RateRepo(Repo):
    async def lock_buckets(self, keys: list[str]) -> dict[str, Row]:
        """The buckets' tokens, when they were counted and until when each is paused, by key; locked in key order
        until the transaction ends, so replicas change a bucket one at a time (a key with no row yet is left out).
        Buckets already made cost one statement."""
        if self.conn.dialect.name != "postgresql":  # SQLite's writers already run one at a time
            return self._buckets(await self.conn.execute(_READ, {"keys": keys}))
        locked = _READ.with_for_update()
        rows = self._buckets(await self.conn.execute(locked, {"keys": keys}))
        missing = [k for k in keys if k not in rows]
        if missing:
            await self.conn.execute(_MAKE, [{"key": k, "tokens": 0.0, "at": 0.0, "paused_until": 0.0}
                                            for k in missing])
            rows |= self._buckets(await self.conn.execute(locked, {"keys": missing}))
        return rows

    @staticmethod
    def _buckets(result: Iterable[Any]) -> dict[str, Row]:
        return {key: (float(tokens), float(at), float(paused)) for key, tokens, at, paused in result}

    async def swap_bucket(self, key: str, was: Row, now: Row) -> bool:
        """Write a bucket as `now` only if its row still reads `was` (what this process last wrote), in one
        statement; False: another replica changed it since, and nothing was written. The state is compared, not a
        version: a row that reads `was` again is one the rule may be applied to all the same."""
        params = {"b_key": key, "b_tokens": was[0], "b_at": was[1], "b_paused": was[2]}
        result = await self.conn.execute(_SWAP, {**params, "tokens": now[0], "at": now[1], "paused_until": now[2]})
        return result.rowcount == 1

    async def save_bucket(self, key: str, tokens: float, at: float, paused_until: float, *, known: bool = False
                          ) -> None:
        """Write a bucket back; `known`: its row was read in this transaction (an update is enough)."""
        values = {"tokens": tokens, "at": at, "paused_until": paused_until}
        if known:
            await self.conn.execute(_UPDATE, {"b_key": key, **values})
            return
        insert = (postgresql.insert if self.conn.dialect.name == "postgresql" else sqlite.insert)(t.rate_budget)
        await self.conn.execute(insert.values(key=key, **values).on_conflict_do_update(
            index_elements=["key"], set_=values))
