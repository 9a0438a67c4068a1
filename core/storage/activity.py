"""What people and models add to a discussion: human messages, polls, ballots, syntheses, usage."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, case, delete, func, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from core.models import (
    Ballot,
    HumanMessage,
    Poll,
    Usage,
)
from core.storage import tables as t
from core.storage.reservations import add_spend, add_workspace_spend, settle
from core.storage.rows import Repo, _row

# Built once: the statements every model call runs (see discussions.py).
_u, _d = t.usage.c, t.discussions.c
_HUMANS = select(t.human_messages).where(t.human_messages.c.discussion_id == bindparam("id")).order_by(
    t.human_messages.c.id)
_ADD_USAGE = insert(t.usage)
_ADD_COST = update(t.discussions).where(_d.id == bindparam("b_id")).values(
    cost_usd=_d.cost_usd + bindparam("b_usd"),
    costliest_call_usd=case((_d.costliest_call_usd < bindparam("b_usd"), bindparam("b_usd")),
                            else_=_d.costliest_call_usd))
_s = t.spend.c
_WORKSPACE_SPEND = select(func.coalesce(func.sum(_s.cost_usd), 0.0)).where(
    _s.platform == bindparam("platform"), _s.workspace == bindparam("workspace"), _s.starts_at >= bindparam("since"))

_PROCESS_SPEND = select(func.coalesce(func.sum(_s.cost_usd), 0.0)).where(_s.starts_at >= bindparam("since"))


class ActivityRepo(Repo):
    # humans --------------------------------------------------------------------------------------
    async def first_sight(self, event_id: str, now: datetime) -> bool:
        """Record a platform event id; False when it was seen before (a retried delivery)."""
        if not event_id:
            return True
        try:
            async with self.conn.begin_nested():
                await self.conn.execute(insert(t.processed_events).values(event_id=event_id, seen_at=now))
        except IntegrityError:
            return False
        return True

    async def prune_events(self, before: datetime) -> int:
        """Forget event ids seen before `before`: platforms stop retrying a delivery within minutes."""
        c = t.processed_events.c
        return (await self.conn.execute(delete(t.processed_events).where(c.seen_at < before))).rowcount

    async def add_human_message(self, m: HumanMessage) -> HumanMessage:
        self.changes.humans = True
        result = await self.conn.execute(insert(t.human_messages).values(**m.model_dump(exclude={"id"})))
        assert result.inserted_primary_key is not None
        return m.model_copy(update={"id": result.inserted_primary_key[0]})

    async def human_messages(self, discussion_id: str) -> list[HumanMessage]:
        rows = (await self.conn.execute(_HUMANS, {"id": discussion_id})).all()
        return [HumanMessage.model_validate(_row(r)) for r in rows]

    async def mark_answered(self, message_id: int) -> None:
        self.changes.humans = True
        await self.conn.execute(
            update(t.human_messages).where(t.human_messages.c.id == message_id).values(answered=True)
        )

    # polls ---------------------------------------------------------------------------------------
    async def add_poll(self, poll: Poll) -> Poll | None:
        """The poll as stored, or None when one with its key is stored already (one statement either way)."""
        stmt = self.insert(t.polls).values(**poll.model_dump(exclude={"id"}))
        poll_id = (await self.conn.execute(stmt.on_conflict_do_nothing(index_elements=["key"])
                                           .returning(t.polls.c.id))).scalar()
        return poll.model_copy(update={"id": poll_id}) if poll_id is not None else None

    async def set_poll_ref(self, poll_id: int, ref: str) -> None:
        """Where the platform shows the poll (the message its later tallies edit)."""
        await self.conn.execute(update(t.polls).where(t.polls.c.id == poll_id).values(message_ref=ref))

    async def round_ballots(self, discussion_id: str, round_: int | None = None) -> list[tuple[Poll, list[Ballot]]]:
        """The polls of a round (None: of every round), each with its live ballots, in one statement."""
        p, b = t.polls.c, t.ballots.c
        query = (select(t.polls, *(col.label(f"ballot_{col.name}") for col in t.ballots.c))
                 .outerjoin(t.ballots, and_(b.poll_id == p.id, b.superseded.is_(False)))
                 .where(p.discussion_id == discussion_id).order_by(p.id, b.id))
        if round_ is not None:
            query = query.where(p.round == round_)
        found: dict[int, tuple[Poll, list[Ballot]]] = {}
        for row in (await self.conn.execute(query)).all():
            values = _row(row)
            ballot = {k.removeprefix("ballot_"): values.pop(k) for k in list(values) if k.startswith("ballot_")}
            entry = found.get(values["id"])
            if entry is None:
                entry = found[values["id"]] = (Poll.model_validate(values), [])
            if ballot["id"] is not None:
                entry[1].append(Ballot.model_validate(ballot))
        return list(found.values())

    async def poll(self, poll_id: int, *, for_update: bool = False) -> Poll | None:
        """`for_update` locks the row (PostgreSQL) so a vote and the poll's closing happen one after the other."""
        query = select(t.polls).where(t.polls.c.id == poll_id)
        if for_update and self.conn.dialect.name == "postgresql":
            query = query.with_for_update()
        row = (await self.conn.execute(query)).first()
        return Poll.model_validate(_row(row)) if row else None

    async def polls(self, discussion_id: str) -> list[Poll]:
        query = select(t.polls).where(t.polls.c.discussion_id == discussion_id).order_by(t.polls.c.id)
        return [Poll.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def poll_deadlines(self, platforms: list[str]) -> list[tuple[int, datetime]]:
        """The open polls with a deadline in discussions on these platforms: (poll id, when it closes)."""
        p, d = t.polls.c, t.discussions.c
        query = (select(p.id, p.closes_at).join(t.discussions, d.id == p.discussion_id)
                 .where(p.closed.is_(False), p.closes_at.is_not(None), d.platform.in_(platforms)).order_by(p.id))
        return [(int(r["id"]), r["closes_at"]) for r in map(_row, (await self.conn.execute(query)).all())]

    async def poll_reminders(self, platforms: list[str]) -> list[tuple[int, datetime]]:
        """The open polls with a deadline whose reminder is not claimed yet, on these platforms: (id, closes_at)."""
        p, d = t.polls.c, t.discussions.c
        query = (select(p.id, p.closes_at).join(t.discussions, d.id == p.discussion_id)
                 .where(p.closed.is_(False), p.closes_at.is_not(None), p.reminded_at.is_(None),
                        d.platform.in_(platforms)).order_by(p.id))
        return [(int(r["id"]), r["closes_at"]) for r in map(_row, (await self.conn.execute(query)).all())]

    async def claim_reminder(self, poll_id: int, now: datetime) -> bool:
        """Mark the poll reminded; False when another firing (a replica, a retry) marked it first."""
        done = await self.conn.execute(update(t.polls).where(t.polls.c.id == poll_id, t.polls.c.reminded_at.is_(None))
                                       .values(reminded_at=now))
        return bool(done.rowcount)

    async def save_poll(self, poll: Poll) -> None:
        await self.conn.execute(
            update(t.polls).where(t.polls.c.id == poll.id).values(**poll.model_dump(exclude={"id"}))
        )

    async def cast(self, ballot: Ballot) -> None:
        """One live ballot per voter: a new choice supersedes the old one, which stays for the record."""
        c = t.ballots.c
        await self.conn.execute(
            update(t.ballots)
            .where(c.poll_id == ballot.poll_id, c.voter_id == ballot.voter_id, c.superseded.is_(False))
            .values(superseded=True)
        )
        # Two first clicks racing both find nothing to supersede; the partial unique index on live ballots makes
        # the later one wait for the earlier and then take its place instead of adding a second live ballot.
        stmt = self.insert(t.ballots).values(**ballot.model_dump())
        await self.conn.execute(stmt.on_conflict_do_update(
            index_elements=[c.poll_id, c.voter_id], index_where=text("NOT superseded"),  # the index's own predicate
            set_={"choice": stmt.excluded.choice, "voter_name": stmt.excluded.voter_name,
                  "created_at": stmt.excluded.created_at},
        ))

    async def add_ballots(self, ballots: list[Ballot]) -> None:
        if ballots:
            await self.conn.execute(insert(t.ballots), [b.model_dump() for b in ballots])

    async def ballots(self, poll_id: int, *, include_superseded: bool = False) -> list[Ballot]:
        query = select(t.ballots).where(t.ballots.c.poll_id == poll_id).order_by(t.ballots.c.id)
        if not include_superseded:
            query = query.where(t.ballots.c.superseded.is_(False))
        return [Ballot.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    # syntheses and usage -------------------------------------------------------------------------
    async def add_synthesis(
        self, turn_key: str, discussion_id: str, round_: int, kind: str, data: dict[str, Any] | None,
        text: str, now: datetime,
    ) -> None:
        """Written once per turn key: a second writer, even a concurrent one, changes nothing."""
        await self.conn.execute(
            self.insert(t.syntheses)
            .values(turn_key=turn_key, discussion_id=discussion_id, round=round_, kind=kind, data=data, text=text,
                    created_at=now)
            .on_conflict_do_nothing(index_elements=["turn_key"])
        )

    async def set_synthesis(self, turn_key: str, data: dict[str, Any] | None, text: str) -> None:
        """A synthesis whose verdict people's votes changed: the page and the export read it as posted."""
        await self.conn.execute(update(t.syntheses).where(t.syntheses.c.turn_key == turn_key)
                                .values(data=data, text=text))

    async def syntheses(
        self, discussion_id: str | None = None, *, since: datetime | None = None
    ) -> list[dict[str, Any]]:
        query = select(t.syntheses).order_by(t.syntheses.c.id)
        if discussion_id is not None:
            query = query.where(t.syntheses.c.discussion_id == discussion_id)
        if since is not None:
            query = query.where(t.syntheses.c.created_at >= since)
        return [_row(r) for r in (await self.conn.execute(query)).all()]

    async def add_usage(self, discussion_id: str | None, turn_key: str, u: Usage, now: datetime, *,
                        workspace: tuple[str, str] | None = None) -> None:
        """Record a model call; its cost goes to its discussion and to its workspace's day (a call of no
        discussion, such as a digest's, to the `workspace` given as (platform, workspace))."""
        row = self._usage_row(discussion_id, turn_key, u, now)
        if discussion_id:
            await self.conn.execute(_ADD_COST, {"b_id": discussion_id, "b_usd": u.cost_usd})
            await add_spend(self.conn, discussion_id, now, u.cost_usd, usage=row)
        else:
            await self.conn.execute(_ADD_USAGE, row)
        if workspace is not None:
            await add_workspace_spend(self.conn, *workspace, now, u.cost_usd)

    @staticmethod
    def _usage_row(discussion_id: str | None, turn_key: str, u: Usage, now: datetime) -> dict[str, Any]:
        """The model call's usage row, written with its spend (see `add_spend`)."""
        return {"discussion_id": discussion_id, "turn_key": turn_key, "created_at": now, **u.model_dump()}

    async def settle_turn(self, discussion_id: str, turn_key: str, held: tuple[float, datetime | None],
                          usage: Usage | None, now: datetime, *, saved: bool = False, charged: bool = False) -> None:
        """A turn ended: what it held (read with it, see `held_turn`) gives way to what it cost; `usage`, if
        any, is recorded and charged to the discussion (`charged`: this transaction's fence added its cost to the
        discussion's already). `saved`: the caller saves the turn, ended, in this transaction (that write clears
        the hold on its row)."""
        row = None
        if usage is not None:
            row = self._usage_row(discussion_id, turn_key, usage, now)
            if not charged:
                await self.conn.execute(_ADD_COST, {"b_id": discussion_id, "b_usd": usage.cost_usd})
        await settle(self.conn, discussion_id, turn_key, held, usage.cost_usd if usage is not None else None, now,
                     saved=saved, usage=row)

    async def workspace_spend(self, platform: str, workspace: str, since: datetime) -> float:
        """Dollars the workspace's discussions spent since `since` (their turns and answers), to the quarter hour
        (exact from a midnight in any time zone): a sum over at most 96 rows a day, however busy the day was."""
        params = {"platform": platform, "workspace": workspace, "since": since}
        return float((await self.conn.execute(_WORKSPACE_SPEND, params)).scalar_one())

    async def hold_workspace_spend(self, platform: str, workspace: str, at: datetime, usd: float) -> None:
        """Hold (or, negative, give back) dollars in a workspace's spend of the quarter hour `at` falls in: a call
        of no discussion (a digest's) reserves its worst case so, and gives it back in the same quarter hour."""
        await add_workspace_spend(self.conn, platform, workspace, at, usd)

    async def process_spend(self, since: datetime) -> float:
        """Dollars every workspace spent since `since` (reservations of running turns included), to the quarter
        hour: the whole process's day, read on the index by time."""
        return float((await self.conn.execute(_PROCESS_SPEND, {"since": since})).scalar_one())

    async def prune_spend(self, before: datetime) -> int:
        """Forget quarter hours older than any window that is read (the day, the last 30 days)."""
        return (await self.conn.execute(delete(t.spend).where(_s.starts_at < before))).rowcount

    async def usage_total(
        self, discussion_ids: list[str] | None = None, *, since: datetime | None = None,
        until: datetime | None = None,
    ) -> Usage:
        c = t.usage.c
        query = select(
            func.coalesce(func.sum(c.input_tokens), 0),
            func.coalesce(func.sum(c.output_tokens), 0),
            func.coalesce(func.sum(c.cache_write_tokens), 0),
            func.coalesce(func.sum(c.cache_read_tokens), 0),
            func.coalesce(func.sum(c.cost_usd), 0.0),
        )
        if discussion_ids is not None:
            query = query.where(c.discussion_id.in_(discussion_ids))
        if since is not None:
            query = query.where(c.created_at >= since)
        if until is not None:
            query = query.where(c.created_at < until)
        row = (await self.conn.execute(query)).one()
        return Usage(
            input_tokens=row[0], output_tokens=row[1], cache_write_tokens=row[2],
            cache_read_tokens=row[3], cost_usd=float(row[4]),
        )
