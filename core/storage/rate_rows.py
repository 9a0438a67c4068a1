"""Rows of the shared rate budgets: held by one replica, or leased from by all a batch of tokens at a time, read
under a row lock and written back (the rules are core/running/budget)."""

from __future__ import annotations

import functools
import math
from typing import Any

from sqlalchemy import Float, bindparam, case, select, update
from sqlalchemy.sql.elements import ColumnElement

from core.storage import tables as t
from core.storage.rows import Repo, insert_in

_c = t.rate_budget.c
_UPDATE = update(t.rate_budget).where(_c.key == bindparam("b_key"))
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

Row = tuple[float, float, float]  # tokens, at, paused until
Held = tuple[str | None, float, bool, float]  # holder, held until, wanted by another, shared until


def _least(a: Any, b: Any) -> ColumnElement[Any]:
    return case((a < b, a), else_=b)  # LEAST and MIN are each one dialect's; CASE is both's


def _p(name: str) -> Any:
    return bindparam(name, type_=Float)


def _refilled() -> ColumnElement[Any]:
    """The bucket as it is now: refilled since it was last written (counted from `at`, ahead of now while paused),
    with the tokens handed back added, never past its burst."""
    now = _p("b_now")
    return _least(_p("b_burst"), _c.tokens + case((now > _c.at, (now - _c.at) * _p("b_per_s")), else_=0.0)
                  + _p("b_back"))


def _at() -> ColumnElement[Any]:
    return case((_p("b_now") > _c.at, _p("b_now")), else_=_c.at)


def _take(must: bool) -> ColumnElement[Any]:
    """What a lease takes of the refilled bucket. Work that must be done takes all it asks if the bucket holds
    that much now, or if it holds at least `b_alone` (what the leasing replica's last lease left it, refilled: no
    other replica took from it since), into debt (tokens ready only as the bucket refills); else one, in debt if
    need be. Other work takes only tokens there now, leaving `keep`: all it asks if that leaves enough, else one if
    that does, else none; and none while the bucket is paused."""
    refilled, want = _refilled(), _p("b_want")
    if must:
        return case((refilled >= want, want), (refilled >= _p("b_alone"), want), else_=1.0)
    return case((_c.paused_until > _p("b_now"), 0.0), (refilled - 1.0 < _p("b_keep"), 0.0),
                (refilled - want >= _p("b_keep"), want), else_=1.0)


def _leased(take: ColumnElement[Any]) -> dict[str, Any]:
    return {"tokens": _refilled() - take, "at": _at(), "taken": take}


# Built at first use, once a process (the same statement object each time: compiled once).
@functools.cache
def _lease(dialect: str, must: bool) -> Any:
    """A bucket no replica has made yet starts full: the row is made as the lease leaves it, in the same statement.
    A row another replica holds is left as it is (its holder's memory rules it): the lease returns no row."""
    return insert_in(dialect, t.rate_budget).values(
        key=bindparam("b_key"), tokens=_p("b_fresh"), at=_p("b_now"), paused_until=0.0, taken=_p("b_fresh_taken")
    ).on_conflict_do_update(index_elements=["key"], set_=_leased(_take(must)), where=_c.holder.is_(None)
                            ).returning(_c.tokens, _c.at, _c.paused_until, _c.taken)


@functools.cache
def _give_back() -> Any:
    """Tokens handed back: the bucket refilled to now, plus them; nothing taken."""
    return update(t.rate_budget).where(_c.key == bindparam("b_key"), _c.holder.is_(None)).values(
        tokens=_refilled(), at=_at())


def fresh_take(burst: float, want: float, keep: float, must: bool, alone: float) -> float:
    """What a lease takes of a bucket made by it (full, not paused): as `_take` says of a full one."""
    if must:
        return want if burst >= want or burst >= alone else 1.0
    if burst - 1.0 < keep:
        return 0.0
    return want if burst - want >= keep else 1.0


class RateRepo(Repo):
    async def lease_bucket(self, key: str, now: float, rate: tuple[float, float], want: float, *,
                           keep: float = 0.0, must: bool = True, alone: float = math.inf,
                           back: float = 0.0) -> tuple[Row, float] | None:
        """Take up to `want` tokens of a bucket (`rate`: per second, burst), handing `back` unspent ones first, in
        one statement (the row made, full, if there is none), as `_take` says (`alone`: what the row holds if no
        other replica took from it since this one's last lease): the row as the lease left it, and what it took
        (None: another replica holds it, and nothing was written)."""
        per_s, burst = rate
        taken = fresh_take(burst, want, keep, must, alone)
        params = {"b_key": key, "b_now": now, "b_per_s": per_s, "b_burst": burst, "b_back": back, "b_want": want,
                  "b_keep": keep, "b_alone": min(alone, 1e300), "b_fresh": burst - taken, "b_fresh_taken": taken}
        row = (await self.conn.execute(_lease(self.conn.dialect.name, must), params)).first()
        return None if row is None else ((float(row[0]), float(row[1]), float(row[2])), float(row[3]))

    async def give_back(self, now: float, backs: dict[str, tuple[float, float, float]]) -> None:
        """Hand back unspent tokens, many buckets at once: key -> (per second, burst, tokens) (to a row another
        replica holds meanwhile, not: its holder's memory rules it)."""
        await self.conn.execute(_give_back(), [{"b_key": k, "b_now": now, "b_per_s": per_s, "b_burst": burst,
                                              "b_back": back} for k, (per_s, burst, back) in backs.items()])

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
