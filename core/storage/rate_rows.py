"""Rows of the shared rate budgets: read under a row lock, written back (the rules are core/running/budget)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import bindparam, select, update

from core.storage import tables as t
from core.storage.rows import Repo, insert_in

_c = t.rate_budget.c
_READ = select(_c.key, _c.tokens, _c.at, _c.paused_until).where(
    _c.key.in_(bindparam("keys", expanding=True))).order_by(_c.key)
_UPDATE = update(t.rate_budget).where(_c.key == bindparam("b_key"))
_SWAP = _UPDATE.where(_c.tokens == bindparam("b_tokens"), _c.at == bindparam("b_at"),
                      _c.paused_until == bindparam("b_paused"))
# A bucket no replica has met yet is written as its first change leaves it, unless another replica made it first
# (then the insert waits for that replica's transaction, does nothing, and the row is read under its lock).
_MAKE = {name: insert_in(name, t.rate_budget).on_conflict_do_nothing(index_elements=["key"]).returning(_c.key)
         for name in ("postgresql", "sqlite")}

Row = tuple[float, float, float]


class RateRepo(Repo):
    async def lock_buckets(self, keys: list[str]) -> dict[str, Row]:
        """The buckets' tokens, when they were counted and until when each is paused, by key; locked in key order
        until the transaction ends, so replicas change a bucket one at a time (a key with no row yet is left out:
        see `make_bucket`)."""
        read = _READ.with_for_update() if self.conn.dialect.name == "postgresql" else _READ  # SQLite: one writer
        return self._buckets(await self.conn.execute(read, {"keys": keys}))

    async def make_bucket(self, key: str, now: Row) -> bool:
        """Write a bucket's first row as `now`; False: another replica made it first, and nothing was written."""
        values = {"key": key, "tokens": now[0], "at": now[1], "paused_until": now[2]}
        return (await self.conn.execute(_MAKE[self.conn.dialect.name], values)).first() is not None

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

    async def save_bucket(self, key: str, now: Row) -> None:
        """Write back a bucket whose row was read under its lock in this transaction."""
        await self.conn.execute(_UPDATE, {"b_key": key, "tokens": now[0], "at": now[1], "paused_until": now[2]})
