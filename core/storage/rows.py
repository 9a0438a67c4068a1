"""Row helpers shared by the repositories: UTC-aware datetimes and the connection they all use."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Table, text
from sqlalchemy.dialects.postgresql import Insert as PgInsert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import Insert as SqliteInsert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from core.storage.changes import Changes


def aware(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything in the core is UTC-aware."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _row(row: Any) -> dict[str, Any]:
    """A row as a dict of its columns, its datetimes UTC-aware (read for every turn of a discussion at each step:
    the names are zipped with the values, not looked up one by one through the row's mapping)."""
    data = dict(zip(row._fields, row, strict=True))
    for name, value in data.items():
        if isinstance(value, datetime):
            data[name] = aware(value)
    return data


_XACT_LOCK = text("SELECT pg_advisory_xact_lock(hashtextextended(:key, 0))")


class Repo:
    """A repository works inside one transaction, on its connection."""

    # The posts this transaction queued for the discussion whose lease it checked, when that check saw none
    # queued before: then they are its whole queue (None: unknown; see DiscussionRepo.fence).
    enqueued: list[Any] | None = None

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
        self.changes = Changes()  # what it wrote to discussions' turns, personas and people's messages
        self.serialized: set[tuple[str, ...]] = set()  # the keys it holds a lock on (see `serialize`)

    def outbox_changed(self) -> None:
        """The outbox changed otherwise than by queueing a post: a drain reads the queue again."""
        self.enqueued = None

    async def serialize(self, *key: str) -> None:
        """Hold, until this transaction ends, a lock on `key` (a person's starts, a workspace's spend), so a
        count and the write it allows are one step for everyone asking with the same key. PostgreSQL: an
        advisory transaction lock on the key's hash; SQLite's write transactions already run one at a time."""
        if self.conn.dialect.name == "postgresql" and key not in self.serialized:  # held: not asked twice
            await self.conn.execute(_XACT_LOCK, {"key": "\x1f".join(key)})
            self.serialized.add(key)

    def insert(self, table: Table) -> PgInsert | SqliteInsert:
        """An INSERT that can say ON CONFLICT, in this connection's dialect (both speak it alike)."""
        return insert_in(self.conn.dialect.name, table)


def insert_in(dialect: str, table: Table) -> PgInsert | SqliteInsert:
    return pg_insert(table) if dialect == "postgresql" else sqlite_insert(table)
