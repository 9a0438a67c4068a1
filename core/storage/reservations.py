"""Turn reservations: a running turn's estimated cost held in its workspace's spend until the turn ends."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Dialect, Float, bindparam, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from core.storage import tables as t
from core.storage.rows import aware, insert_in

SPEND_BUCKET_S = 900  # a quarter hour (see tables.spend)
_s, _d, _t = t.spend.c, t.discussions.c, t.turns.c


def bucket(now: datetime) -> datetime:
    """The quarter hour `now` falls in, in UTC."""
    return datetime.fromtimestamp(now.timestamp() // SPEND_BUCKET_S * SPEND_BUCKET_S, UTC)


def _add_spend(dialect: str, usage: bool) -> Any:
    """Add dollars to a workspace's quarter hour (the workspace read from the discussion); `usage`: and write a
    model call's usage row in the same statement (PostgreSQL's data-modifying WITH; its values bound as `u_*`)."""
    stmt = insert_in(dialect, t.spend)
    source = select(_d.platform, _d.workspace, bindparam("b_start", type_=t.TS), bindparam("b_usd", type_=Float)
                    ).where(_d.id == bindparam("b_id"))
    stmt = stmt.from_select(["platform", "workspace", "starts_at", "cost_usd"], source).on_conflict_do_update(
        index_elements=["platform", "workspace", "starts_at"], set_={"cost_usd": _s.cost_usd + stmt.excluded.cost_usd})
    if usage:
        row = {c.name: bindparam(f"u_{c.name}", type_=c.type) for c in t.usage.c if c.name != "id"}
        stmt = stmt.add_cte(insert(t.usage).values(row).cte("call_usage"))
    return stmt


# Built on an engine's first use, not at import nor once per process: code run at import is out of reach of the
# mutation tests (tests/mutation.py), which switch a function to its mutant only after the module is loaded, and a
# statement kept for the process would be built by the first test alone, so only that test would be run against
# the builder's mutants.
ADD_SPEND: WeakKeyDictionary[Dialect, dict[bool, Any]] = WeakKeyDictionary()
_HELD = select(_t.key, _t.discussion_id, _t.reserved_usd, _t.reserved_at).where(
    _t.key.in_(bindparam("keys", expanding=True)), _t.reserved_usd > 0)
_HOLD = update(t.turns).where(_t.key.in_(bindparam("keys", expanding=True)))


async def add_spend(conn: AsyncConnection, discussion_id: str, at: datetime, usd: float, *,
                    usage: Mapping[str, Any] | None = None) -> None:
    """`usage`: a model call's usage row, written with it (one statement on PostgreSQL: a turn's usage and spend
    were two of the dozen statements a model call cost)."""
    dialect = conn.dialect
    along = usage is not None and dialect.name == "postgresql"
    if usage is not None and not along:  # SQLite: no data-modifying WITH
        await conn.execute(insert(t.usage), dict(usage))
    built = ADD_SPEND.setdefault(dialect, {})
    if along not in built:
        built[along] = _add_spend(dialect.name, along)
    params = {"b_id": discussion_id, "b_start": bucket(at), "b_usd": usd}
    if usage is not None and along:
        params |= {f"u_{k}": v for k, v in usage.items()}
    await conn.execute(built[along], params)


async def add_workspace_spend(conn: AsyncConnection, platform: str, workspace: str, at: datetime, usd: float) -> None:
    stmt = insert_in(conn.dialect.name, t.spend).values(platform=platform, workspace=workspace, starts_at=bucket(at),
                                                          cost_usd=usd)
    await conn.execute(stmt.on_conflict_do_update(index_elements=["platform", "workspace", "starts_at"],
                                                  set_={"cost_usd": _s.cost_usd + stmt.excluded.cost_usd}))


async def reserve(conn: AsyncConnection, discussion_id: str, keys: list[str], usd_each: float, now: datetime, *,
                  fresh: Collection[str] = ()) -> None:
    """Hold `usd_each` for each of these (just started) turns in the workspace's spend of this quarter hour.
    `fresh`: keys first stored in this transaction, with this hold written on their rows (`start_turns`)."""
    # A turn started again after a crash holds one reservation, not two.
    again = [k for k in keys if k not in fresh]
    await release(conn, again)
    if not keys or usd_each <= 0:
        return
    if again:
        await conn.execute(_HOLD, {"keys": again, "reserved_usd": usd_each, "reserved_at": now})
    await add_spend(conn, discussion_id, now, usd_each * len(keys))


async def settle(conn: AsyncConnection, discussion_id: str, key: str, held: tuple[float, datetime | None],
                 cost_usd: float | None, now: datetime, *, saved: bool = False,
                 usage: Mapping[str, Any] | None = None) -> None:
    """A turn ended holding `held` (dollars, since when; read with the turn): the hold gives way to what the turn
    cost (None: nothing to charge here), in one write to the spend when both fall in the same quarter hour.
    `saved`: the caller saves the ended turn in this transaction, which clears its hold (`save_turn`). `usage`:
    the usage row of what it cost, written with that cost's spend (see `add_spend`)."""
    usd, at = held
    if usd > 0 and not saved:
        await conn.execute(_HOLD, {"keys": [key], "reserved_usd": 0.0, "reserved_at": None})
    since = aware(at) or now
    if usd > 0 and cost_usd is not None and bucket(since) == bucket(now):
        await add_spend(conn, discussion_id, now, cost_usd - usd, usage=usage)
        return
    if usd > 0:
        await add_spend(conn, discussion_id, since, -usd)
    if cost_usd is not None:
        await add_spend(conn, discussion_id, now, cost_usd, usage=usage)


async def release(conn: AsyncConnection, keys: list[str]) -> None:
    """Give back what these turns held (each in the quarter hour it was held in); their real cost, if any, is
    added by the usage record in the same transaction."""
    if not keys:
        return
    held = (await conn.execute(_HELD, {"keys": keys})).all()
    for _key, discussion_id, usd, at in held:
        await add_spend(conn, discussion_id, aware(at) or datetime.now(UTC), -float(usd))
    if held:
        await conn.execute(_HOLD, {"keys": [row[0] for row in held], "reserved_usd": 0.0, "reserved_at": None})
