"""Shared fixtures: a database URL per backend (SQLite file; a fresh PostgreSQL database when configured)."""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

from core.storage.db import normalize_url

PG = os.environ.get("TEST_DATABASE_URL", "")


async def fresh_pg_database() -> str:
    """A new, empty PostgreSQL database on the test server, so parallel runs never share tables."""
    admin_url = normalize_url(PG)
    name = f"council_{secrets.token_hex(6)}"
    admin = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    await admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False)


async def drop_pg_database(url: str) -> None:
    admin = create_async_engine(normalize_url(PG), isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    await admin.dispose()


def _no_postgres() -> None:
    if os.environ.get("CI"):
        pytest.fail("TEST_DATABASE_URL must be set in CI: the PostgreSQL tests are not optional there")
    pytest.skip("TEST_DATABASE_URL is not set (CI always sets it)")


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    if not PG:
        _no_postgres()
    url = await fresh_pg_database()
    yield url
    await drop_pg_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """Each store test runs on both backends."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'council.db'}"
        return
    if not PG:
        _no_postgres()
    url = await fresh_pg_database()
    yield url
    await drop_pg_database(url)
