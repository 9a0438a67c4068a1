"""Repository and unit of work over the tables: every read and write of the core goes through here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.models import (
    Ballot,
    Discussion,
    HumanMessage,
    Persona,
    Poll,
    Post,
    Schedule,
    Status,
    Turn,
    TurnStatus,
    Usage,
)
from core.storage import tables as t

log = logging.getLogger(__name__)


def aware(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything in the core is UTC-aware."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _row(row: Any) -> dict[str, Any]:
    data = dict(row._mapping)
    for name, value in data.items():
        if isinstance(value, datetime):
            data[name] = aware(value)
    return data


class Tx:
    """One transaction: the repository methods the service calls, all on a single connection."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn

    # discussions ---------------------------------------------------------------------------------
    async def add_discussion(self, d: Discussion) -> None:
        await self.conn.execute(insert(t.discussions).values(**d.model_dump()))

    async def discussion(self, discussion_id: str) -> Discussion | None:
        row = (
            await self.conn.execute(select(t.discussions).where(t.discussions.c.id == discussion_id))
        ).first()
        return Discussion.model_validate(_row(row)) if row else None

    async def save_discussion(self, d: Discussion, now: datetime) -> None:
        d.updated_at = now
        values = d.model_dump(exclude={"id", "created_at"})
        await self.conn.execute(update(t.discussions).where(t.discussions.c.id == d.id).values(**values))

    async def discussions(
        self, *, channel: str | None = None, since: datetime | None = None, limit: int = 200
    ) -> list[Discussion]:
        query = select(t.discussions).order_by(t.discussions.c.created_at.desc()).limit(limit)
        if channel is not None:
            query = query.where(t.discussions.c.channel == channel)
        if since is not None:
            query = query.where(t.discussions.c.updated_at >= since)
        return [Discussion.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def discussion_by_thread(self, platform: str, channel: str, thread_ref: str) -> Discussion | None:
        """The discussion whose thread this is (a human reply arrives with the thread's ref)."""
        c = t.discussions.c
        row = (
            await self.conn.execute(
                select(t.discussions)
                .where(c.platform == platform, c.channel == channel, c.thread_ref == thread_ref)
                .order_by(c.created_at.desc())
                .limit(1)
            )
        ).first()
        return Discussion.model_validate(_row(row)) if row else None

    async def latest_discussion_id(self) -> str | None:
        query = select(t.discussions.c.id).order_by(t.discussions.c.created_at.desc()).limit(1)
        return (await self.conn.execute(query)).scalar()

    async def add_cost(self, discussion_id: str, cost: float) -> None:
        await self.conn.execute(
            update(t.discussions)
            .where(t.discussions.c.id == discussion_id)
            .values(cost_usd=t.discussions.c.cost_usd + cost)
        )

    # leases --------------------------------------------------------------------------------------
    async def acquire_lease(self, discussion_id: str, owner: str, now: datetime, ttl: float) -> bool:
        """Take or renew the driver lease; only one owner holds an unexpired lease."""
        c = t.discussions.c
        result = await self.conn.execute(
            update(t.discussions)
            .where(
                c.id == discussion_id,
                or_(c.lease_owner.is_(None), c.lease_owner == owner, c.lease_expires_at < now),
            )
            .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=ttl))
        )
        return result.rowcount == 1

    async def release_lease(self, discussion_id: str, owner: str) -> None:
        c = t.discussions.c
        await self.conn.execute(
            update(t.discussions)
            .where(c.id == discussion_id, c.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )

    async def lease_owner(self, discussion_id: str) -> tuple[str | None, datetime | None]:
        c = t.discussions.c
        row = (
            await self.conn.execute(
                select(c.lease_owner, c.lease_expires_at).where(c.id == discussion_id)
            )
        ).first()
        return (row[0], aware(row[1])) if row else (None, None)

    async def claim_stale(self, owner: str, now: datetime, ttl: float, limit: int = 10) -> list[str]:
        """Discussions with work and no live driver, leased to `owner` (SKIP LOCKED on PostgreSQL)."""
        c = t.discussions.c
        pending_outbox = (
            select(t.outbox.c.id)
            .where(t.outbox.c.discussion_id == c.id, t.outbox.c.sent.is_(False))
            .exists()
        )
        unanswered = (
            select(t.human_messages.c.id)
            .where(
                t.human_messages.c.discussion_id == c.id,
                t.human_messages.c.needs_answer.is_(True),
                t.human_messages.c.answered.is_(False),
            )
            .exists()
        )
        query = (
            select(c.id)
            .where(
                or_(c.lease_owner.is_(None), c.lease_expires_at < now),
                or_(c.status == Status.RUNNING.value, pending_outbox, and_(c.status == "waiting", unanswered)),
            )
            .order_by(c.updated_at)
            .limit(limit)
        )
        if self.conn.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True, of=t.discussions)
        ids = list((await self.conn.execute(query)).scalars())
        return [i for i in ids if await self.acquire_lease(i, owner, now, ttl)]

    # personas ------------------------------------------------------------------------------------
    async def set_personas(self, discussion_id: str, personas: list[Persona]) -> None:
        await self.conn.execute(delete(t.personas).where(t.personas.c.discussion_id == discussion_id))
        if personas:
            await self.conn.execute(
                insert(t.personas),
                [
                    {"discussion_id": discussion_id, "key": p.key, "position": i, "data": p.model_dump()}
                    for i, p in enumerate(personas)
                ],
            )

    async def personas(self, discussion_id: str) -> list[Persona]:
        query = (
            select(t.personas.c.data)
            .where(t.personas.c.discussion_id == discussion_id)
            .order_by(t.personas.c.position)
        )
        return [Persona.model_validate(r) for r in (await self.conn.execute(query)).scalars()]

    # turns ---------------------------------------------------------------------------------------
    async def turns(self, discussion_id: str) -> list[Turn]:
        query = (
            select(t.turns)
            .where(t.turns.c.discussion_id == discussion_id)
            .order_by(t.turns.c.created_at, t.turns.c.key)
        )
        return [Turn.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def turn(self, key: str) -> Turn | None:
        row = (await self.conn.execute(select(t.turns).where(t.turns.c.key == key))).first()
        return Turn.model_validate(_row(row)) if row else None

    async def ensure_turn(self, turn: Turn) -> Turn:
        """Insert the planned turn unless its key exists; return what is stored."""
        existing = await self.turn(turn.key)
        if existing is not None:
            return existing
        await self.conn.execute(insert(t.turns).values(**turn.model_dump()))
        return turn

    async def start_turns(self, planned: list[Turn]) -> None:
        """Mark a step's turns running and count an attempt, inserting the ones not stored yet.

        The same rows as ensure_turn + save_turn per turn, in at most three statements for the whole step.
        """
        if not planned:
            return
        c = t.turns.c
        keys = [p.key for p in planned]
        stored = set((await self.conn.execute(select(c.key).where(c.key.in_(keys)))).scalars())
        new = [
            p.model_copy(update={"status": TurnStatus.RUNNING, "attempts": 1}).model_dump()
            for p in planned if p.key not in stored
        ]
        if new:
            await self.conn.execute(insert(t.turns), new)
        if stored:
            await self.conn.execute(
                update(t.turns)
                .where(c.key.in_(sorted(stored)))
                .values(status=TurnStatus.RUNNING.value, attempts=c.attempts + 1)
            )

    async def save_turn(self, turn: Turn) -> None:
        await self.conn.execute(
            update(t.turns).where(t.turns.c.key == turn.key).values(**turn.model_dump(exclude={"key"}))
        )

    async def set_turn_status(self, keys: list[str], status: TurnStatus, *, reset: bool = False) -> None:
        values: dict[str, Any] = {"status": status.value}
        if reset:
            values |= {"attempts": 0, "error": ""}
        await self.conn.execute(update(t.turns).where(t.turns.c.key.in_(keys)).values(**values))

    # outbox --------------------------------------------------------------------------------------
    async def enqueue(self, discussion_id: str, post: Post, now: datetime, turn_key: str | None = None) -> bool:
        """Queue a post once per key; False if that key was already queued."""
        exists = (
            await self.conn.execute(select(t.outbox.c.id).where(t.outbox.c.key == post.key))
        ).first()
        if exists:
            return False
        await self.conn.execute(
            insert(t.outbox).values(
                key=post.key,
                discussion_id=discussion_id,
                payload=post.model_dump(mode="json"),
                turn_key=turn_key,
                created_at=now,
            )
        )
        return True

    async def pending_posts(self, discussion_id: str) -> list[tuple[int, Post, str | None, int]]:
        """Unsent posts in order: (outbox id, post, turn key, earlier attempts)."""
        query = (
            select(t.outbox.c.id, t.outbox.c.payload, t.outbox.c.turn_key, t.outbox.c.attempts)
            .where(t.outbox.c.discussion_id == discussion_id, t.outbox.c.sent.is_(False))
            .order_by(t.outbox.c.id)
        )
        return [
            (r[0], Post.model_validate(r[1]), r[2], r[3]) for r in (await self.conn.execute(query)).all()
        ]

    async def mark_attempt(self, outbox_id: int) -> None:
        await self.conn.execute(
            update(t.outbox).where(t.outbox.c.id == outbox_id).values(attempts=t.outbox.c.attempts + 1)
        )

    async def mark_sent(self, outbox_id: int, ref: str, now: datetime, turn_key: str | None) -> None:
        await self.conn.execute(
            update(t.outbox).where(t.outbox.c.id == outbox_id).values(sent=True, ref=ref, sent_at=now)
        )
        if turn_key:
            await self.conn.execute(
                update(t.turns)
                .where(t.turns.c.key == turn_key, t.turns.c.status == TurnStatus.DONE.value)
                .values(status=TurnStatus.PUBLISHED.value)
            )

    async def post_ref(self, key: str) -> str | None:
        query = select(t.outbox.c.ref).where(t.outbox.c.key == key, t.outbox.c.sent.is_(True))
        return (await self.conn.execute(query)).scalar()

    async def posts(self, discussion_id: str) -> list[tuple[Post, str]]:
        query = (
            select(t.outbox.c.payload, t.outbox.c.ref)
            .where(t.outbox.c.discussion_id == discussion_id)
            .order_by(t.outbox.c.id)
        )
        return [(Post.model_validate(r[0]), r[1]) for r in (await self.conn.execute(query)).all()]

    # humans --------------------------------------------------------------------------------------
    async def first_sight(self, event_id: str, now: datetime) -> bool:
        """Record a platform event id; False when it was seen before (a retried delivery)."""
        if not event_id:
            return True
        try:
            async with self.conn.begin_nested():
                await self.conn.execute(insert(t.processed_events).values(event_id=event_id, seen_at=now))
        except IntegrityError:
            return False
        return True

    async def add_human_message(self, m: HumanMessage) -> HumanMessage:
        result = await self.conn.execute(insert(t.human_messages).values(**m.model_dump(exclude={"id"})))
        assert result.inserted_primary_key is not None
        return m.model_copy(update={"id": result.inserted_primary_key[0]})

    async def human_messages(self, discussion_id: str) -> list[HumanMessage]:
        query = (
            select(t.human_messages)
            .where(t.human_messages.c.discussion_id == discussion_id)
            .order_by(t.human_messages.c.id)
        )
        return [HumanMessage.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def mark_answered(self, message_id: int) -> None:
        await self.conn.execute(
            update(t.human_messages).where(t.human_messages.c.id == message_id).values(answered=True)
        )

    # polls ---------------------------------------------------------------------------------------
    async def add_poll(self, poll: Poll) -> Poll | None:
        exists = (await self.conn.execute(select(t.polls.c.id).where(t.polls.c.key == poll.key))).first()
        if exists:
            return None
        result = await self.conn.execute(insert(t.polls).values(**poll.model_dump(exclude={"id"})))
        assert result.inserted_primary_key is not None
        return poll.model_copy(update={"id": result.inserted_primary_key[0]})

    async def poll(self, poll_id: int) -> Poll | None:
        row = (await self.conn.execute(select(t.polls).where(t.polls.c.id == poll_id))).first()
        return Poll.model_validate(_row(row)) if row else None

    async def polls(self, discussion_id: str) -> list[Poll]:
        query = select(t.polls).where(t.polls.c.discussion_id == discussion_id).order_by(t.polls.c.id)
        return [Poll.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def save_poll(self, poll: Poll) -> None:
        await self.conn.execute(
            update(t.polls).where(t.polls.c.id == poll.id).values(**poll.model_dump(exclude={"id"}))
        )

    async def cast(self, ballot: Ballot) -> None:
        """One live ballot per voter: a new choice supersedes the old one, which stays for the record."""
        c = t.ballots.c
        await self.conn.execute(
            update(t.ballots)
            .where(c.poll_id == ballot.poll_id, c.voter_id == ballot.voter_id, c.superseded.is_(False))
            .values(superseded=True)
        )
        await self.conn.execute(insert(t.ballots).values(**ballot.model_dump()))

    async def add_ballots(self, ballots: list[Ballot]) -> None:
        if ballots:
            await self.conn.execute(insert(t.ballots), [b.model_dump() for b in ballots])

    async def ballots(self, poll_id: int, *, include_superseded: bool = False) -> list[Ballot]:
        query = select(t.ballots).where(t.ballots.c.poll_id == poll_id).order_by(t.ballots.c.id)
        if not include_superseded:
            query = query.where(t.ballots.c.superseded.is_(False))
        return [Ballot.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    # syntheses and usage -------------------------------------------------------------------------
    async def add_synthesis(
        self, turn_key: str, discussion_id: str, round_: int, kind: str, data: dict[str, Any] | None,
        text: str, now: datetime,
    ) -> None:
        exists = (
            await self.conn.execute(select(t.syntheses.c.id).where(t.syntheses.c.turn_key == turn_key))
        ).first()
        if not exists:
            await self.conn.execute(
                insert(t.syntheses).values(
                    turn_key=turn_key, discussion_id=discussion_id, round=round_, kind=kind, data=data,
                    text=text, created_at=now,
                )
            )

    async def syntheses(
        self, discussion_id: str | None = None, *, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        query = select(t.syntheses).order_by(t.syntheses.c.id)
        if discussion_id is not None:
            query = query.where(t.syntheses.c.discussion_id == discussion_id)
        if since is not None:
            query = query.where(t.syntheses.c.created_at >= since)
        return [_row(r) for r in (await self.conn.execute(query)).all()]

    async def add_usage(self, discussion_id: str | None, turn_key: str, u: Usage, now: datetime) -> None:
        await self.conn.execute(
            insert(t.usage).values(
                discussion_id=discussion_id, turn_key=turn_key, created_at=now, **u.model_dump()
            )
        )
        if discussion_id:
            await self.add_cost(discussion_id, u.cost_usd)

    async def usage_total(
        self, discussion_ids: list[str] | None = None, *, since: datetime | None = None,
        until: datetime | None = None,
    ) -> Usage:
        c = t.usage.c
        query = select(
            func.coalesce(func.sum(c.input_tokens), 0),
            func.coalesce(func.sum(c.output_tokens), 0),
            func.coalesce(func.sum(c.cache_write_tokens), 0),
            func.coalesce(func.sum(c.cache_read_tokens), 0),
            func.coalesce(func.sum(c.cost_usd), 0.0),
        )
        if discussion_ids is not None:
            query = query.where(c.discussion_id.in_(discussion_ids))
        if since is not None:
            query = query.where(c.created_at >= since)
        if until is not None:
            query = query.where(c.created_at < until)
        row = (await self.conn.execute(query)).one()
        return Usage(
            input_tokens=row[0], output_tokens=row[1], cache_write_tokens=row[2],
            cache_read_tokens=row[3], cost_usd=float(row[4]),
        )

    # schedules -----------------------------------------------------------------------------------
    async def upsert_schedule(self, s: Schedule, now: datetime) -> Schedule:
        c = t.schedules.c
        where = and_(c.kind == s.kind, c.platform == s.platform, c.workspace == s.workspace, c.target == s.target)
        values = s.model_dump(exclude={"id"})
        existing = (await self.conn.execute(select(c.id).where(where))).scalar()
        if existing is None:
            result = await self.conn.execute(insert(t.schedules).values(created_at=now, **values))
            assert result.inserted_primary_key is not None
            return s.model_copy(update={"id": result.inserted_primary_key[0]})
        await self.conn.execute(update(t.schedules).where(c.id == existing).values(**values))
        return s.model_copy(update={"id": existing})

    async def schedules(self, *, enabled_only: bool = True, kind: str | None = None) -> list[Schedule]:
        query = select(t.schedules).order_by(t.schedules.c.id)
        if enabled_only:
            query = query.where(t.schedules.c.enabled.is_(True))
        if kind is not None:
            query = query.where(t.schedules.c.kind == kind)
        return [Schedule.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def schedule(self, schedule_id: int) -> Schedule | None:
        row = (await self.conn.execute(select(t.schedules).where(t.schedules.c.id == schedule_id))).first()
        return Schedule.model_validate(_row(row)) if row else None

    async def find_schedule(self, kind: str, platform: str, workspace: str, target: str) -> Schedule | None:
        c = t.schedules.c
        row = (
            await self.conn.execute(
                select(t.schedules).where(
                    c.kind == kind, c.platform == platform, c.workspace == workspace, c.target == target
                )
            )
        ).first()
        return Schedule.model_validate(_row(row)) if row else None

    async def claim_firing(
        self, schedule_id: int, expected: datetime, next_run_at: datetime | None, now: datetime
    ) -> bool:
        """Compare-and-set on next_run_at: exactly one firing of a slot wins, whoever else tries."""
        c = t.schedules.c
        result = await self.conn.execute(
            update(t.schedules)
            .where(c.id == schedule_id, c.next_run_at == expected, c.enabled.is_(True))
            .values(next_run_at=next_run_at, last_run_at=now, enabled=next_run_at is not None)
        )
        return result.rowcount == 1

    async def schedule_created_at(self, schedule_id: int) -> datetime | None:
        query = select(t.schedules.c.created_at).where(t.schedules.c.id == schedule_id)
        return aware((await self.conn.execute(query)).scalar())

    # digests -------------------------------------------------------------------------------------
    async def add_digest(
        self, schedule_id: int, slot: datetime, period_start: datetime, period_end: datetime, now: datetime
    ) -> int | None:
        """Record a claimed digest slot, to be sent; None when that slot already has one."""
        try:
            async with self.conn.begin_nested():
                result = await self.conn.execute(
                    insert(t.digests).values(schedule_id=schedule_id, slot=slot, period_start=period_start,
                                             period_end=period_end, created_at=now)
                )
        except IntegrityError:
            return None
        assert result.inserted_primary_key is not None
        return int(result.inserted_primary_key[0])

    async def claim_digests(
        self, owner: str, now: datetime, ttl: float, platforms: list[str], limit: int = 10
    ) -> list[dict[str, Any]]:
        """Unsent digests for these platforms that nobody is sending, leased to `owner` (SKIP LOCKED on PostgreSQL)."""
        c = t.digests.c
        free = or_(c.lease_owner.is_(None), c.lease_expires_at < now)
        served = c.schedule_id.in_(select(t.schedules.c.id).where(t.schedules.c.platform.in_(platforms)))
        query = select(t.digests).where(c.sent.is_(False), free, served).order_by(c.id).limit(limit)
        if self.conn.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True)
        claimed = []
        for row in (await self.conn.execute(query)).all():
            result = await self.conn.execute(
                update(t.digests)
                .where(c.id == row.id, c.sent.is_(False), free)
                .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=ttl), attempts=c.attempts + 1)
            )
            if result.rowcount == 1:
                claimed.append(_row(row))
        return claimed

    async def mark_digest_sent(self, digest_id: int, ref: str, now: datetime) -> None:
        await self.conn.execute(
            update(t.digests)
            .where(t.digests.c.id == digest_id)
            .values(sent=True, ref=ref, sent_at=now, lease_owner=None, lease_expires_at=None)
        )

    async def digests(self, schedule_id: int | None = None) -> list[dict[str, Any]]:
        query = select(t.digests).order_by(t.digests.c.id)
        if schedule_id is not None:
            query = query.where(t.digests.c.schedule_id == schedule_id)
        return [_row(r) for r in (await self.conn.execute(query)).all()]


class Store:
    """Owns the engine; `async with store.tx() as tx` is one unit of work."""

    # How long a transaction waits for its in-process turn on SQLite before it falls back to SQLite's own
    # locking (busy_timeout): a transaction opened inside another then fails as it always did, never hangs.
    SQLITE_TURN_WAIT_S = 5.0

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # SQLite has one writer and every transaction here begins IMMEDIATE, so they run one at a time
        # anyway; queueing them in-process hands over at once instead of through SQLite's busy handler,
        # which sleeps 1, 2, 5, 10... up to 100 ms between retries (parallel turns paid 20-50 ms each).
        self._sqlite_turn = asyncio.Lock() if engine.dialect.name == "sqlite" else None

    @asynccontextmanager
    async def tx(self) -> AsyncIterator[Tx]:
        async with self._turn(), self.engine.begin() as conn:
            yield Tx(conn)

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[None]:
        lock = self._sqlite_turn
        if lock is None:
            yield
            return
        try:
            if lock.locked():
                await asyncio.wait_for(lock.acquire(), self.SQLITE_TURN_WAIT_S)
            else:
                await lock.acquire()  # free: returns at once, without the task wait_for would create
        except TimeoutError:
            log.warning("waited %.1f s for a SQLite transaction; leaving it to busy_timeout", self.SQLITE_TURN_WAIT_S)
            yield
            return
        try:
            yield
        finally:
            lock.release()

    async def close(self) -> None:
        await self.engine.dispose()
