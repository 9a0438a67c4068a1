"""What a discussion's charts show, read from the database (no drawing here: matplotlib loads where they are drawn,
off the event loop)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.deliberation import choices, closings, flows, stances
from core.models import FINISHED_TURN, Ballot, Discussion, Persona, Poll, Turn
from core.storage.store import Tx


@dataclass(frozen=True)
class Grid:
    """Each persona's recorded choice in every round with stances, read from the same stance table the verdict
    counts: every seated persona has a row (undecided where they recorded none), and the Contrarian's row is
    marked as shown, not counted."""

    rounds: tuple[int, ...] = ()
    personas: tuple[tuple[str, bool], ...] = ()  # (name, counted), in the roster's order
    cells: tuple[tuple[str, ...], ...] = ()  # per persona, per round: an option id, for, against or undecided
    names: tuple[tuple[str, str], ...] = ()  # option id -> its label, for every option any question listed

    def __bool__(self) -> bool:
        return bool(self.rounds and self.personas)

    def undecided(self, round_: int) -> int:
        """How many personas the verdict counts were undecided in a round (they cast no ballot in its poll)."""
        if round_ not in self.rounds:
            return 0
        at = self.rounds.index(round_)
        return sum(1 for (_, counted), row in zip(self.personas, self.cells, strict=True)
                   if counted and row[at] == choices.UNDECIDED)


@dataclass
class ChartMaterial:
    topic: str
    poll: Poll | None = None
    ballots: list[Ballot] = field(default_factory=list)
    grid: Grid = field(default_factory=Grid)


@dataclass
class _Seats:
    """What the stance table reads of a discussion: its personas and their finished turns, in step order."""

    discussion: Discussion
    personas: list[Persona]
    turns: list[Turn]

    def done_turns(self) -> list[Turn]:
        return sorted((t for t in self.turns if t.status in FINISHED_TURN), key=lambda t: (t.round, t.step))


def grid(state: stances.State) -> Grid:
    """The stance table of every round with a stance, as one grid (a pure read of the discussion's state)."""
    carry = flows.get(state.discussion.flow).keeps_stances
    rounds = sorted({t.round for t in state.done_turns() if stances.has_stance(t)})
    if not rounds:
        return Grid()
    tables = [stances.table(state, r, carry=carry) for r in rounds]
    # A seat's rows are in the roster's order in every round; its name is the one the latest round credits.
    personas = tuple((row.persona, row.counted) for row in tables[-1])
    cells = tuple(tuple(_bucket(t[i].choice) for t in tables) for i in range(len(personas)))
    return Grid(rounds=tuple(rounds), personas=personas, cells=cells, names=tuple(stances.names(state).items()))


def _bucket(choice: str) -> str:
    return choices.UNDECIDED if choice in ("", choices.UNDECIDED, choices.UNREADABLE) else choice


async def gather(tx: Tx, discussion_id: str, seats: tuple[list[Persona], list[Turn]] | None = None) -> ChartMaterial:
    """What the charts show, read in `tx`; `seats`: the discussion's personas and turns where its driver keeps them
    (else they are read)."""
    d = await tx.discussion(discussion_id)
    material = ChartMaterial(topic=d.topic if d else "")
    polls = await tx.round_ballots(discussion_id)  # every poll with its live ballots, in one read
    for poll, ballots in reversed(polls):  # the latest poll anyone voted in (the final one first)
        place = closings.RANK_POLL.search(poll.key)  # of a ranking, its first place: the choice that counts
        if ballots and (place is None or place.group(1) == "1"):
            material.poll, material.ballots = poll, ballots
            break
    if d is not None:
        state = _Seats(d, *seats) if seats is not None else \
            _Seats(d, await tx.personas(discussion_id), await tx.turns(discussion_id))
        material.grid = grid(state)
    return material
