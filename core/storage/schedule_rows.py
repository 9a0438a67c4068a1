"""Schedules and the digests they send: slots claimed by compare-and-set."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from core.models import (
    Schedule,
)
from core.storage import tables as t
from core.storage.rows import Repo, _row, aware


class ScheduleRepo(Repo):
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

    async def forget_schedules(self, platform: str, workspace: str) -> int:
        """The app left this workspace: delete its schedules (rounds and digests) and their queued digest posts."""
        c = t.schedules.c
        ids = select(c.id).where(c.platform == platform, c.workspace == workspace)
        await self.conn.execute(delete(t.digests).where(t.digests.c.schedule_id.in_(ids)))
        result = await self.conn.execute(delete(t.schedules).where(c.platform == platform, c.workspace == workspace))
        return int(result.rowcount or 0)

    async def schedule(self, schedule_id: int) -> Schedule | None:
        row = (await self.conn.execute(select(t.schedules).where(t.schedules.c.id == schedule_id))).first()
        return Schedule.model_validate(_row(row)) if row else None

    async def find_schedule(self, kind: str, platform: str, workspace: str, target: str, *,
                            for_update: bool = False) -> Schedule | None:
        """`for_update` locks the row (PostgreSQL): whoever replaces it checks the owner it will replace."""
        c = t.schedules.c
        query = select(t.schedules).where(c.kind == kind, c.platform == platform, c.workspace == workspace,
                                          c.target == target)
        if for_update and self.conn.dialect.name == "postgresql":
            query = query.with_for_update()
        row = (await self.conn.execute(query)).first()
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

    async def hold_digest(self, digest_id: int, attempts: int, owner: str, now: datetime, ttl: float) -> bool:
        """Extend `owner`'s lease on an unsent digest for `ttl` from `now`, unless another delivery has claimed it
        since its claim counted attempt `attempts` (every claim counts one): True when the digest is still its to
        send, for the next `ttl`."""
        c = t.digests.c
        result = await self.conn.execute(
            update(t.digests)
            .where(c.id == digest_id, c.sent.is_(False), c.lease_owner == owner, c.attempts == attempts)
            .values(lease_expires_at=now + timedelta(seconds=ttl))
        )
        return result.rowcount == 1

    async def set_digest_post(self, digest_id: int, post: dict[str, Any]) -> None:
        """Keep the digest as written before it is sent, so every retry sends the same words."""
        await self.conn.execute(update(t.digests).where(t.digests.c.id == digest_id).values(post=post))

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
