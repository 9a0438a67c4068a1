"""The one process of an SQLite database: an exclusive lock on a file beside it, so a restart may take over the
leases its dead predecessor left behind at once, instead of waiting for them to expire."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from sqlalchemy import update
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from core.storage import tables as t

log = logging.getLogger(__name__)

try:
    import fcntl
except ImportError:  # not a POSIX system: no takeover; leases expire as on a shared database
    fcntl = None  # type: ignore[assignment]


class SoleProcess:
    """Holds `<database>.lock` with flock(LOCK_EX) for the life of the store.

    The kernel drops the lock when its holder dies, however it dies (kill -9 included), so whoever holds it
    knows that no other live process uses the database: every lease held by another owner was left by a
    process that is gone. A second process on the same file (a console beside the Slack server) does not get
    the lock and leaves leases to expire as before."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    @classmethod
    def for_engine(cls, engine: AsyncEngine) -> SoleProcess | None:
        if engine.dialect.name != "sqlite" or fcntl is None:
            return None
        database = make_url(str(engine.url)).database
        if not database or database == ":memory:" or database.startswith("file:"):
            return None
        return cls(Path(database).expanduser().with_name(Path(database).name + ".lock"))

    def acquire(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the lock
            self._fd = None


async def take_over_leases(engine: AsyncEngine, owner: str) -> int:
    """Free every discussion and digest lease not held by `owner` (call only while the sole process)."""
    freed = 0
    async with engine.begin() as conn:
        for table in (t.discussions, t.digests):
            c = table.c
            result = await conn.execute(
                update(table)
                .where(c.lease_owner.is_not(None), c.lease_owner != owner)
                .values(lease_owner=None, lease_expires_at=None)
            )
            freed += result.rowcount
    if freed:
        log.info("took over %d lease(s) left by an earlier process of this database", freed)
    return freed
