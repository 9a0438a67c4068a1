"""What a discussion's charts show, read from the database (no drawing here: matplotlib loads where they are drawn,
off the event loop)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.deliberation import stances as stance_table
from core.models import FINISHED_TURN, Ballot, Discussion, Persona, Poll, Turn
from core.storage.store import Tx


@dataclass
class ChartMaterial:
    topic: str
    poll: Poll | None = None
    ballots: list[Ballot] = field(default_factory=list)
    # round -> persona name -> 1-based proposal they support, from the ballots they cast in their own turns
    stances: dict[int, dict[str, int]] = field(default_factory=dict)
    proposals: dict[int, list[str]] = field(default_factory=dict)  # round -> its proposals
    # When no persona named a poll's option: the latest round with stances, and how many personas hold each label
    # there (the stance table's labels, in the order they first appear).
    positions_round: int = 0
    positions: dict[str, int] = field(default_factory=dict)


@dataclass
class _Seats:
    """What the stance table reads of a discussion: its personas and their finished turns, in step order."""

    discussion: Discussion
    personas: list[Persona]
    turns: list[Turn]

    def done_turns(self) -> list[Turn]:
        return sorted((t for t in self.turns if t.status in FINISHED_TURN), key=lambda t: (t.round, t.step))


async def gather(tx: Tx, discussion_id: str, seats: tuple[list[Persona], list[Turn]] | None = None) -> ChartMaterial:
    """What the charts show, read in `tx`; `seats`: the discussion's personas and turns where its driver keeps them
    (else they are read, every turn with its text, when no persona's stance named a poll's option)."""
    d = await tx.discussion(discussion_id)
    material = ChartMaterial(topic=d.topic if d else "")
    polls = await tx.round_ballots(discussion_id)  # every poll with its live ballots, in one read
    for poll, ballots in reversed(polls):  # the latest poll anyone voted in (the final one first)
        if ballots:
            material.poll, material.ballots = poll, ballots
            break
    for poll, ballots in polls:  # a synthesis's poll: what the personas' own stances named in that round
        ai = [b for b in ballots if b.is_ai and not b.superseded]
        if ai and not poll.key.endswith(":closed"):
            material.stances[poll.round] = {b.voter_name: b.choice + 1 for b in ai}
            # Each option as people read it, its label with its id (a poll opened before ids were kept: its label).
            material.proposals[poll.round] = [f"{o} [{i}]" for o, i in zip(poll.options, poll.option_ids,
                                                                            strict=False)] or list(poll.options)
    if not material.stances and d is not None:  # stances in the personas' own words (none named a poll's option)
        table = _Seats(d, *seats) if seats is not None else \
            _Seats(d, await tx.personas(discussion_id), await tx.turns(discussion_id))
        rounds = [t.round for t in table.done_turns() if stance_table.has_stance(t)]
        if rounds:
            material.positions_round = max(rounds)
            # The personas the verdict counts: the Contrarian's stance is shown beside the count, never in it.
            for row in (r for r in stance_table.table(table, material.positions_round) if r.counted):
                material.positions[row.label] = material.positions.get(row.label, 0) + 1
    return material
