"""The hash of the slash commands an application last synced, so an unchanged start writes nothing."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, insert, select

from core.storage import tables as t
from core.storage.rows import Repo


class CommandSyncRepo(Repo):
    async def command_hash(self, platform: str, application: str) -> str:
        """The hash of the definitions last synced ("" when none were)."""
        c = t.command_sync.c
        query = select(c.digest).where(c.platform == platform, c.application == application)
        return str((await self.conn.execute(query)).scalar() or "")

    async def set_command_hash(self, platform: str, application: str, digest: str, now: datetime) -> None:
        c = t.command_sync.c
        await self.conn.execute(delete(t.command_sync).where(c.platform == platform, c.application == application))
        await self.conn.execute(insert(t.command_sync).values(platform=platform, application=application,
                                                              digest=digest, synced_at=now))
