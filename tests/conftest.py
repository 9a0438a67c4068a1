"""Shared fixtures: a database URL per backend, each a copy of one migrated template (SQLite file; a PostgreSQL
database created from a template database when configured)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from core.storage.db import normalize_url
from tests.databases import blocking, migrated, migrated_sqlite_url

PG = os.environ.get("TEST_DATABASE_URL", "")


async def fresh_pg_database(template: str | None = None) -> str:
    """A new PostgreSQL database on the test server (empty, or a copy of `template`), so parallel runs never share
    tables."""
    admin_url = normalize_url(PG)
    name = f"council_{secrets.token_hex(6)}"
    admin = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
        # A commit need not wait for its log to reach the disk: what the tests check is what other sessions see,
        # which is the same either way; a crash of the test server, the one thing it changes, loses nothing kept.
        await conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    await admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


async def drop_pg_database(url: str) -> None:
    admin = create_async_engine(normalize_url(PG), isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    await admin.dispose()


# A database a test has finished with is emptied and kept for the next test in this process: deleting a few rows
# costs milliseconds, where creating a database from the template and dropping it cost about half a second (the
# server writes and syncs every file of the copy).
_pg_kept: list[str] = []

_EMPTY = """
SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid();
DO $$
DECLARE r record;
BEGIN
  SET LOCAL session_replication_role = replica;  -- rows go in any order: no foreign key is checked
  FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version' LOOP
    EXECUTE format('DELETE FROM %I', r.tablename);
  END LOOP;
  FOR r IN SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' LOOP
    EXECUTE format('ALTER SEQUENCE %I RESTART', r.sequencename);
  END LOOP;
END $$;
"""


async def pg_database(template: str) -> str:
    """A migrated PostgreSQL database no other test is using: one a finished test left, emptied, or a new copy."""
    return _pg_kept.pop() if _pg_kept else await fresh_pg_database(template)


async def release_pg_database(url: str) -> None:
    """Empty the database (its connections closed, its rows deleted, its counters restarted) and keep it for the
    next test; drop it instead if that fails."""
    admin = create_async_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        async with admin.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            await driver.execute(_EMPTY)  # several statements: asyncpg runs them as one script
    except Exception:
        await admin.dispose()
        await drop_pg_database(url)
        return
    await admin.dispose()
    _pg_kept.append(url)


def _no_postgres() -> None:
    if os.environ.get("CI"):
        pytest.fail("TEST_DATABASE_URL must be set in CI: the PostgreSQL tests are not optional there")
    pytest.skip("TEST_DATABASE_URL is not set (CI always sets it)")


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """One migrated PostgreSQL database per test process, named uniquely so that concurrent runs and xdist
    workers never copy from, or drop, each other's; dropped when the session ends."""
    if not PG:
        _no_postgres()
    url = blocking(fresh_pg_database())
    try:
        blocking(migrated(url))
        yield str(make_url(url).database)
    finally:
        while _pg_kept:
            blocking(drop_pg_database(_pg_kept.pop()))
        blocking(drop_pg_database(url))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A migrated SQLite database of this test's own: `council.db` in its temporary folder."""
    return migrated_sqlite_url(tmp_path)


@pytest.fixture
async def pg_url(pg_template: str) -> AsyncIterator[str]:
    """A migrated PostgreSQL database of this test's own, emptied after it for the next."""
    url = await pg_database(pg_template)
    yield url
    await release_pg_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """Each store test runs on both backends, on a migrated database of its own."""
    if request.param == "sqlite":
        yield request.getfixturevalue("sqlite_url")
        return
    if not PG:
        _no_postgres()
    url = await pg_database(request.getfixturevalue("pg_template"))
    yield url
    await release_pg_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
async def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An empty database of this test's own on each backend, for tests that migrate it themselves."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'council.db'}"
        return
    if not PG:
        _no_postgres()
    url = await fresh_pg_database()
    yield url
    await drop_pg_database(url)


@pytest.hookimpl(trylast=True)  # after tests/e2e marks its own
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that take seconds first, each group in its own order: with two workers, a long test started last
    would leave one worker running it alone at the end of the run."""
    items.sort(key=lambda item: not (item.get_closest_marker("e2e") or item.get_closest_marker("slow")))


# Loggers the CLI sets when it runs in this process (tests call it through typer's runner): a level one test leaves
# behind would silence another's logs.
CLI_LOGGERS = ("", "apscheduler", "slack_sdk.web.async_base_client")


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    import logging

    levels = {name: logging.getLogger(name).level for name in CLI_LOGGERS}
    handlers = list(logging.getLogger().handlers)
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    root = logging.getLogger()
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
