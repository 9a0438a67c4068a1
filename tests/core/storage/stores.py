"""A migrated store holding two running discussions of one Slack channel, the start of the storage rule tests."""

from __future__ import annotations

from datetime import datetime

from core.models import Discussion, Status
from core.storage.db import make_engine, migrate
from core.storage.store import Store


async def two_discussions(url: str, at: datetime) -> Store:
    """The store at `url`, migrated, with discussions d1 and d2 running in channel C1 of workspace T1 since `at`."""
    engine = make_engine(url)
    await migrate(engine)
    s = Store(engine)
    async with s.tx() as tx:
        for did in ("d1", "d2"):
            await tx.add_discussion(Discussion(id=did, topic=did, status=Status.RUNNING, platform="slack",
                                               workspace="T1", channel="C1", created_at=at, updated_at=at,
                                               budget_usd=5.0))
    return s
