"""Discussions, their leases, personas, turns and outbox: what the driver reads and writes."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, bindparam, case, delete, exists, func, insert, or_, select, update

from core.models import (
    FINISHED_TURN,
    Discussion,
    Persona,
    Phase,
    Post,
    Status,
    Turn,
    TurnStatus,
)
from core.storage import tables as t
from core.storage.reservations import release, reserve
from core.storage.rows import Repo, _row, aware, insert_in

# The statements a driver runs at every step, built once: building one costs about as much as running it
# (measured: 124 µs for a discussion read built each time, 70 µs prebuilt).
_d, _t, _o = t.discussions.c, t.turns.c, t.outbox.c
_DISCUSSION = select(t.discussions).where(_d.id == bindparam("id"))
_UNSENT = (_o.discussion_id == _d.id, _o.sent.is_(False), _o.dead.is_(False))
# The lease checked, and whether posts are queued, in the one statement that reads the discussion.
_LEASED = (select(t.discussions, exists().where(*_UNSENT).label("queued"))
           .where(_d.id == bindparam("id"), _d.lease_owner == bindparam("owner"),
                  _d.lease_expires_at > bindparam("now")))
_BUMP = update(t.discussions).where(_d.id == bindparam("b_id")).values(revision=_d.revision + 1).returning(
    *t.discussions.c)
# The fence of a transaction that records a turn: the call's cost added in the statement that checks the lease, on
# the revision the driver's kept state was read at (no row: the lease is gone, or something else changed the
# discussion; the plain fence then says which).
# The fence of a step on SQLite, with what the discussion's workspace spent since a moment (the day's start): SQLite
# writes one transaction at a time, so the sum holds until the step's reservation (PostgreSQL locks, then sums).
_SPENT = (select(func.coalesce(func.sum(t.spend.c.cost_usd), 0.0))
          .where(t.spend.c.platform == _d.platform, t.spend.c.workspace == _d.workspace,
                 t.spend.c.starts_at >= bindparam("since")).scalar_subquery().label("spent"))
_LEASED_SPENT = _LEASED.add_columns(_SPENT)
_LEASED_CHARGED = (update(t.discussions).where(
    _d.id == bindparam("b_id"), _d.lease_owner == bindparam("b_owner"), _d.lease_expires_at > bindparam("b_now"),
    _d.revision == bindparam("b_revision"))
    .values(cost_usd=_d.cost_usd + bindparam("b_usd"),
            costliest_call_usd=case((_d.costliest_call_usd < bindparam("b_usd"), bindparam("b_usd")),
                                    else_=_d.costliest_call_usd))
    # The queue asked by the id bound, not by the row's: SQLite names RETURNING's columns bare, so a correlated
    # `outbox.discussion_id = discussions.id` read as the outbox row's own id (never queued, after a full scan).
    .returning(*t.discussions.c, exists().where(_o.discussion_id == bindparam("b_id"), *_UNSENT[1:]).label("queued")))
_PERSONAS = select(t.personas.c.data).where(t.personas.c.discussion_id == bindparam("id")).order_by(
    t.personas.c.position)
# A finished turn whose post went out reads as published: the outbox's sent flag says so, and only it, so sending
# a turn's post writes one row, not two.
_SHOWN = exists().where(_o.turn_key == _t.key, _o.sent.is_(True))
_TURN_ROW = [case((and_(_t.status == TurnStatus.DONE.value, _SHOWN), TurnStatus.PUBLISHED.value), else_=_t.status)
             .label("status") if c.name == "status" else c for c in t.turns.c]
_TURNS = select(*_TURN_ROW).where(_t.discussion_id == bindparam("id")).order_by(_t.created_at, _t.key)
_TURN = select(*_TURN_ROW).where(_t.key == bindparam("key"))
# A turn inserted unless its key is stored already (a turn started again): the keys inserted come back.
_INSERT_TURNS = {name: insert_in(name, t.turns).on_conflict_do_nothing(index_elements=["key"]).returning(_t.key)
                 for name in ("postgresql", "sqlite")}
_SAVE_TURN = update(t.turns).where(_t.key == bindparam("b_key"))
_QUEUE = (select(_o.id, _o.payload, _o.turn_key, _o.attempts, _o.next_attempt_at)
          .where(_o.discussion_id == bindparam("id"), _o.sent.is_(False), _o.dead.is_(False)).order_by(_o.id))
_CLAIM = (update(t.outbox).where(_o.id == bindparam("b_id"), _o.discussion_id == bindparam("b_discussion"),
                                 _o.attempts == bindparam("b_seen"), _o.sent.is_(False))
          .values(attempts=_o.attempts + 1))
# A claim that checks the lease in the same statement: no row is claimed once the lease is gone.
_CLAIM_LEASED = _CLAIM.where(exists().where(_d.id == bindparam("b_discussion"), _d.lease_owner == bindparam("b_owner"),
                                            _d.lease_expires_at > bindparam("b_now")))
_SENT = update(t.outbox).where(_o.id == bindparam("b_id")).values(
    sent=True, ref=bindparam("b_ref"), sent_at=bindparam("b_now"))
# A post marked sent and the next one claimed (as _CLAIM_LEASED would) in one statement: the rows it returns say
# whether the claim held (the sent row always does).
_IS_SENT, _IS_NEXT = _o.id == bindparam("b_id"), _o.id == bindparam("b_next")
_SENT_CLAIMING = (update(t.outbox).where(or_(_IS_SENT, and_(
    _IS_NEXT, _o.discussion_id == bindparam("b_discussion"), _o.attempts == bindparam("b_seen"), _o.sent.is_(False),
    exists().where(_d.id == bindparam("b_discussion"), _d.lease_owner == bindparam("b_owner"),
                   _d.lease_expires_at > bindparam("b_now")))))
    .values(sent=case((_IS_SENT, True), else_=_o.sent), ref=case((_IS_SENT, bindparam("b_ref")), else_=_o.ref),
            sent_at=case((_IS_SENT, bindparam("b_now")), else_=_o.sent_at),
            attempts=case((_IS_NEXT, _o.attempts + 1), else_=_o.attempts))
    .returning(_o.id))

Unsent = list[tuple[int, Post, str | None, int]]  # queued posts in order: outbox id, post, turn key, earlier attempts
Queue = tuple[Unsent, datetime | None]  # and when the first may be tried again (None: now)

_ENQUEUE = {name: insert_in(name, t.outbox).on_conflict_do_nothing(index_elements=["key"]).returning(_o.id)
            for name in ("postgresql", "sqlite")}


def _locked(query: Any, dialect: str) -> Any:
    """The row lock PostgreSQL needs for a read-then-write; SQLite's write transactions run one at a time."""
    return query.with_for_update() if dialect == "postgresql" else query


class DiscussionRepo(Repo):
    queued_at_fence: bool | None = None  # whether the fence saw posts queued (None: no fence read)
    revision_at_fence: int | None = None  # the discussion's revision as the fence read it (see tables.discussions)
    fenced_id: str | None = None  # the discussion whose lease this transaction checked
    # Set by a driver that sends what this transaction queues as it commits: the first post queued after a fence
    # that saw none is claimed as it is inserted (its id kept here), not by an update after it.
    claim_first: bool = False
    claimed_at_insert: int | None = None
    charged_at_fence = False  # the fence added the model call's cost to the discussion's (see `fence`)
    spent_at_fence: tuple[datetime, float] | None = None  # since when, and what the workspace spent (see `fence`)

    # discussions ---------------------------------------------------------------------------------
    async def add_discussion(self, d: Discussion) -> None:
        # Options hold recalled decision records, with their dates: JSON columns take them as JSON text.
        await self.conn.execute(insert(t.discussions).values(
            **d.model_dump() | {"options": d.options.model_dump(mode="json")}))

    async def discussion(self, discussion_id: str, *, for_update: bool = False) -> Discussion | None:
        """`for_update` locks the row (PostgreSQL) when the caller will save it: no lost updates between replicas.
        SQLite needs no lock: its write transactions already run one at a time. Without the discussion's lease
        (checked in this transaction), it also counts up its revision in the same statement: whatever the caller
        changes, the driver that holds the lease reads the state again."""
        if for_update and discussion_id != self.fenced_id:
            row = (await self.conn.execute(_BUMP, {"b_id": discussion_id})).first()
        else:
            query = _locked(_DISCUSSION, self.conn.dialect.name) if for_update else _DISCUSSION
            row = (await self.conn.execute(query, {"id": discussion_id})).first()
        return Discussion.model_validate(_row(row)) if row else None

    async def save_discussion(self, d: Discussion, now: datetime) -> None:
        d.updated_at = now
        # The costs only ever change by add_usage's increment; a saved copy must not write back older figures.
        values = d.model_dump(exclude={"id", "created_at", "cost_usd", "costliest_call_usd"}) | {
            "options": d.options.model_dump(mode="json")}
        await self.conn.execute(update(t.discussions).where(t.discussions.c.id == d.id).values(**values))

    async def discussions(
        self, *, channel: str | None = None, since: datetime | None = None, limit: int = 200,
        platform: str | None = None, workspace: str | None = None,
    ) -> list[Discussion]:
        query = select(t.discussions).order_by(t.discussions.c.created_at.desc()).limit(limit)
        if channel is not None:
            query = query.where(t.discussions.c.channel == channel)
        if platform is not None:
            query = query.where(t.discussions.c.platform == platform)
        if workspace is not None:
            query = query.where(t.discussions.c.workspace == workspace)
        if since is not None:
            query = query.where(t.discussions.c.updated_at >= since)
        return [Discussion.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def starts_since(self, platform: str, workspace: str, user_id: str, since: datetime) -> int:
        """How many discussions this person started in the workspace since `since` (the start rate limit)."""
        c = t.discussions.c
        query = select(func.count()).select_from(t.discussions).where(
            c.platform == platform, c.workspace == workspace, c.created_by == user_id, c.created_at >= since)
        return int((await self.conn.execute(query)).scalar_one())

    async def costliest(self, platform: str, workspace: str, since: datetime, limit: int = 5) -> list[Discussion]:
        """The workspace's discussions active since `since`, the most expensive first (admins' usage view)."""
        c = t.discussions.c
        query = (select(t.discussions).where(c.platform == platform, c.workspace == workspace, c.updated_at >= since)
                 .order_by(c.cost_usd.desc()).limit(limit))
        return [Discussion.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def discussion_by_thread(self, platform: str, channel: str, thread_ref: str) -> Discussion | None:
        """The discussion whose thread this is (a human reply arrives with the thread's ref)."""
        c = t.discussions.c
        row = (
            await self.conn.execute(
                select(t.discussions)
                .where(c.platform == platform, c.channel == channel, c.thread_ref == thread_ref)
                .order_by(c.created_at.desc())
                .limit(1)
            )
        ).first()
        return Discussion.model_validate(_row(row)) if row else None

    async def latest_discussion_id(self) -> str | None:
        query = select(t.discussions.c.id).order_by(t.discussions.c.created_at.desc()).limit(1)
        return (await self.conn.execute(query)).scalar()

    # leases --------------------------------------------------------------------------------------
    async def acquire_lease(self, discussion_id: str, owner: str, now: datetime, ttl: float) -> bool:
        """Take or renew the driver lease; only one owner holds an unexpired lease."""
        c = t.discussions.c
        result = await self.conn.execute(
            update(t.discussions)
            .where(
                c.id == discussion_id,
                or_(c.lease_owner.is_(None), c.lease_owner == owner, c.lease_expires_at < now),
            )
            .values(lease_owner=owner, lease_expires_at=now + timedelta(seconds=ttl))
        )
        return result.rowcount == 1

    async def renew_leases(self, discussion_ids: list[str], owner: str, now: datetime, ttl: float) -> set[str]:
        """Extend every lease `owner` still holds among these, in one statement; the ones extended."""
        c = t.discussions.c
        result = await self.conn.execute(
            update(t.discussions)
            .where(c.id.in_(discussion_ids), c.lease_owner == owner)
            .values(lease_expires_at=now + timedelta(seconds=ttl))
            .returning(c.id)
        )
        return set(result.scalars())

    async def release_lease(self, discussion_id: str, owner: str) -> None:
        c = t.discussions.c
        await self.conn.execute(
            update(t.discussions)
            .where(c.id == discussion_id, c.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )

    async def fence(self, discussion_id: str, owner: str, now: datetime, *,
                    charge: tuple[float, int] | None = None, spent_since: datetime | None = None,
                    spend_key: tuple[str, str] | None = None) -> Discussion | None:
        """The discussion as it is now if `owner` still holds an unexpired lease on it, else None; the lease stays
        held until this transaction ends.

        The read locks the row (FOR UPDATE on PostgreSQL; SQLite writes one transaction at a time anyway), so a
        takeover by another process waits for our commit and can never interleave with the writes we fence.

        `charge`: a model call's cost and the revision the caller's copy of the state was read at; when the
        discussion is still at that revision the cost is added to the discussion's in the same statement
        (`charged_at_fence`), else the discussion is read as without it. `spent_since`: what the discussion's
        workspace spent since then is read in the same statement (`spent_at_fence`): on SQLite, and on PostgreSQL
        when the caller knows the workspace (`spend_key`: platform, workspace), whose spend it locks first."""
        row = None
        postgres = self.conn.dialect.name == "postgresql"
        if spent_since is not None and (spend_key is not None or not postgres):
            if spend_key is not None:  # PostgreSQL: the workspace's spend locked first, so the sum holds
                await self.serialize("spend", *spend_key)
            params = {"id": discussion_id, "owner": owner, "now": now, "since": spent_since}
            row = (await self.conn.execute(_locked(_LEASED_SPENT, self.conn.dialect.name), params)).first()
            if row is None:
                return None
            values = _row(row)
            spent = float(values.pop("spent"))
            if not postgres or (values["platform"], values["workspace"]) == spend_key:
                self.spent_at_fence = (spent_since, spent)
            return self._fenced(discussion_id, values)
        if charge is not None:
            params = {"b_id": discussion_id, "b_owner": owner, "b_now": now, "b_usd": charge[0],
                      "b_revision": charge[1]}
            row = (await self.conn.execute(_LEASED_CHARGED, params)).first()
            self.charged_at_fence = row is not None
        if row is None:
            query = _locked(_LEASED, self.conn.dialect.name)
            row = (await self.conn.execute(query, {"id": discussion_id, "owner": owner, "now": now})).first()
        if row is None:
            return None
        return self._fenced(discussion_id, _row(row))

    def _fenced(self, discussion_id: str, values: dict[str, Any]) -> Discussion:
        """The discussion a fence read, and what it saw beside it."""
        self.queued_at_fence = bool(values.pop("queued"))
        self.revision_at_fence = int(values.pop("revision"))
        self.enqueued = [] if not self.queued_at_fence else None
        self.fenced_id = discussion_id
        return Discussion.model_validate(values)

    def queued_here(self) -> Unsent | None:
        """The discussion's queue when it is only what this transaction queued after a fence that saw none (None:
        unknown, read it). Any other change to the outbox in this transaction makes it unknown."""
        return list(self.enqueued) if self.enqueued is not None else None

    async def lease_owner(self, discussion_id: str) -> tuple[str | None, datetime | None]:
        c = t.discussions.c
        row = (
            await self.conn.execute(
                select(c.lease_owner, c.lease_expires_at).where(c.id == discussion_id)
            )
        ).first()
        return (row[0], aware(row[1])) if row else (None, None)

    async def claim_stale(
        self, owner: str, now: datetime, ttl: float, platforms: list[str], limit: int = 10
    ) -> list[str]:
        """Discussions of these platforms with work and no live driver, leased to `owner` (SKIP LOCKED on
        PostgreSQL); a process never claims a discussion it has no chat for."""
        c = t.discussions.c
        o = t.outbox.c
        # Posts due now. Posts leave in order, so a post waiting out its backoff holds back the ones queued
        # behind it (a notice, a header redraw): they wake nobody until it is due; dead posts wake nobody.
        unsent = (o.discussion_id == c.id, o.sent.is_(False), o.dead.is_(False))
        pending_outbox = and_(
            select(o.id).where(*unsent).exists(),
            ~select(o.id).where(*unsent, o.next_attempt_at > now).exists(),
        )
        unanswered = (
            select(t.human_messages.c.id)
            .where(
                t.human_messages.c.discussion_id == c.id,
                t.human_messages.c.needs_answer.is_(True),
                t.human_messages.c.answered.is_(False),
            )
            .exists()
        )
        # A check someone asked for on one post ("Check claims") runs whatever the discussion is doing.
        asked_check = (
            select(t.turns.c.key)
            .where(
                t.turns.c.discussion_id == c.id,
                t.turns.c.phase == Phase.FACT_CHECK.value,
                t.turns.c.status.in_([TurnStatus.PLANNED.value, TurnStatus.RUNNING.value]),
                t.turns.c.key.like("%:check:%"),
            )
            .exists()
        )
        query = (
            select(c.id)
            .where(
                c.platform.in_(platforms),
                or_(c.lease_owner.is_(None), c.lease_expires_at < now),
                or_(c.status == Status.RUNNING.value, pending_outbox, and_(c.status == "waiting", unanswered),
                    and_(c.status != Status.STOPPED.value, asked_check)),
            )
            .order_by(c.updated_at)
            .limit(limit)
        )
        if self.conn.dialect.name == "postgresql":
            query = query.with_for_update(skip_locked=True, of=t.discussions)
        ids = list((await self.conn.execute(query)).scalars())
        return [i for i in ids if await self.acquire_lease(i, owner, now, ttl)]

    # personas ------------------------------------------------------------------------------------
    async def set_personas(self, discussion_id: str, personas: list[Persona]) -> None:
        self.changes.personas = True
        await self.conn.execute(delete(t.personas).where(t.personas.c.discussion_id == discussion_id))
        if personas:
            # Two writers racing on one roster: the later waits on the earlier's rows and keeps them.
            await self.conn.execute(
                self.insert(t.personas).on_conflict_do_nothing(index_elements=["discussion_id", "key"]),
                [
                    {"discussion_id": discussion_id, "key": p.key, "position": i, "data": p.model_dump()}
                    for i, p in enumerate(personas)
                ],
            )

    async def update_persona(self, discussion_id: str, persona: Persona) -> None:
        """Rewrite one persona in place (its key and position stay): parallel turns may each seat their own."""
        self.changes.personas = True
        c = t.personas.c
        await self.conn.execute(
            update(t.personas).where(c.discussion_id == discussion_id, c.key == persona.key)
            .values(data=persona.model_dump())
        )

    async def personas(self, discussion_id: str) -> list[Persona]:
        rows = (await self.conn.execute(_PERSONAS, {"id": discussion_id})).scalars()
        return [Persona.model_validate(r) for r in rows]

    # turns ---------------------------------------------------------------------------------------
    async def turns(self, discussion_id: str) -> list[Turn]:
        return [Turn.model_validate(_row(r)) for r in (await self.conn.execute(_TURNS, {"id": discussion_id})).all()]

    async def turns_changing(self, discussion_id: str, since_round: int, keys: list[str]) -> list[Turn]:
        """The discussion's turns that may have changed since a driver read them: those of `since_round` and later,
        those not finished (any round), and `keys` (the ones the driver last saw unfinished)."""
        query = select(*_TURN_ROW).where(_t.discussion_id == discussion_id, or_(
            _t.round >= since_round, _t.status.not_in([s.value for s in FINISHED_TURN]),
            *([_t.key.in_(keys)] if keys else [])))
        return [Turn.model_validate(_row(r)) for r in (await self.conn.execute(query)).all()]

    async def turns_by_keys(self, discussion_id: str, keys: list[str]) -> list[Turn]:
        """These of the discussion's turns (a key of another discussion's turn is left out)."""
        query = select(*_TURN_ROW).where(_t.discussion_id == discussion_id, _t.key.in_(keys))
        rows = (await self.conn.execute(query)).all()
        return [Turn.model_validate(_row(r)) for r in rows]

    async def turn(self, key: str, *, for_update: bool = False) -> Turn | None:
        """`for_update` locks the row (PostgreSQL): a second writer waits, then reads what the first committed."""
        query = _locked(_TURN, self.conn.dialect.name) if for_update else _TURN
        row = (await self.conn.execute(query, {"key": key})).first()
        return Turn.model_validate(_row(row)) if row else None

    async def held_turn(self, key: str) -> tuple[Turn, tuple[float, datetime | None]] | None:
        """A turn about to be finished, its row locked (see `turn`), with what it holds in its workspace's spend
        (dollars, since when)."""
        row = (await self.conn.execute(_locked(_TURN, self.conn.dialect.name), {"key": key})).first()
        if row is None:
            return None
        return Turn.model_validate(_row(row)), (float(row.reserved_usd or 0.0), row.reserved_at)

    async def start_turns(self, planned: list[Turn], *, hold: tuple[float, datetime] | None = None) -> set[str]:
        """Mark a step's turns running and count an attempt, inserting the ones not stored yet; the keys inserted.
        `hold`: dollars each turn holds in its workspace's spend while it runs, and since when (see `reserve`);
        a turn inserted here is written holding it.

        A key already stored is left as it is by the insert and updated after it: one statement for a step of new
        turns, two when some start again, and one more for the hold.
        """
        if not planned:
            return set()
        c = t.turns.c
        keys = [p.key for p in planned]
        held = {"reserved_usd": hold[0], "reserved_at": hold[1]} if hold is not None and hold[0] > 0 else {}
        rows = [p.model_copy(update={"status": TurnStatus.RUNNING, "attempts": 1}).model_dump() | held
                for p in planned]
        fresh = set((await self.conn.execute(_INSERT_TURNS[self.conn.dialect.name], rows)).scalars())
        stored = set(keys) - fresh
        for p in planned:
            if p.key in fresh:  # the row is what was inserted
                self.changes.save(p.model_copy(update={"status": TurnStatus.RUNNING, "attempts": 1}),
                                  (hold[0], hold[1]) if hold is not None and held else (0.0, None))
        self.changes.touch(stored)
        if stored:
            await self.conn.execute(
                update(t.turns)
                .where(c.key.in_(sorted(stored)))
                .values(status=TurnStatus.RUNNING.value, attempts=c.attempts + 1)
            )
        if hold is not None:
            await reserve(self.conn, planned[0].discussion_id, keys, *hold, fresh=fresh)
        return fresh

    async def save_turn(self, turn: Turn) -> None:
        """Save a turn; one that has ended holds nothing in its workspace's spend any more, so its hold is cleared
        in the same write (what it held was settled in the transaction that ended it)."""
        self.changes.save(turn)
        values = turn.model_dump(exclude={"key"})
        if turn.status not in (TurnStatus.PLANNED, TurnStatus.RUNNING):
            values |= {"reserved_usd": 0.0, "reserved_at": None}
        await self.conn.execute(_SAVE_TURN, {"b_key": turn.key, **values})

    async def set_turn_status(self, keys: list[str], status: TurnStatus, *, reset: bool = False) -> None:
        self.changes.touch(keys)
        await release(self.conn, keys)  # set aside or planned again: no longer running, no longer holding money
        values: dict[str, Any] = {"status": status.value}
        if reset:
            values |= {"attempts": 0, "error": ""}
        await self.conn.execute(update(t.turns).where(t.turns.c.key.in_(keys)).values(**values))

    # outbox --------------------------------------------------------------------------------------
    async def enqueue(self, discussion_id: str, post: Post, now: datetime, turn_key: str | None = None) -> bool:
        """Queue a post once per key; False if that key was already queued (one statement either way)."""
        values: dict[str, Any] = {"key": post.key, "discussion_id": discussion_id,
                                  "payload": post.model_dump(mode="json"), "turn_key": turn_key, "created_at": now}
        claim = self.claim_first and self.enqueued == [] and discussion_id == self.fenced_id
        if claim:
            values["attempts"] = 1
        outbox_id = (await self.conn.execute(_ENQUEUE[self.conn.dialect.name], values)).scalar()
        if outbox_id is None:
            return False
        if claim:
            self.claimed_at_insert = outbox_id
        if self.enqueued is not None and discussion_id == self.fenced_id:
            self.enqueued.append((outbox_id, post, turn_key, 0))
        return True

    async def pending_posts(self, discussion_id: str) -> Unsent:
        """Unsent posts in order: (outbox id, post, turn key, earlier attempts)."""
        return (await self.queue(discussion_id))[0]

    async def queue(self, discussion_id: str) -> Queue:
        """Unsent posts in order, and when the first may be tried again (None: now), in one statement."""
        rows = (await self.conn.execute(_QUEUE, {"id": discussion_id})).all()
        return [(r[0], Post.model_validate(r[1]), r[2], r[3]) for r in rows], aware(rows[0][4]) if rows else None

    async def claim_send(
        self, outbox_id: int, seen_attempts: int, owner: str, now: datetime, discussion_id: str | None = None,
        *, fenced: bool = False,
    ) -> bool:
        """Count an attempt at sending this row, if nobody else has since we read it and we still hold the
        discussion's lease: two drains (or a driver whose lease expired) never both send one post. `fenced`: this
        transaction has already checked (and locked) the lease."""
        self.outbox_changed()
        o = t.outbox.c
        if discussion_id is None:  # the caller usually knows it: one statement fewer per post
            discussion_id = (await self.conn.execute(select(o.discussion_id).where(o.id == outbox_id))).scalar()
        if discussion_id is None:
            return False
        params = {"b_id": outbox_id, "b_discussion": discussion_id, "b_seen": seen_attempts}
        if fenced:
            return (await self.conn.execute(_CLAIM, params)).rowcount == 1
        params |= {"b_owner": owner, "b_now": now}
        return (await self.conn.execute(_CLAIM_LEASED, params)).rowcount == 1

    async def last_sent_ref(self, discussion_id: str) -> str:
        """The newest platform ref among the discussion's sent messages (Slack ts: same width, so text order); a
        living document (a canvas) is not a message in the thread, so its ref is left out."""
        o = t.outbox.c
        query = select(func.max(o.ref)).where(o.discussion_id == discussion_id, o.sent.is_(True), o.ref != "",
                                               o.payload["kind"].as_string() != "document")
        return str((await self.conn.execute(query)).scalar() or "")

    async def defer_post(self, outbox_id: int, until: datetime, error: str, *, forget_attempt: bool = False) -> None:
        """Try the post again from `until`; `forget_attempt`: the platform only asked to slow down, so the attempt
        claimed for it does not count toward blocking (nor make the next one look it up)."""
        self.outbox_changed()
        o = t.outbox.c
        values: dict[str, object] = {"next_attempt_at": until, "last_error": error[:300]}
        if forget_attempt:
            values["attempts"] = o.attempts - 1
        await self.conn.execute(update(t.outbox).where(o.id == outbox_id).values(**values))

    async def bury_posts(self, discussion_id: str, error: str) -> None:
        """The platform will never take these posts (channel archived, bot removed): stop trying until Retry."""
        self.outbox_changed()
        o = t.outbox.c
        await self.conn.execute(update(t.outbox).where(o.discussion_id == discussion_id, o.sent.is_(False))
                                .values(dead=True, last_error=error[:300]))

    async def revive_posts(self, discussion_id: str) -> None:
        """Retry: every queued post is tried again at once."""
        self.outbox_changed()
        o = t.outbox.c
        await self.conn.execute(update(t.outbox).where(o.discussion_id == discussion_id, o.sent.is_(False))
                                .values(dead=False, next_attempt_at=None))

    async def mark_sent(self, outbox_id: int, ref: str, now: datetime, turn_key: str | None) -> None:
        self.outbox_changed()
        await self.conn.execute(_SENT, {"b_id": outbox_id, "b_ref": ref, "b_now": now})
        if turn_key:  # its turn now reads as published (see _TURN_ROW)
            self.changes.published.add(turn_key)

    async def mark_sent_claiming(self, outbox_id: int, ref: str, now: datetime, turn_key: str | None,
                                 claim: tuple[int, int], owner: str, discussion_id: str) -> bool:
        """`mark_sent`, and the claim of the next post (`claim`: its outbox id and the attempts read with it) as
        `claim_send` makes it, in one statement; whether the claim held."""
        self.outbox_changed()
        params = {"b_id": outbox_id, "b_ref": ref, "b_now": now, "b_next": claim[0], "b_seen": claim[1],
                  "b_discussion": discussion_id, "b_owner": owner}
        rows = {row[0] for row in (await self.conn.execute(_SENT_CLAIMING, params)).all()}
        if turn_key:
            self.changes.published.add(turn_key)
        return claim[0] in rows

    async def drop_unsent(self, discussion_id: str, key_prefix: str) -> None:
        """Forget queued posts under a key prefix that no drain has tried yet (a newer one supersedes them)."""
        self.outbox_changed()
        o = t.outbox.c
        await self.conn.execute(
            delete(t.outbox).where(o.discussion_id == discussion_id, o.sent.is_(False), o.attempts == 0,
                                   o.key.startswith(key_prefix, autoescape=True))
        )

    async def note_ref(self, key: str, ref: str) -> None:
        """Keep what the platform made for a post before the rest of its sending: a retry goes on with it."""
        self.outbox_changed()
        await self.conn.execute(update(t.outbox).where(t.outbox.c.key == key).values(ref=ref))

    async def noted_ref(self, key: str) -> str:
        """The ref kept for a post, sent or not ("" when none)."""
        return str((await self.conn.execute(select(t.outbox.c.ref).where(t.outbox.c.key == key))).scalar() or "")

    async def has_post(self, key: str) -> bool:
        """Whether a post was queued under this key (sent or not)."""
        return (await self.conn.execute(select(t.outbox.c.id).where(t.outbox.c.key == key))).first() is not None

    async def post_ref(self, key: str) -> str | None:
        query = select(t.outbox.c.ref).where(t.outbox.c.key == key, t.outbox.c.sent.is_(True))
        return (await self.conn.execute(query)).scalar()

    async def posts(self, discussion_id: str) -> list[tuple[Post, str]]:
        query = (
            select(t.outbox.c.payload, t.outbox.c.ref)
            .where(t.outbox.c.discussion_id == discussion_id)
            .order_by(t.outbox.c.id)
        )
        return [(Post.model_validate(r[0]), r[1]) for r in (await self.conn.execute(query)).all()]
