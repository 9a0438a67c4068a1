"""Decides a discussion's next step from its persisted state alone (pure: no I/O, no clock).

What is common to every protocol lives here (roster first, pause, final synthesis, resume, answers to people,
failure policy); what a round consists of, and what follows it, is the discussion's flow's business."""

from __future__ import annotations

from core.deliberation import factcheck, flows, question, review
from core.deliberation.flows.base import (
    Idle,
    RunTurns,
    State,
    Step,
    StepSpec,
    Transition,
    TurnPlan,
    plans,
    turn_key,
)
from core.models import Discussion, Phase, Status, Turn, TurnStatus

__all__ = ["Idle", "RunTurns", "State", "Step", "StepSpec", "Transition", "TurnPlan", "next_step", "turn_key"]

MAX_SKIPS_PER_ROUND = 2
# Turns recorded for the flow's bookkeeping, never posted (a peer review shows only in its round's aggregate).
SILENT = frozenset({Phase.BID, Phase.PERSONA, Phase.PEER_REVIEW})


def essential(d: Discussion) -> frozenset[Phase]:
    return flows.get(d.flow).essential


def special_key(d: Discussion, phase: Phase) -> str:
    suffix = {
        Phase.ROSTER: "roster",
        Phase.FINAL_SYNTHESIS: f"final:r{d.round}",
        Phase.RESUME_SUMMARY: f"pause:{d.resume_count}",
        Phase.REOPENING: f"reopen:{d.resume_count}",
    }[phase]
    return f"{d.id}:{suffix}"


def _single(state: State, phase: Phase, step: int = 0) -> TurnPlan | None:
    writer = flows.get(state.discussion.flow).writer(state, phase)
    if writer is None:
        return None
    return TurnPlan(key=special_key(state.discussion, phase), round=state.discussion.round, step=step,
                    phase=phase, persona_key=writer.key)


def answers(state: State) -> list[TurnPlan]:
    """A person who wrote in the thread (between rounds, or while a round ran) is answered by the persona they
    named, else the flow's facilitator (moderator, referee, floor lead)."""
    out = []
    facilitator = flows.get(state.discussion.flow).writer(state, Phase.ANSWER)
    for m in state.humans:
        if not m.needs_answer or m.answered or state.finished(f"{state.discussion.id}:h{m.id}"):
            continue
        who = m.addressed_to if state.persona(m.addressed_to) else (facilitator.key if facilitator else "")
        if who:
            out.append(TurnPlan(key=f"{state.discussion.id}:h{m.id}", round=state.discussion.round, step=99,
                                phase=Phase.ANSWER, persona_key=who, reply_to=m.id))
    return out


def suggestions(state: State) -> list[str]:
    """The latest round synthesis's next-topic suggestions."""
    for t in reversed(state.turns):
        if t.phase == Phase.ROUND_SYNTHESIS and t.data:
            return [str(s) for s in t.data.get("next_topic_suggestions", [])]
    return []


def round_steps(state: State) -> list[StepSpec]:
    return review.with_reviews(state, factcheck.with_checks(state, flows.get(state.discussion.flow).steps(state)))


def round_complete(state: State) -> bool:
    d = state.discussion
    return all(state.finished(turn_key(d, d.round, spec.step, p.key)) for spec in round_steps(state)
               for p in spec.personas)


def _after_resume(state: State) -> Transition:
    """A discussion paused mid-round goes on from the step where it stopped; one paused between rounds (or
    before its automatic next round) asks people what next, as it did before the pause."""
    d = state.discussion
    if round_complete(state) and d.auto_rounds is None:
        return Transition(status=Status.WAITING, pending="", notice="next_action")
    return Transition(pending="")


def next_step(state: State) -> Step:
    d = state.discussion
    flow = flows.get(d.flow)
    asked = factcheck.requested(state)  # "Check claims" on one post: whatever the discussion is doing
    if asked and d.status != Status.STOPPED:
        return RunTurns(turns=asked)
    if d.status == Status.WAITING:
        todo = answers(state)
        return RunTurns(turns=todo) if todo else Idle()
    if d.status != Status.RUNNING:
        return Idle()

    if flow.needs_roster(state):
        plan = _single(state, Phase.ROSTER)
        # A finished roster always seats people; never re-run it (that would loop on a bad answer).
        return RunTurns(turns=[plan]) if plan and not state.finished(plan.key) else Idle()

    if d.pending == "" or (d.pending == "final" and not closing_begun(state)):
        # A person who wrote is answered at the next step, before the closing too; once the closing is being
        # written, it reads what came in and lists what it leaves open: no answer may land after it.
        todo = answers(state)
        if todo:
            return RunTurns(turns=todo)

    if d.pending == "final" and not said_anything(state):  # a synthesis of nothing is never written
        return Transition(status=Status.DONE, pending="", notice="nothing_said")

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
        return Transition(status=Status.AWAITING_CONFIRMATION, pending="", notice="roster")

    asking = question_turn(state)  # the question is on the table before anyone takes a stance on it
    if asking is not None:
        return RunTurns(turns=[asking])
    for spec in round_steps(state):
        todo = [p for p in plans(d, spec) if not state.finished(p.key)]
        if todo:
            return RunTurns(turns=todo)
    return flow.after_round(state)


def question_turn(state: State) -> TurnPlan | None:
    """The turn that frames the current question when nothing opened it yet: a council's first, a roster that
    gave no two answers, a *Different topic*. Once written (or skipped) it is never asked again."""
    d = state.discussion
    source = flows.get(d.flow).question_from
    if source == "owners" or question.opening(state.done_turns(), d) is not None:
        return None
    if source == "roster" and question.opened_in(d) == 1 and not state.finished(special_key(d, Phase.ROSTER)):
        return None  # round 1's question comes with the roster: asked only where a roster was written without it
    writer = flows.get(d.flow).writer(state, Phase.QUESTION)
    key = question.key(d)
    if writer is None or state.finished(key):
        return None
    return TurnPlan(key=key, round=d.round, step=0, phase=Phase.QUESTION, persona_key=writer.key)


def closing_begun(state: State) -> bool:
    """Whether the final synthesis has been started (or written)."""
    plan = _single(state, Phase.FINAL_SYNTHESIS)
    return plan is not None and state.turn(plan.key) is not None


def said_anything(state: State) -> bool:
    """Whether any persona said something in the discussion (bookkeeping turns aside)."""
    return any(t.text for t in state.done_turns()
               if t.phase not in SILENT and t.phase not in (Phase.ROSTER, Phase.QUESTION))


def should_block(state: State, step_turns: list[Turn]) -> str:
    """After a step: the reason to stop and ask a human, or "" to skip the failed turns and go on (a failed turn
    the flow nudges is tried again first, so it blocks nothing yet)."""
    nudges = flows.get(state.discussion.flow).nudges
    failed = [t for t in step_turns if t.status == TurnStatus.FAILED and (
        not nudges or t.attempts > nudges or t.phase in essential(state.discussion))]
    if not failed or all(t.phase == Phase.ANSWER for t in failed):
        return ""  # an unanswered reply is noted and skipped; it never blocks the discussion
    names = ", ".join(p.name for t in failed if (p := state.persona(t.persona_key)))
    reason = failed[0].error or "the model did not answer"
    if any(t.phase in essential(state.discussion) for t in failed):
        return f"{names} could not write the {failed[0].phase.value.replace('_', ' ')}: {reason}"
    # A re-run (a nudged turn) is judged against its whole step, not only the turns run again.
    peers = [t for t in state.turns if (t.round, t.step, t.phase) == (failed[0].round, failed[0].step, failed[0].phase)]
    if len(failed) * 2 > max(len(step_turns), len(peers)):
        return f"most of this step failed ({names}): {reason}"
    skipped = [
        t for t in state.turns
        if t.round == state.discussion.round and t.status == TurnStatus.SKIPPED and t.key not in
        {f.key for f in failed}
    ]
    if len(skipped) + len(failed) > MAX_SKIPS_PER_ROUND:
        return f"repeated failures this round ({names}): {reason}"
    return ""

