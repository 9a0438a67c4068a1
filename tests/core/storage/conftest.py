"""The storage tests' store: a migrated database of the test's kind (db_url: SQLite, or PostgreSQL in CI)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.storage.db import make_engine, migrate
from core.storage.store import Store


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    engine = make_engine(db_url)
    await migrate(engine)
    s = Store(engine)
    yield s
    await s.close()
