"""The pure engine: which step comes next, from persisted state alone."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import engine
from core.deliberation.engine import Idle, RunTurns, State, Transition
from core.deliberation.roster import FIXED, full_roster
from core.models import Discussion, HumanMessage, Persona, Phase, Role, Status, Turn, TurnStatus
from core.showing import posts

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
EXPERTS = [Persona(key=f"e{i}", name=f"Expert {i}", role=Role.EXPERT) for i in range(3)]


def state(turns: list[Turn] | None = None, **kw: object) -> State:
    d = Discussion(id="d", topic="t", created_at=T0, updated_at=T0, **kw)  # type: ignore[arg-type]
    return State(discussion=d, personas=full_roster(EXPERTS), turns=turns or [])


def done(plan: engine.TurnPlan, status: TurnStatus = TurnStatus.PUBLISHED, data: dict | None = None) -> Turn:
    return Turn(key=plan.key, discussion_id="d", round=plan.round, step=plan.step, phase=plan.phase,
                persona_key=plan.persona_key, status=status, data=data, created_at=T0)


def run_round(s: State) -> list[RunTurns]:
    steps = []
    while isinstance(step := engine.next_step(s), RunTurns):
        steps.append(step)
        data = {"next_topic_suggestions": ["deeper"]} if step.turns[0].phase == Phase.ROUND_SYNTHESIS else None
        s.turns += [done(p, data=data) for p in step.turns]
    return steps


def test_without_experts_the_first_step_is_the_roster() -> None:
    s = state()
    s.personas = list(FIXED)
    step = engine.next_step(s)
    assert isinstance(step, RunTurns) and [p.phase for p in step.turns] == [Phase.ROSTER]


def test_a_round_is_six_steps_with_the_experts_in_parallel() -> None:
    steps = run_round(state())
    assert [[p.phase for p in s.turns] for s in steps] == [
        [Phase.OPENING], [Phase.STATEMENT] * 3, [Phase.COUNTERPOINT], [Phase.REBUTTAL] * 3, [Phase.ANALOGY],
        [Phase.ROUND_SYNTHESIS],
    ]
    assert len({p.key for s in steps for p in s.turns}) == 10


def test_after_a_round_it_waits_for_people_with_the_next_actions() -> None:
    s = state()
    run_round(s)
    step = engine.next_step(s)
    assert isinstance(step, Transition) and step.status == Status.WAITING and step.notice == "next_action"
    notice = posts.transition_notice(step.notice, s)
    assert notice is not None and "deeper" in notice.text


def test_unattended_rounds_advance_on_the_same_topic_then_ask_for_the_final_synthesis() -> None:
    s = state(auto_rounds=2)
    run_round(s)
    step = engine.next_step(s)
    assert step == Transition(round=2), "another round on the same topic: a deep dive is people's choice"
    s.discussion.round = 2
    run_round(s)
    assert engine.next_step(s) == Transition(pending="final")


def test_a_turn_already_done_is_never_planned_again() -> None:
    s = state()
    first = engine.next_step(s)
    assert isinstance(first, RunTurns)
    s.turns.append(done(first.turns[0], TurnStatus.DONE))  # done but not yet published: still not re-run
    second = engine.next_step(s)
    assert isinstance(second, RunTurns) and second.turns[0].phase == Phase.STATEMENT


def test_waiting_discussions_answer_unanswered_humans_only() -> None:
    s = state(status=Status.WAITING)
    assert isinstance(engine.next_step(s), Idle)
    s.humans = [HumanMessage(id=5, discussion_id="d", author_id="U", author_name="Sam", text="?", needs_answer=True,
                             addressed_to="e1", created_at=T0)]
    step = engine.next_step(s)
    assert isinstance(step, RunTurns) and step.turns[0].persona_key == "e1" and step.turns[0].reply_to == 5


def test_pause_then_resume_transitions() -> None:
    s = state(pending="pause")
    step = engine.next_step(s)
    assert isinstance(step, RunTurns) and step.turns[0].phase == Phase.RESUME_SUMMARY
    s.turns.append(done(step.turns[0]))
    assert engine.next_step(s) == Transition(status=Status.PAUSED, pending="")
    s.discussion.pending, s.discussion.resume_count = "resume", 1  # what Resume records
    step = engine.next_step(s)
    assert isinstance(step, RunTurns) and step.turns[0].phase == Phase.REOPENING
    assert step.turns[0].key == "d:reopen:1" and step.turns[0].persona_key == "moderator"
    s.turns.append(done(step.turns[0]))
    # Paused before its round was over: the round goes on from where it stopped.
    assert engine.next_step(s) == Transition(pending="")
    s.discussion.pending = ""
    step = engine.next_step(s)
    assert isinstance(step, RunTurns) and step.turns[0].phase == Phase.OPENING


def test_a_discussion_paused_between_rounds_asks_what_next_on_resume() -> None:
    s = state()
    run_round(s)
    s.discussion.pending, s.discussion.resume_count = "resume", 1
    reopening = engine.next_step(s)
    assert isinstance(reopening, RunTurns)
    s.turns.append(done(reopening.turns[0]))
    after = engine.next_step(s)
    assert isinstance(after, Transition) and after.status == Status.WAITING and after.notice == "next_action"


def test_failures_block_only_when_they_cannot_be_skipped() -> None:
    s = state()
    statements = run_round(s)[1].turns
    one = [done(statements[0], TurnStatus.FAILED)] + [done(p) for p in statements[1:]]
    assert engine.should_block(s, one) == ""
    most = [done(p, TurnStatus.FAILED) for p in statements[:2]] + [done(statements[2])]
    for t in most:
        t.attempts = 1
    assert engine.should_block(s, most) == "", "a first failure is tried once more (with a note) before anything"
    for t in most:
        t.attempts = 2
    assert "most of this step failed" in engine.should_block(s, most)
    opening = engine.TurnPlan(key="d:r1:s0:moderator", round=1, step=0, phase=Phase.OPENING,
                              persona_key="moderator")
    assert "Moderator could not write the opening" in engine.should_block(s, [done(opening, TurnStatus.FAILED)])


def test_a_final_synthesis_of_nothing_is_never_written() -> None:
    from core.deliberation.flows.open_floor import LEAD
    d = Discussion(id="d", topic="t", flow="open", status=Status.RUNNING, pending="final", created_at=T0,
                   updated_at=T0)
    idle = State(discussion=d, personas=[LEAD, Persona(key="a", name="A", role=Role.EXPERT, expertise=["x"])],
                     turns=[])
    step = engine.next_step(idle)
    assert isinstance(step, Transition) and step.status == Status.DONE and step.notice == "nothing_said"
    notice = posts.transition_notice(step.notice, idle)
    assert notice is not None and "nothing to synthesise" in notice.text
