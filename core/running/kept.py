"""A discussion's state as its driver last read it under its lease, read again only where it can have changed."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from core.deliberation.engine import State
from core.models import FINISHED_TURN, Discussion, HumanMessage, Persona, Turn, TurnStatus
from core.storage.changes import Changes
from core.storage.store import Tx


class KeptTurns:
    """A discussion's turns as its driver last read them under its lease. When the discussion's revision moved
    (a command, a reply, a vote changed it), a step rereads the turns that can have changed: those of the rounds
    from the last one read on, the unfinished ones and the ones last seen unfinished (a Stop or a Retry). Earlier
    rounds are settled: their polls closed when the round moved on. Otherwise it rereads only the turns its own
    writes left unknown (`stale`): its own saves are kept as written. A step late in a discussion so reads what
    one early on does."""

    def __init__(self) -> None:
        self.by_key: dict[str, Turn] | None = None  # None: nothing read yet under this lease
        self.round = 0  # the discussion's round at the last read

    async def read(self, tx: Tx, d: Discussion, stale: frozenset[str] | set[str] = frozenset(), *,
                   moved: bool = True) -> list[Turn]:
        """`moved`: anything may have changed (see the class); else only the `stale` turns."""
        if self.by_key is None:
            fresh = await tx.turns(d.id)
            self.by_key = {}
        elif moved:
            open_keys = {k for k, t in self.by_key.items() if t.status not in FINISHED_TURN}
            fresh = await tx.turns_changing(d.id, min(self.round, d.round), sorted(open_keys | stale))
        else:
            fresh = await tx.turns_by_keys(d.id, sorted(stale)) if stale else []
        for turn in fresh:
            self.by_key[turn.key] = turn
        self.round = d.round
        return sorted(self.by_key.values(), key=lambda t: (t.created_at, t.key))

    def apply(self, discussion_id: str, changes: Changes) -> None:
        """What this driver's own transaction wrote, once committed: a saved turn is the row; a sent post's turn
        is published."""
        if self.by_key is None:
            return
        for key, turn in changes.saved.items():
            if turn.discussion_id == discussion_id:
                self.by_key[key] = turn
        for key in changes.published:
            done = self.by_key.get(key)
            if done is not None and done.status == TurnStatus.DONE:
                self.by_key[key] = done.model_copy(update={"status": TurnStatus.PUBLISHED})


@dataclass(frozen=True)
class Known:
    """The discussion's turns, personas and people's messages as a transaction's fence found them unchanged since
    this driver last wrote or read them, and what each turn started here holds in its workspace's spend: what
    recording a turn would read."""

    turns: dict[str, Turn]
    held: dict[str, tuple[float, datetime | None]]
    humans: list[HumanMessage] | None  # None: not kept (read them)
    personas: list[Persona] | None  # None: not kept (read them)

    def ordered(self) -> list[Turn]:
        """The turns in the order the discussion's turns are read in."""
        return sorted(self.turns.values(), key=lambda t: (t.created_at, t.key))


class KeptState:
    """The personas, turns and people's messages of a discussion driven here, with the revision they were read
    at: a step whose fence finds the same revision rereads only what its own transactions left unknown."""

    def __init__(self) -> None:
        self.turns = KeptTurns()
        self.revision: int | None = None
        self.personas: list[Persona] | None = None
        self.humans: list[HumanMessage] | None = None
        self.stale: set[str] = set()
        self.held: dict[str, tuple[float, datetime | None]] = {}
        # This driver's transactions on the discussion now open: one that commits wakes another, which may run
        # before the first has handed over what it wrote (PostgreSQL), so with two open neither trusts the copy.
        self.open = 0
        # Taken around each of them: they wait for each other on the discussion's row anyway (the fence locks it),
        # so waiting here instead costs nothing, holds no pooled connection, and keeps them to one open at a time.
        self.turn = asyncio.Lock()
        self.workspace: tuple[str, str] | None = None  # the discussion's platform and workspace, once read
        # The platform's refs of the discussion's posts sent or looked up under this lease, by post key: an edit
        # finds the message it replaces here. A sent post's ref never changes.
        self.refs: dict[str, str] = {}

    def known(self, tx: Tx) -> Known | None:
        """The turns and holds as they are in this transaction, which has checked the lease, when nothing else can
        have changed them (None: read them)."""
        if tx.revision_at_fence != self.revision or self.stale or self.turns.by_key is None or self.open != 1:
            return None
        return Known(dict(self.turns.by_key), dict(self.held), list(self.humans) if self.humans is not None else None,
                     list(self.personas) if self.personas is not None else None)

    def running(self, key: str) -> bool:
        """Whether `known` will give this turn, running, to the transaction about to open, if its fence finds the
        revision unchanged (the one condition only the fence can check)."""
        by_key = self.turns.by_key
        turn = by_key.get(key) if by_key is not None else None
        return (turn is not None and turn.status == TurnStatus.RUNNING and key in self.held and not self.stale
                and self.open == 1)

    async def read(self, tx: Tx, d: Discussion) -> tuple[list[Persona], list[Turn], list[HumanMessage]]:
        """The state's parts as they are in this transaction (`d`: the discussion its fence has just read)."""
        moved = tx.revision_at_fence is None or tx.revision_at_fence != self.revision or self.open > 1
        if moved:
            self.personas = self.humans = None
        turns = await self.turns.read(tx, d, self.stale, moved=moved)
        self.stale = set()
        if self.personas is None:
            self.personas = await tx.personas(d.id)
        if self.humans is None:
            self.humans = await tx.human_messages(d.id)
        self.revision = tx.revision_at_fence
        return list(self.personas), turns, list(self.humans)

    def apply(self, discussion_id: str, changes: Changes) -> None:
        """What this driver's own transaction on the discussion wrote, once it committed."""
        self.turns.apply(discussion_id, changes)
        self.stale |= changes.stale
        for key in changes.stale:
            self.held.pop(key, None)
        self.held.update(changes.held)
        if changes.personas:
            self.personas = None
        if changes.humans:
            self.humans = None


class Kept:
    """The state kept for each discussion driven here, from its lease's first step until the lease is let go; the
    driver's parts share it (each transaction that commits hands it what it wrote)."""

    def __init__(self) -> None:
        self._states: dict[str, KeptState] = {}

    def start(self, discussion_id: str) -> KeptState:
        """A lease's reads of the state: a takeover starts from the database, whole."""
        kept = self._states[discussion_id] = KeptState()
        return kept

    def get(self, discussion_id: str) -> KeptState | None:
        return self._states.get(discussion_id)

    def drop(self, discussion_id: str) -> None:
        self._states.pop(discussion_id, None)

    def known(self, tx: Tx, discussion_id: str) -> Known | None:
        """What recording a turn would read, as kept here, when nothing else can have changed it."""
        kept = self._states.get(discussion_id)
        return kept.known(tx) if kept is not None else None

    def committed(self, discussion_id: str, tx: Tx) -> None:
        """A transaction of this driver on the discussion committed: the state kept takes what it wrote."""
        kept = self._states.get(discussion_id)
        if kept is not None:
            kept.apply(discussion_id, tx.changes)

    def seats(self, discussion_id: str) -> tuple[list[Persona], list[Turn]] | None:
        """The discussion's personas and turns as kept here, where both are kept and this driver's own writes
        left none unknown (None: read them)."""
        kept = self._states.get(discussion_id)
        if kept is None or kept.personas is None or kept.turns.by_key is None or kept.stale:
            return None
        return list(kept.personas), list(kept.turns.by_key.values())


async def load_state(tx: Tx, discussion_id: str, context_rounds: int = 2, *, d: Discussion | None = None,
                     kept: KeptState | None = None) -> State | None:
    """The discussion's state; `d` when the caller has just read the discussion in this transaction; `kept`: the
    state this driver has read so far under its lease (only what can have changed is read again)."""
    d = d if d is not None else await tx.discussion(discussion_id)
    if d is None:
        return None
    if kept is not None:
        personas, turns, humans = await kept.read(tx, d)
        return State(discussion=d, personas=personas, turns=turns, humans=humans, context_rounds=context_rounds)
    return State(
        discussion=d,
        personas=await tx.personas(d.id),
        turns=await tx.turns(d.id),
        humans=await tx.human_messages(d.id),
        context_rounds=context_rounds,
    )
