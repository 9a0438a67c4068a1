"""Rows of the shared rate budgets: read under a row lock, written back, held by one replica (the rules are
core/running/budget)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select, update

from core.storage import tables as t
from core.storage.rows import Repo, insert_in

_c = t.rate_budget.c
_UPDATE = update(t.rate_budget).where(_c.key == bindparam("b_key"))
_SWAP = _UPDATE.where(_c.tokens == bindparam("b_tokens"), _c.at == bindparam("b_at"),
                      _c.paused_until == bindparam("b_paused"), _c.holder.is_(None))
_READ_HELD = select(_c.tokens, _c.at, _c.paused_until, _c.holder, _c.held_until, _c.wanted, _c.shared_until).where(
    _c.key == bindparam("key"))
# A holder's write-back: the bucket as it is in its memory, only where it still holds it.
_FLUSH = update(t.rate_budget).where(_c.key == bindparam("b_key"), _c.holder == bindparam("b_me")).values(
    tokens=bindparam("b_tokens"), at=bindparam("b_at"), paused_until=bindparam("b_paused"))
_RENEW = update(t.rate_budget).where(_c.holder == bindparam("b_me")).values(held_until=bindparam("b_until")).returning(
    _c.key, _c.wanted)
_WANTED = select(_c.key).where(_c.holder == bindparam("me"), _c.wanted.is_(True))
_RELEASE = update(t.rate_budget).where(_c.holder == bindparam("b_me"), _c.key.in_(bindparam("b_keys", expanding=True))
                                       ).values(holder=None, wanted=False, shared_until=bindparam("b_shared"))
# A bucket no replica has met yet is written as its first change leaves it, unless another replica made it first
# (then the insert waits for that replica's transaction, does nothing, and the row is read under its lock).
_MAKE = {name: insert_in(name, t.rate_budget).on_conflict_do_nothing(index_elements=["key"]).returning(_c.key)
         for name in ("postgresql", "sqlite")}

Row = tuple[float, float, float]
Held = tuple[str | None, float, bool, float]  # holder, held until, wanted by another, shared until


class RateRepo(Repo):
    async def lock_held_bucket(self, key: str) -> tuple[Row, Held] | None:
        """A bucket and who holds it, locked until the transaction ends (None: no row yet)."""
        read = _READ_HELD.with_for_update() if self.conn.dialect.name == "postgresql" else _READ_HELD
        row = (await self.conn.execute(read, {"key": key})).first()
        if row is None:
            return None
        return (float(row[0]), float(row[1]), float(row[2])), (row[3], float(row[4]), bool(row[5]), float(row[6]))

    async def make_bucket(self, key: str, now: Row, holder: str | None = None, held_until: float = 0.0) -> bool:
        """Write a bucket's first row as `now` (held by `holder` until `held_until`); False: another replica made
        it first, and nothing was written."""
        values = {"key": key, "tokens": now[0], "at": now[1], "paused_until": now[2], "holder": holder,
                  "held_until": held_until}
        return (await self.conn.execute(_MAKE[self.conn.dialect.name], values)).first() is not None

    async def swap_bucket(self, key: str, was: Row, now: Row) -> bool:
        """Write a bucket as `now` only if its row still reads `was` (what this process last wrote), in one
        statement; False: another replica changed it since, and nothing was written. The state is compared, not a
        version: a row that reads `was` again is one the rule may be applied to all the same."""
        params = {"b_key": key, "b_tokens": was[0], "b_at": was[1], "b_paused": was[2]}
        result = await self.conn.execute(_SWAP, {**params, "tokens": now[0], "at": now[1], "paused_until": now[2]})
        return result.rowcount == 1

    async def save_bucket(self, key: str, now: Row, held: Held | None = None) -> None:
        """Write back a bucket whose row was read under its lock in this transaction (and who holds it now)."""
        values: dict[str, Any] = {"b_key": key, "tokens": now[0], "at": now[1], "paused_until": now[2]}
        if held is not None:
            values |= {"holder": held[0], "held_until": held[1], "wanted": held[2], "shared_until": held[3]}
        await self.conn.execute(_UPDATE, values)

    async def want_bucket(self, key: str) -> None:
        """Tell the replica holding a bucket (read under its lock in this transaction) that another wants it."""
        await self.conn.execute(_UPDATE, {"b_key": key, "wanted": True})

    async def make_buckets(self, buckets: dict[str, Row], holder: str | None, held_until: float) -> set[str]:
        """`make_bucket` for many in one statement: the keys made (held by `holder`); the others were there."""
        rows = [{"key": k, "tokens": r[0], "at": r[1], "paused_until": r[2], "holder": holder,
                 "held_until": held_until} for k, r in buckets.items()]
        return set((await self.conn.execute(_MAKE[self.conn.dialect.name], rows)).scalars())

    async def write_held(self, me: str, buckets: dict[str, Row]) -> None:
        """Write back buckets `me` holds as they are in its memory (a row another replica took is left as it is)."""
        await self.conn.execute(_FLUSH, [{"b_key": k, "b_me": me, "b_tokens": r[0], "b_at": r[1], "b_paused": r[2]}
                                         for k, r in buckets.items()])

    async def renew_held(self, me: str, until: float) -> dict[str, bool]:
        """Renew every hold of `me` until `until`: the buckets it still holds (another replica may have taken one
        whose hold ran out), each with whether another replica wants it."""
        return {key: bool(wanted) for key, wanted in await self.conn.execute(_RENEW, {"b_me": me, "b_until": until})}

    async def wanted_held(self, me: str) -> set[str]:
        """The buckets `me` holds that another replica wants."""
        return set((await self.conn.execute(_WANTED, {"me": me})).scalars())

    async def release_held(self, me: str, keys: list[str], shared_until: float = 0.0) -> None:
        """Let go of buckets `me` holds (written back already): the next change of each reads its row; none holds
        them again before `shared_until`."""
        await self.conn.execute(_RELEASE, {"b_me": me, "b_keys": keys, "b_shared": shared_until})
