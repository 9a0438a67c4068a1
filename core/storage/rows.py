"""Row helpers shared by the repositories: UTC-aware datetimes and the connection they all use."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection


def aware(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything in the core is UTC-aware."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def _row(row: Any) -> dict[str, Any]:
    data = dict(row._mapping)
    for name, value in data.items():
        if isinstance(value, datetime):
            data[name] = aware(value)
    return data


class Repo:
    """A repository works inside one transaction, on its connection."""

    def __init__(self, conn: AsyncConnection) -> None:
        self.conn = conn
