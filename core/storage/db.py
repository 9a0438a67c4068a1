"""Engine creation (SQLite pragmas, immediate write transactions) and schema migration with Alembic."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

from core.storage.sqlite_inline import wait_locked

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed 64-bit number: held while migrating so replicas started together do not race.
MIGRATION_LOCK = 0x6C0C11
# A pooled PostgreSQL connection unused this long is pinged before it is handed out: the server may have ended it
# meanwhile (a restart, an idle timeout). One in steady use is not: on asyncpg a ping is three round trips (begin,
# an empty query, rollback), paid by every transaction with the pool's own pre-ping.
PING_IDLE_S = 10.0


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def normalize_url(url: str) -> str:
    """Accept the plain URLs operators paste (postgres://, sqlite:///) and pick the async drivers."""
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://") :]
    parsed = make_url(url)
    if parsed.drivername == "postgresql":
        parsed = parsed.set(drivername="postgresql+asyncpg")
    elif parsed.drivername in ("sqlite", "sqlite+pysqlite", "sqlite+aiosqlite"):  # aiosqlite: earlier releases
        parsed = parsed.set(drivername="sqlite+inline")
    return parsed.render_as_string(hide_password=False)


def make_engine(url: str, *, ping_idle_s: float = PING_IDLE_S,
                idle_clock: Callable[[], float] = time.monotonic) -> AsyncEngine:
    url = normalize_url(url)
    if not is_sqlite(url):
        # Twenty at most, all kept once opened: a pool of ten with ten more closed each one it was given back past
        # ten, and a busy moment opened them again (connecting and closing were 2.5% of the app's CPU).
        return _ping_when_idle(create_async_engine(url, pool_size=20, max_overflow=0), ping_idle_s, idle_clock)
    database = make_url(url).database
    if database and database != ":memory:":
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)  # statements run on the event loop (see sqlite_inline)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        # A no-op once the file is in WAL; a fresh file's switch waits for another process that is writing.
        wait_locked(lambda: dbapi_connection.execute("PRAGMA journal_mode=WAL"))
        dbapi_connection.execute("PRAGMA foreign_keys=ON")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")

    return engine


def side_engine(url: str | URL) -> AsyncEngine:
    """One PostgreSQL connection beside the pool, for work that must never wait behind the pool's (leases)."""
    return _ping_when_idle(create_async_engine(url, pool_size=1, max_overflow=0), PING_IDLE_S)


def _ping_when_idle(engine: AsyncEngine, idle_s: float,
                    clock: Callable[[], float] = time.monotonic) -> AsyncEngine:
    """Ping a pooled connection before use only when it sat unused for `idle_s`; a dead one is replaced (the pool
    retries the checkout on DisconnectionError). A connection the server ended while in steady use fails its
    statement instead, and that invalidates the whole pool, so the next transactions connect afresh."""
    pool = engine.sync_engine.pool

    @event.listens_for(pool, "checkin")
    def _back(_dbapi_connection: object, record: ConnectionPoolEntry) -> None:
        record.info["idle_since"] = clock()

    @event.listens_for(pool, "checkout")
    def _out(dbapi_connection: object, record: ConnectionPoolEntry, _proxy: object) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or clock() - since < idle_s:
            return  # new, or in steady use
        try:
            engine.dialect.do_ping(dbapi_connection)  # type: ignore[arg-type]
        except Exception as exc:
            raise DisconnectionError(f"a pooled connection idle for {time.monotonic() - since:.0f} s is gone") from exc

    return engine


def _alembic_config(connection: Connection, encryption_key: str = "") -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    cfg.attributes["encryption_key"] = encryption_key  # for encrypting credentials stored in clear before
    return cfg


def _upgrade(connection: Connection, encryption_key: str = "") -> None:
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
    command.upgrade(_alembic_config(connection, encryption_key), "head")


async def migrate(engine: AsyncEngine, encryption_key: str = "") -> None:
    """Create or upgrade the schema to the newest revision; safe to run from several replicas. The key
    (COUNCIL_ENCRYPTION_KEY, read from the environment when not given) encrypts credentials an older release
    stored in clear."""
    async with engine.begin() as conn:
        await conn.run_sync(_upgrade, encryption_key)
    log.info("database schema is current")
