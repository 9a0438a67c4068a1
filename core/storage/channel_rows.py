"""A channel's discussions as its digest sees them: those that moved in a period, and those waiting on people."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select

from core.models import Discussion, Status
from core.storage import tables as t
from core.storage.rows import Repo, _row


class ChannelRepo(Repo):
    async def moved(self, platform: str, workspace: str, channel: str, start: datetime, end: datetime,
                    limit: int = 100) -> list[Discussion]:
        """Discussions of the channel that moved in [start, end): a change of state, a turn begun or finished, a
        person's message or a ballot, oldest first."""
        c = t.discussions.c

        def within(column: Any) -> ColumnElement[bool]:
            return and_(column >= start, column < end)

        turns, humans, polls, ballots = t.turns.c, t.human_messages.c, t.polls.c, t.ballots.c
        moved = or_(
            within(c.updated_at),
            select(turns.key).where(turns.discussion_id == c.id,
                                    or_(within(turns.created_at), within(turns.finished_at))).exists(),
            select(humans.id).where(humans.discussion_id == c.id, within(humans.created_at)).exists(),
            select(ballots.poll_id).join(t.polls, polls.id == ballots.poll_id)
            .where(polls.discussion_id == c.id, within(ballots.created_at)).exists(),
        )
        query = (select(t.discussions)
                 .where(c.platform == platform, c.workspace == workspace, c.channel == channel, moved)
                 .order_by(c.created_at).limit(limit))
        return [Discussion.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def waiting_on_people(self, platform: str, workspace: str, channel: str, statuses: list[Status],
                                limit: int = 50) -> list[Discussion]:
        """Discussions of the channel in one of these states, the longest waiting first."""
        c = t.discussions.c
        query = (select(t.discussions)
                 .where(c.platform == platform, c.workspace == workspace, c.channel == channel,
                        c.status.in_([s.value for s in statuses]))
                 .order_by(c.updated_at).limit(limit))
        return [Discussion.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def channel_has_discussions(self, platform: str, workspace: str, channel: str) -> bool:
        c = t.discussions.c
        query = select(c.id).where(c.platform == platform, c.workspace == workspace, c.channel == channel).limit(1)
        return (await self.conn.execute(query)).first() is not None
