"""What every deliberation protocol shares: persisted state, steps, turn keys, and the Flow protocol (pure)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from pydantic import BaseModel

from core.deliberation.roster import VISITORS
from core.models import FINISHED_TURN, Discussion, HumanMessage, Persona, Phase, Role, Status, Turn
from core.ports import Tier

__all__ = ["Tier"]
# The posts a transition asks for; core.showing.posts builds them.
Notice = Literal["", "next_action", "roster", "nothing_said", "positions"]
QuestionFrom = Literal["roster", "turn", "owners"]  # see Flow.question_from


@dataclass
class State:
    discussion: Discussion
    personas: list[Persona]
    turns: list[Turn]
    humans: list[HumanMessage] = field(default_factory=list)
    context_rounds: int = 2  # rounds a prompt reads verbatim; earlier ones by their syntheses

    def turn(self, key: str) -> Turn | None:
        return next((t for t in self.turns if t.key == key), None)

    def persona(self, key: str) -> Persona | None:
        """A seated persona, or one that takes part without a seat (the Fact-checker)."""
        return next((p for p in self.personas if p.key == key), None) or VISITORS.get(key)

    def by_role(self, role: Role) -> list[Persona]:
        return [p for p in self.personas if p.role == role]

    def finished(self, key: str) -> bool:
        turn = self.turn(key)
        return turn is not None and turn.status in FINISHED_TURN

    def done_turns(self, phase: Phase | None = None, round_: int | None = None) -> list[Turn]:
        """Finished turns (in step order), optionally of one phase and one round."""
        return sorted(
            (t for t in self.turns if t.status in FINISHED_TURN and (phase is None or t.phase == phase)
             and (round_ is None or t.round == round_)),
            key=lambda t: (t.round, t.step, t.created_at),
        )


class TurnPlan(BaseModel):
    key: str
    round: int
    step: int
    phase: Phase
    persona_key: str
    reply_to: int | None = None


class RunTurns(BaseModel):
    """Turns that may run in parallel."""

    turns: list[TurnPlan]


class Transition(BaseModel):
    """A change of the discussion's own state, naming the post (if any) that tells people about it."""

    status: Status | None = None
    pending: str | None = None
    round: int | None = None
    round_topic: str | None = None
    blocked_reason: str | None = None  # with status BLOCKED: why, for the header and the blocked post
    notice: Notice = ""


class Idle(BaseModel):
    """Nothing to do until a human, a button or a schedule says so."""


Step = RunTurns | Transition | Idle


@dataclass
class StepSpec:
    """One step of a round: a phase and the personas who take it, in parallel."""

    step: int
    phase: Phase
    personas: list[Persona]


def turn_key(d: Discussion, round_: int, step: int, persona_key: str) -> str:
    return f"{d.id}:r{round_}:s{step}:{persona_key}"


def plans(d: Discussion, spec: StepSpec) -> list[TurnPlan]:
    return [
        TurnPlan(key=turn_key(d, d.round, spec.step, p.key), round=d.round, step=spec.step, phase=spec.phase,
                 persona_key=p.key)
        for p in spec.personas
    ]


class Flow(Protocol):
    """A deliberation protocol. The engine asks it what the current round consists of and what follows it;
    the prompt builder asks it for each phase's task, output shape and model tier."""

    name: str
    summary: str  # one line for help texts
    outline: str  # the header's "Flow: ..." line
    rules: str  # how this protocol works, for the shared system prompt
    essential: frozenset[Phase]  # turns whose failure blocks instead of being skipped
    labels: dict[Phase, str]  # how each phase is titled in posts and transcripts
    nudges: int  # times a failed turn is retried with a visible nudge before it is skipped
    verbatim_rounds: int | None  # rounds a prompt reads verbatim; None: the COUNCIL_CONTEXT_ROUNDS setting
    transcript_chars: int | None  # the verbatim rounds' budget: older turns beyond it are condensed; None: none
    keeps_stances: bool  # one who did not speak this round keeps their latest stance (else: undecided)
    # Which turn opens round 1's question with its options: "roster" (its answers; a question turn where the roster
    # gave none), "turn" (a question turn of its own), "owners" (a meeting: the owners' proposals). A new topic's
    # question is always a question turn's.
    question_from: QuestionFrom

    def seats(self, d: Discussion) -> list[Persona]:
        """Who sits at the table when the discussion is created (before any generated roster)."""
        ...

    def needs_roster(self, state: State) -> bool:
        """Whether the roster still has to be generated before the first round."""
        ...

    def writer(self, state: State, phase: Phase) -> Persona | None:
        """Who writes a turn outside the round: roster, final synthesis, resume summary, reopening, answers."""
        ...

    def steps(self, state: State) -> list[StepSpec]:
        """The current round's steps in order; a later step may depend on what earlier ones recorded."""
        ...

    def after_round(self, state: State) -> Step:
        """What happens once every step of the current round is finished."""
        ...

    def task(self, state: State, plan: TurnPlan, persona: Persona) -> str:
        """The instruction for one turn (the persona's brief is added by the prompt builder)."""
        ...

    def schema(self, phase: Phase, persona: Persona) -> type[BaseModel] | None:
        """The structured output a turn fills in, or None for plain text."""
        ...

    def tier(self, state: State, plan: TurnPlan, persona: Persona) -> Tier:
        ...

    def stance(self, phase: Phase, persona: Persona) -> bool:
        """Whether this turn ends with the persona's stance line (recorded as data with the turn)."""
        ...
