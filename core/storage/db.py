"""Engine creation (SQLite pragmas, immediate write transactions) and schema migration with Alembic."""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.util import await_only

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: held while migrating so replicas started together do not race.
MIGRATION_LOCK = 0x6C0C11


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def normalize_url(url: str) -> str:
    """Accept the plain URLs operators paste (postgres://, sqlite:///) and pick the async drivers."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+asyncpg")
    elif parsed.drivername == "sqlite":
        parsed = parsed.set(drivername="sqlite+aiosqlite")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str) -> AsyncEngine:
    url = normalize_url(url)
    if not is_sqlite(url):
        return create_async_engine(url, pool_size=10, max_overflow=10, pool_pre_ping=True)
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url, connect_args={"timeout": 30})

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        # Let SQLAlchemy's "begin" event emit BEGIN itself (pysqlite's own handling defers it).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA busy_timeout=30000")
        _use_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # IMMEDIATE takes the write lock up front, so two writers queue on busy_timeout
        # instead of one failing with "database is locked" when it upgrades a read lock.
        conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _use_wal(cursor: Any, wait_s: float = 30.0) -> None:
    """Switch the file to WAL once; SQLite does not apply busy_timeout to that switch, so wait here."""
    deadline = time.monotonic() + wait_s
    pause = 0.01
    while True:
        cursor.execute("PRAGMA journal_mode")
        if str(cursor.fetchone()[0]).lower() == "wal":
            return
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
        except Exception as exc:  # the adapted driver's OperationalError
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            # Connect events run on the event loop's greenlet: wait without blocking the loop.
            await_only(asyncio.sleep(pause))
            pause = min(pause * 2, 0.1)


def _alembic_config(connection: Connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def _upgrade(connection: Connection) -> None:
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
    command.upgrade(_alembic_config(connection), "head")


async def migrate(engine: AsyncEngine) -> None:
    """Create or upgrade the schema to the newest revision; safe to run from several replicas."""
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade)
    log.info("database schema is current")
