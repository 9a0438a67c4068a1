"""Decides a discussion's next step from its persisted state alone (pure: no I/O, no clock)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from core.flows import moderated
from core.models import (
    FINISHED_TURN,
    NEXT_ACTION_LABELS,
    Action,
    Discussion,
    HumanMessage,
    NextAction,
    Persona,
    Phase,
    Post,
    Role,
    Status,
    Turn,
    TurnStatus,
)

# Turns whose failure cannot be skipped: without them the discussion has nothing to stand on.
ESSENTIAL = {
    Phase.ROSTER,
    Phase.OPENING,
    Phase.ROUND_SYNTHESIS,
    Phase.FINAL_SYNTHESIS,
    Phase.RESUME_SUMMARY,
}
MAX_SKIPS_PER_ROUND = 2
SCHEDULE_CHOICES = [  # (action id suffix, button label, when)
    ("1h", "Next round in 1 hour", "in 1 hour"),
    ("tomorrow", "Tomorrow morning", "tomorrow morning"),
    ("monday", "Monday morning", "monday"),
]


@dataclass
class State:
    discussion: Discussion
    personas: list[Persona]
    turns: list[Turn]
    humans: list[HumanMessage] = field(default_factory=list)

    def turn(self, key: str) -> Turn | None:
        return next((t for t in self.turns if t.key == key), None)

    def persona(self, key: str) -> Persona | None:
        return next((p for p in self.personas if p.key == key), None)

    def by_role(self, role: Role) -> list[Persona]:
        return [p for p in self.personas if p.role == role]

    def finished(self, key: str) -> bool:
        turn = self.turn(key)
        return turn is not None and turn.status in FINISHED_TURN


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
    """A change of the discussion's own state, with the post that tells people about it."""

    status: Status | None = None
    pending: str | None = None
    round: int | None = None
    round_topic: str | None = None
    notice: Post | None = None


class Idle(BaseModel):
    """Nothing to do until a human, a button or a schedule says so."""


Step = RunTurns | Transition | Idle


def turn_key(d: Discussion, round_: int, step: int, persona_key: str) -> str:
    return f"{d.id}:r{round_}:s{step}:{persona_key}"


def special_key(d: Discussion, phase: Phase) -> str:
    suffix = {
        Phase.ROSTER: "roster",
        Phase.FINAL_SYNTHESIS: f"final:r{d.round}",
        Phase.RESUME_SUMMARY: f"pause:{d.resume_count}",
        Phase.REOPENING: f"reopen:{d.resume_count}",
    }[phase]
    return f"{d.id}:{suffix}"


def _single(state: State, phase: Phase, step: int = 0) -> TurnPlan | None:
    role = moderated.ROLE_FOR[phase]
    people = state.by_role(role)
    if not people:
        return None
    return TurnPlan(
        key=special_key(state.discussion, phase),
        round=state.discussion.round,
        step=step,
        phase=phase,
        persona_key=people[0].key,
    )


def answers(state: State) -> list[TurnPlan]:
    """A human who wrote between rounds is answered by the persona they named, else the moderator."""
    plans = []
    moderator = state.by_role(Role.MODERATOR)
    for m in state.humans:
        if not m.needs_answer or m.answered or state.finished(f"{state.discussion.id}:h{m.id}"):
            continue
        who = m.addressed_to if state.persona(m.addressed_to) else (moderator[0].key if moderator else "")
        if who:
            plans.append(
                TurnPlan(
                    key=f"{state.discussion.id}:h{m.id}",
                    round=state.discussion.round,
                    step=99,
                    phase=Phase.ANSWER,
                    persona_key=who,
                    reply_to=m.id,
                )
            )
    return plans


def next_action_post(d: Discussion, suggestions: list[str]) -> Post:
    deep = suggestions[0] if suggestions else "the most important open question"
    lines = [
        f"**Round {d.round} is complete.** What next?",
        f"• *Deep dive*: {deep}",
        "• *Different topic*, *Another round*, *Synthesize* (final synthesis), or *Pause* (resume later)",
        "Reply in the thread at any time: the council hears you on its next turn.",
    ]
    actions = [
        Action(id=f"next:{a.value}", label=NEXT_ACTION_LABELS[a], value=f"{d.id}|{a.value}",
               style="primary" if a == NextAction.ANOTHER_ROUND else "")
        for a in NextAction
    ]
    # "Next round: …" schedules it instead of running it now; the value carries words core.timeparse reads.
    actions += [
        Action(id=f"sched:{key}", label=label, value=f"{d.id}|{when}") for key, label, when in SCHEDULE_CHOICES
    ]
    return Post(kind="choice", key=f"{d.id}:r{d.round}:choice:{d.resume_count}", text="\n".join(lines),
                actions=actions)


def roster_post(d: Discussion, personas: list[Persona]) -> Post:
    return Post(
        kind="choice",
        key=f"{d.id}:confirm",
        title="Start the discussion with this council?",
        text="Start the discussion with these participants, or modify the roster first.",
        roster=personas,
        actions=[
            Action(id="roster:start", label="Start", value=d.id, style="primary"),
            Action(id="roster:modify", label="Modify roster", value=d.id),
        ],
    )


def suggestions(state: State) -> list[str]:
    """The latest round synthesis's next-topic suggestions."""
    for t in reversed(state.turns):
        if t.phase == Phase.ROUND_SYNTHESIS and t.data:
            return [str(s) for s in t.data.get("next_topic_suggestions", [])]
    return []


def round_complete(state: State) -> bool:
    d = state.discussion
    return all(
        state.finished(turn_key(d, d.round, step, p.key))
        for step, _, people in moderated.round_steps(state.personas)
        for p in people
    )


def _after_resume(state: State) -> Transition:
    """A discussion paused mid-round goes on from the step where it stopped; one paused between rounds (or
    before its automatic next round) asks people what next, as it did before the pause."""
    d = state.discussion
    if round_complete(state) and d.auto_rounds is None:
        return Transition(status=Status.WAITING, pending="", notice=next_action_post(d, suggestions(state)))
    return Transition(pending="")


def next_step(state: State) -> Step:
    d = state.discussion
    if d.status == Status.WAITING:
        plans = answers(state)
        return RunTurns(turns=plans) if plans else Idle()
    if d.status != Status.RUNNING:
        return Idle()

    if not state.by_role(Role.EXPERT):
        plan = _single(state, Phase.ROSTER)
        # A finished roster always seats experts; never re-run it (that would loop on a bad answer).
        return RunTurns(turns=[plan]) if plan and not state.finished(plan.key) else Idle()

    for pending, phase, after in (
        ("pause", Phase.RESUME_SUMMARY, Transition(status=Status.PAUSED, pending="")),
        ("final", Phase.FINAL_SYNTHESIS, Transition(status=Status.DONE, pending="")),
        ("resume", Phase.REOPENING, _after_resume(state)),
        ("resume_round", Phase.REOPENING, Transition(pending="")),
    ):
        if d.pending == pending:
            plan = _single(state, phase)
            if plan is None or state.finished(plan.key):
                return after
            return RunTurns(turns=[plan])

    if d.pending == "confirm":
        return Transition(status=Status.AWAITING_CONFIRMATION, pending="", notice=roster_post(d, state.personas))

    for step, phase, people in moderated.round_steps(state.personas):
        plans = [
            TurnPlan(key=turn_key(d, d.round, step, p.key), round=d.round, step=step, phase=phase,
                     persona_key=p.key)
            for p in people
        ]
        todo = [p for p in plans if not state.finished(p.key)]
        if todo:
            return RunTurns(turns=todo)

    # The round is complete.
    if d.auto_rounds is not None:
        if d.round < d.auto_rounds:
            topic = (suggestions(state) or [d.round_topic or d.topic])[0]
            return Transition(round=d.round + 1, round_topic=topic)
        return Transition(pending="final")
    return Transition(status=Status.WAITING, notice=next_action_post(d, suggestions(state)))


def should_block(state: State, step_turns: list[Turn]) -> str:
    """After a step: the reason to stop and ask a human, or "" to skip the failed turns and go on."""
    failed = [t for t in step_turns if t.status == TurnStatus.FAILED]
    if not failed or all(t.phase == Phase.ANSWER for t in failed):
        return ""  # an unanswered reply is noted and skipped; it never blocks the discussion
    names = ", ".join(p.name for t in failed if (p := state.persona(t.persona_key)))
    reason = failed[0].error or "the model did not answer"
    if any(t.phase in ESSENTIAL for t in failed):
        return f"{names} could not write the {failed[0].phase.value.replace('_', ' ')}: {reason}"
    if len(failed) * 2 > len(step_turns):
        return f"most of this step failed ({names}): {reason}"
    skipped = [
        t for t in state.turns
        if t.round == state.discussion.round and t.status == TurnStatus.SKIPPED and t.key not in
        {f.key for f in failed}
    ]
    if len(skipped) + len(failed) > MAX_SKIPS_PER_ROUND:
        return f"repeated failures this round ({names}): {reason}"
    return ""


def blocked_post(d: Discussion, failed: list[Turn], stamp: str) -> Post:
    """`stamp` makes each blocking its own post: a retry resets attempts, so they cannot tell blockings apart."""
    return Post(
        kind="error",
        key=f"{d.id}:blocked:{failed[0].key if failed else 'step'}:{stamp}",
        text=f"⚠️ The discussion is blocked: {d.blocked_reason}. Retry, skip the failed turns, or stop.",
        actions=[
            Action(id="fail:retry", label="Retry", value=d.id, style="primary"),
            Action(id="fail:skip", label="Skip", value=d.id),
            Action(id="fail:stop", label="Stop", value=d.id, style="danger"),
        ],
    )


def skipped_post(d: Discussion, turn: Turn, name: str) -> Post:
    return Post(
        kind="notice",
        key=f"{turn.key}:skipped:{turn.attempts}",
        text=f"⚠️ {name} could not respond ({turn.error or 'the model did not answer'}) and is skipped this turn.",
    )
