"""Rows of the shared rate budgets: leased from in one statement, given back unspent, paused under a row lock (the
rules are core/running/budget)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Float, bindparam, case, select, update
from sqlalchemy.sql.elements import ColumnElement

from core.storage import tables as t
from core.storage.rows import Repo, insert_in

_c = t.rate_budget.c
Row = tuple[float, float, float]  # tokens, at, paused until


def _least(a: Any, b: Any) -> ColumnElement[Any]:
    return case((a < b, a), else_=b)  # LEAST and MIN are each one dialect's; CASE is both's


def _p(name: str) -> Any:
    return bindparam(name, type_=Float)


# The bucket as it is now: refilled since it was last written (counted from `at`, ahead of now while paused), with
# the tokens handed back added, never past its burst.
_NOW, _BURST, _BACK = _p("b_now"), _p("b_burst"), _p("b_back")
_REFILLED = _least(_BURST, _c.tokens + case((_NOW > _c.at, (_NOW - _c.at) * _p("b_per_s")), else_=0.0) + _BACK)
_AT = case((_NOW > _c.at, _NOW), else_=_c.at)
_WANT, _KEEP = _p("b_want"), _p("b_keep")


def _take(must: bool, ahead: bool) -> ColumnElement[Any]:
    """What a lease takes of the refilled bucket. Work that must be done takes what it asks for, into debt (tokens
    ready only as the bucket refills) when `ahead`, else all it asks if the bucket holds that much now, and one (in
    debt if need be) if not. Other work takes only tokens there now, leaving `keep`: all it asks if that leaves
    enough, else one if that does, else none; and none while the bucket is paused."""
    if must:
        return _WANT if ahead else case((_REFILLED >= _WANT, _WANT), else_=1.0)
    return case((_c.paused_until > _NOW, 0.0), (_REFILLED - 1.0 < _KEEP, 0.0), (_REFILLED - _WANT >= _KEEP, _WANT),
                else_=1.0)


def _leased(take: ColumnElement[Any]) -> dict[str, Any]:
    return {"tokens": _REFILLED - take, "at": _AT, "taken": take}


_RETURNED = (_c.tokens, _c.at, _c.paused_until, _c.taken)
# A bucket no replica has made yet starts full: the row is made as the lease leaves it, in the same statement.
_LEASE = {(name, must, ahead): insert_in(name, t.rate_budget).values(
    key=bindparam("b_key"), tokens=_p("b_fresh"), at=_NOW, paused_until=0.0, taken=_p("b_fresh_taken")
).on_conflict_do_update(index_elements=["key"], set_=_leased(_take(must, ahead))).returning(*_RETURNED)
    for name in ("postgresql", "sqlite") for must in (True, False) for ahead in (True, False) if must or not ahead}
# Tokens handed back: the bucket refilled to now, plus them; nothing taken.
_GIVE_BACK = update(t.rate_budget).where(_c.key == bindparam("b_key")).values(tokens=_REFILLED, at=_AT)
_READ = select(_c.tokens, _c.at, _c.paused_until).where(_c.key == bindparam("key"))
_PAUSES = select(_c.key, _c.paused_until).where(_c.key.in_(bindparam("keys", expanding=True)))
_SAVE = update(t.rate_budget).where(_c.key == bindparam("b_key"))
_MAKE = {name: insert_in(name, t.rate_budget).on_conflict_do_nothing(index_elements=["key"])
         for name in ("postgresql", "sqlite")}


def fresh_take(burst: float, want: float, keep: float, must: bool, ahead: bool) -> float:
    """What a lease takes of a bucket made by it (full, not paused): as `_take` says of a full one."""
    if must:
        return want if ahead or burst >= want else 1.0
    if burst - 1.0 < keep:
        return 0.0
    return want if burst - want >= keep else 1.0


class RateRepo(Repo):
    async def lease_bucket(self, key: str, now: float, rate: tuple[float, float], want: float, *,
                           keep: float = 0.0, must: bool = True, ahead: bool = False,
                           back: float = 0.0) -> tuple[Row, float]:
        """Take up to `want` tokens of a bucket (`rate`: per second, burst), handing `back` unspent ones first, in
        one statement (the row made, full, if there is none): the row as the lease left it, and what it took."""
        per_s, burst = rate
        taken = fresh_take(burst, want, keep, must, ahead)
        params = {"b_key": key, "b_now": now, "b_per_s": per_s, "b_burst": burst, "b_back": back, "b_want": want,
                  "b_keep": keep, "b_fresh": burst - taken, "b_fresh_taken": taken}
        row = (await self.conn.execute(_LEASE[self.conn.dialect.name, must, ahead and must], params)).one()
        return (float(row[0]), float(row[1]), float(row[2])), float(row[3])

    async def give_back(self, now: float, backs: dict[str, tuple[float, float, float]]) -> None:
        """Hand back unspent tokens, many buckets at once: key -> (per second, burst, tokens)."""
        await self.conn.execute(_GIVE_BACK, [{"b_key": k, "b_now": now, "b_per_s": per_s, "b_burst": burst,
                                              "b_back": back} for k, (per_s, burst, back) in backs.items()])

    async def lock_bucket(self, key: str) -> Row | None:
        """A bucket, locked until the transaction ends (None: no row yet)."""
        read = _READ.with_for_update() if self.conn.dialect.name == "postgresql" else _READ
        row = (await self.conn.execute(read, {"key": key})).first()
        return None if row is None else (float(row[0]), float(row[1]), float(row[2]))

    async def make_bucket(self, key: str, now: Row) -> None:
        """Write a bucket's first row as `now`, unless another replica made it first."""
        await self.conn.execute(_MAKE[self.conn.dialect.name], {"key": key, "tokens": now[0], "at": now[1],
                                                                 "paused_until": now[2]})

    async def save_bucket(self, key: str, now: Row) -> None:
        """Write back a bucket whose row was read under its lock in this transaction."""
        await self.conn.execute(_SAVE, {"b_key": key, "tokens": now[0], "at": now[1], "paused_until": now[2]})

    async def pauses(self, keys: list[str]) -> dict[str, float]:
        """Until when each of these buckets is paused, as their rows say (a key with no row is left out)."""
        return {k: float(p) for k, p in await self.conn.execute(_PAUSES, {"keys": keys})}
