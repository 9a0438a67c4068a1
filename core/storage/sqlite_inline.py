"""SQLite for the async engine without a worker thread: each statement runs on the event loop, where it takes
microseconds, instead of being handed to a thread and back (three or four hand-offs per statement cost the loop
more than the statements themselves, and held the one write lock while they waited their turn on a busy loop).

SQLAlchemy's aiosqlite dialect drives these objects through `async_creator`; they offer the part of aiosqlite's
connection and cursor it uses. The one wait SQLite may impose, another process holding the write lock, is not
waited out inside SQLite (that would stop the loop): the statement gives up at once and is retried after an
asyncio sleep until the database's own timeout."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Generator, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
FIRST_PAUSE_S, MAX_PAUSE_S = 0.001, 0.05


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class InlineCursor:
    """A sqlite3 cursor with aiosqlite's awaitable methods."""

    def __init__(self, connection: InlineConnection, cursor: sqlite3.Cursor) -> None:
        self._owner, self._cursor = connection, cursor

    def __await__(self) -> Generator[Any, None, InlineCursor]:  # `await conn.cursor()`, as aiosqlite allows
        return self._itself().__await__()

    async def _itself(self) -> InlineCursor:
        return self

    async def __aenter__(self) -> InlineCursor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._cursor.close()

    @property
    def description(self) -> Any:
        return self._cursor.description

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    @property
    def arraysize(self) -> int:
        return self._cursor.arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._cursor.arraysize = value

    async def execute(self, sql: str, parameters: Any = ()) -> InlineCursor:
        await self._owner.run(self._cursor.execute, sql, parameters)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> InlineCursor:
        await self._owner.run(self._cursor.executemany, sql, parameters)
        return self

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        return self._cursor.fetchmany(self._cursor.arraysize if size is None else size)

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def nextset(self) -> None:
        return None

    async def close(self) -> None:
        self._cursor.close()


class InlineConnection:
    """A sqlite3 connection with aiosqlite's awaitable methods; `busy_wait_s` bounds the retries of a locked
    database (the engine's `timeout`)."""

    def __init__(self, connection: sqlite3.Connection, busy_wait_s: float) -> None:
        self._connection = connection  # SQLAlchemy's adapter checks this attribute before commit and rollback
        self.busy_wait_s = busy_wait_s

    @classmethod
    def open(cls, database: str, *, busy_wait_s: float, **kw: Any) -> InlineConnection:
        # Autocommit at the driver: SQLAlchemy's "begin" event says BEGIN IMMEDIATE itself. No busy timeout
        # inside SQLite: a locked database is waited for here, on the loop's terms.
        # Any thread may close it (the pool's dispose), though only the loop's runs statements.
        kw |= {"timeout": 0, "isolation_level": None, "check_same_thread": False}
        conn = sqlite3.connect(database, **kw)
        return cls(conn, busy_wait_s)

    async def run(self, call: Callable[..., T], *args: Any) -> T:
        deadline, pause = time.monotonic() + self.busy_wait_s, FIRST_PAUSE_S
        while True:
            try:
                return call(*args)
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() + pause > deadline:
                    raise
            await asyncio.sleep(pause)  # another process writes: let the loop run meanwhile
            pause = min(pause * 2, MAX_PAUSE_S)

    def cursor(self) -> InlineCursor:
        return InlineCursor(self, self._connection.cursor())

    async def execute(self, sql: str, parameters: Any = ()) -> InlineCursor:
        return await self.cursor().execute(sql, parameters)

    @property
    def isolation_level(self) -> str | None:
        return self._connection.isolation_level

    async def commit(self) -> None:
        await self.run(self._connection.commit)

    async def rollback(self) -> None:
        self._connection.rollback()

    async def close(self) -> None:
        self._connection.close()

    def stop(self) -> None:  # SQLAlchemy terminates a connection it cannot close gracefully with this
        self._connection.close()

    async def create_function(self, *args: Any, **kw: Any) -> None:
        self._connection.create_function(*args, **kw)
