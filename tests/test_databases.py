"""The tests' PostgreSQL databases: one a test finished with comes back to the next test empty, its counters
restarted and its connections closed, as a fresh copy of the template would."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from tests.conftest import pg_database, release_pg_database

ROW = ("INSERT INTO usage (discussion_id, turn_key, model, input_tokens, output_tokens, cache_write_tokens, "
       "cache_read_tokens, cost_usd, created_at) VALUES ('d1', 'k', 'm', 1, 1, 0, 0, 0.5, now()) RETURNING id")


async def test_a_kept_database_comes_back_empty_with_its_counters_restarted(pg_template: str) -> None:
    url = await pg_database(pg_template)
    engine = create_async_engine(url, poolclass=NullPool)
    try:
        async with engine.begin() as conn:
            first = (await conn.execute(text(ROW))).scalar_one()
            await conn.execute(text(ROW))
        left_open = await engine.connect()  # a connection a test forgot: closed by the server, not waited for
        await left_open.execute(text("SELECT 1"))
        await release_pg_database(url)
        again = await pg_database(pg_template)
        assert again == url, "the same database, kept for the next test"
        async with engine.begin() as conn:
            assert (await conn.execute(text("SELECT count(*) FROM usage"))).scalar_one() == 0
            assert (await conn.execute(text(ROW))).scalar_one() == first, "ids start again as in a fresh copy"
            version = (await conn.execute(text("SELECT count(*) FROM alembic_version"))).scalar_one()
            assert version == 1, "the schema's migration record is kept"
        with pytest.raises(DBAPIError):
            await left_open.execute(text("SELECT 1"))
        await left_open.invalidate()
    finally:
        await engine.dispose()
        await release_pg_database(url)
