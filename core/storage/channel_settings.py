"""Per-channel configuration people set with `/council config`: the meeting's domain owners, the defaults
of new discussions, and a forum's tag for new posts."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, select

from core.storage import tables as t
from core.storage.rows import Repo


class ChannelSettingsRepo(Repo):
    async def channel_owners(self, platform: str, workspace: str, channel: str) -> list[str]:
        c = t.channel_settings.c
        query = select(c.owners).where(c.platform == platform, c.workspace == workspace, c.channel == channel)
        owners = (await self.conn.execute(query)).scalar()
        return [str(o) for o in owners or []]

    async def set_channel_owners(self, platform: str, workspace: str, channel: str, owners: list[str],
                                 by: str, now: datetime) -> None:
        """Replace the channel's owners (an empty list clears them): one row per channel."""
        c = t.channel_settings.c
        await self.conn.execute(delete(t.channel_settings).where(
            c.platform == platform, c.workspace == workspace, c.channel == channel))
        if owners:
            await self.conn.execute(insert(t.channel_settings).values(
                platform=platform, workspace=workspace, channel=channel, owners=owners, updated_by=by,
                updated_at=now))

    async def channel_defaults(self, platform: str, workspace: str, channel: str) -> dict[str, Any]:
        c = t.channel_defaults.c
        query = select(c.defaults).where(c.platform == platform, c.workspace == workspace, c.channel == channel)
        return dict((await self.conn.execute(query)).scalar() or {})

    async def set_channel_defaults(self, platform: str, workspace: str, channel: str, values: dict[str, Any],
                                   by: str, now: datetime) -> None:
        """Replace the channel's defaults (empty clears them): one row per channel."""
        c = t.channel_defaults.c
        await self.conn.execute(delete(t.channel_defaults).where(
            c.platform == platform, c.workspace == workspace, c.channel == channel))
        if values:
            await self.conn.execute(insert(t.channel_defaults).values(
                platform=platform, workspace=workspace, channel=channel, defaults=values, updated_by=by,
                updated_at=now))

    async def channel_tag(self, platform: str, workspace: str, channel: str) -> str:
        """The tag chosen for new posts in this forum ("" when none was)."""
        c = t.channel_tags.c
        query = select(c.tag).where(c.platform == platform, c.workspace == workspace, c.channel == channel)
        return str((await self.conn.execute(query)).scalar() or "")

    async def set_channel_tag(self, platform: str, workspace: str, channel: str, tag: str, by: str,
                              now: datetime) -> None:
        """Choose the tag of new posts in this forum ("" clears it): one row per channel."""
        c = t.channel_tags.c
        await self.conn.execute(delete(t.channel_tags).where(
            c.platform == platform, c.workspace == workspace, c.channel == channel))
        if tag:
            await self.conn.execute(insert(t.channel_tags).values(
                platform=platform, workspace=workspace, channel=channel, tag=tag, updated_by=by, updated_at=now))
