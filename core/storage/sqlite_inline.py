"""SQLite on the event loop: the standard pysqlite dialect, driven by the async engine with no thread between.

A statement on a local SQLite file takes microseconds; handing each to a worker thread and back (aiosqlite:
three or four hand-offs per statement) cost the loop more than the statements, and held the one write lock
while the hand-offs waited their turn on a busy loop. Here the async engine runs the dialect's plain sqlite3
calls in its greenlet. Each statement passes once through the loop's side of the greenlet (the async engine
insists that a statement awaits something); that costs microseconds, not a thread hop. Inside a transaction the
store's `InlineConnection` goes further: its statements run straight on the sync connection, with no greenlet at
all, which halves what a statement costs the loop.

The one wait SQLite can impose is another process holding the write lock. Every transaction takes that lock
at BEGIN (IMMEDIATE) and SQLite's own busy timeout is off, so that is the only statement that can find the
database locked: it is retried after asyncio sleeps (the loop runs meanwhile), up to `BUSY_WAIT_S`."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import pool
from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.pysqlite import SQLiteDialect_pysqlite
from sqlalchemy.engine import URL, CursorResult
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncTransaction
from sqlalchemy.util import await_only
from sqlalchemy.util.concurrency import in_greenlet

T = TypeVar("T")
BUSY_WAIT_S = 30.0  # how long a statement waits for another process's write lock before failing
FIRST_PAUSE_S, MAX_PAUSE_S = 0.001, 0.05


async def _nothing() -> None:
    return None


class _Cursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> _Cursor:
        super().execute(sql, parameters)
        if in_greenlet():  # the await the async engine requires of every statement it runs (none outside it)
            await_only(_nothing())
        return self

    def executemany(self, sql: str, parameters: Any, /) -> _Cursor:
        super().executemany(sql, parameters)
        if in_greenlet():
            await_only(_nothing())
        return self

    async def _async_soft_close(self) -> None:
        """The async engine's hook for drivers whose rows must be fetched before it leaves the greenlet; rows of
        an sqlite3 cursor are read synchronously, from anywhere on the loop's thread."""


class _Connection(sqlite3.Connection):
    def cursor(self, factory: Any = _Cursor) -> Any:
        return super().cursor(factory)


class SQLiteDialect_inline(SQLiteDialect_pysqlite):
    """pysqlite, marked async so that `create_async_engine` drives it inline."""

    driver = "inline"
    is_async = True
    supports_statement_cache = True

    @classmethod
    def get_pool_class(cls, url: URL) -> type[pool.Pool]:
        # The async engine's pool waits for a free connection with asyncio, not by blocking the loop.
        return pool.AsyncAdaptedQueuePool if cls._is_url_file_db(url) else pool.StaticPool

    def do_begin(self, dbapi_connection: Any) -> None:
        # IMMEDIATE takes the write lock up front, so two writers queue for it instead of one failing with
        # "database is locked" when it upgrades a read lock; and no later statement can find the file locked.
        # Said here rather than in an engine "begin" event: any such event makes the engine dispatch events around
        # every statement it runs.
        raw = dbapi_connection.dbapi_connection
        wait_locked(lambda: raw.execute("BEGIN IMMEDIATE"))

    def create_connect_args(self, url: URL) -> Any:
        args, kw = super().create_connect_args(url)
        # No busy timeout inside SQLite: it would stop the loop while another process writes (see wait_locked).
        # Autocommit at the driver: the engine's "begin" event says BEGIN IMMEDIATE itself.
        return args, {**kw, "timeout": 0, "isolation_level": None, "factory": _Connection}


registry.register("sqlite.inline", __name__, "SQLiteDialect_inline")


class Locked(Exception):
    """BEGIN found another process writing, where nothing can wait for it (outside the engine's greenlet)."""


class InlineConnection(AsyncConnection):
    """An async connection whose transactions, and the statements in them, run straight on its sync connection.

    The async engine spawns a greenlet for each statement, BEGIN and COMMIT, and switches into it and back; on
    this dialect nothing in them waits but a BEGIN that finds another process writing, so they run where they are
    called (bench/transactions.py: against the sync engine, an empty transaction cost 5.7-7.4x through greenlets
    and 2.1-2.9x without, one of 3 reads 1.45-1.70x and 0.93-1.25x). That BEGIN, and any statement outside a
    transaction (it would begin one), still go through the engine's greenlet, where waiting is allowed."""

    def begin(self) -> AsyncTransaction:
        return _InlineTransaction(self)

    async def execute(self, statement: Any, parameters: Any = None, *,  # type: ignore[override]
                      execution_options: Any = None) -> CursorResult[Any]:
        sync = self.sync_connection
        if sync is None or not sync.in_transaction():
            return await super().execute(statement, parameters, execution_options=execution_options)
        return sync.execute(statement, parameters, execution_options=execution_options)


class _InlineTransaction(AsyncTransaction):
    """`async with conn.begin()`: BEGIN on entry and COMMIT (or ROLLBACK) on exit, said where they are asked.
    (Savepoints, `begin_nested`, keep the engine's own transaction.)"""

    async def start(self, is_ctxmanager: bool = False) -> AsyncTransaction:
        try:
            began = self.connection._proxied.begin()
        except Locked:  # another process writes: BEGIN again where it can wait for it
            return await super().start(is_ctxmanager)
        self.sync_transaction = self._assign_proxied(began)
        if is_ctxmanager:
            began.__enter__()
        return self

    async def __aexit__(self, type_: Any, value: Any, traceback: Any) -> None:
        self._proxied.__exit__(type_, value, traceback)


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def wait_locked(statement: Callable[[], T], wait_s: float = BUSY_WAIT_S) -> T:
    """Run a statement that may find the database locked by another process; retry it after asyncio sleeps until
    `wait_s` has passed. Called from the engine's greenlet (the connect event and `do_begin`), where awaiting is
    allowed; elsewhere (a transaction begun on the loop) a locked database raises `Locked` at once."""
    deadline, pause = time.monotonic() + wait_s, FIRST_PAUSE_S
    while True:
        try:
            return statement()
        except sqlite3.OperationalError as exc:
            if not _busy(exc) or time.monotonic() + pause > deadline:
                raise
            if not in_greenlet():
                raise Locked from exc
        await_only(asyncio.sleep(pause))
        pause = min(pause * 2, MAX_PAUSE_S)
