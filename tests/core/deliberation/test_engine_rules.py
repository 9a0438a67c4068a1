"""The engine's rules one by one: what step comes next for each protocol and state, who answers whom, when the
closing has begun and when a failed step stops the discussion for a person."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import engine, factcheck
from core.deliberation.engine import Idle, RunTurns, State, Transition, TurnPlan
from core.deliberation.flows import council, open_floor
from core.deliberation.roster import FACT_CHECKER, FIXED, full_roster
from core.models import Discussion, HumanMessage, Persona, Phase, Role, Status, Turn, TurnStatus
from core.showing import posts

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
EXPERTS = [Persona(key=f"e{i}", name=f"Expert {i}", role=Role.EXPERT) for i in range(4)]


def moderated(turns: list[Turn] | None = None, personas: list[Persona] | None = None, **kw: object) -> State:
    d = Discussion(id="d", topic="t", created_at=T0, updated_at=T0, **kw)  # type: ignore[arg-type]
    return State(discussion=d, personas=full_roster(EXPERTS) if personas is None else personas, turns=turns or [])


ANSWERS = {"question": "t?", "listed": [{"id": "O1", "label": "Do it"}, {"id": "O2", "label": "Wait"}], "opens": True}


def a_council(*, asked: bool = True, **kw: object) -> State:
    """A council; `asked`: its question is on the table already (the referee's question turn is written)."""
    d = Discussion(id="d", topic="t", flow="council", created_at=T0, updated_at=T0, **kw)  # type: ignore[arg-type]
    question = TurnPlan(key="d:question:r1", round=1, step=0, phase=Phase.QUESTION, persona_key="referee")
    return State(discussion=d, personas=council.Council().seats(d),
                 turns=[turn(question, data=ANSWERS)] if asked else [])


def turn(plan: TurnPlan, status: TurnStatus = TurnStatus.PUBLISHED, text: str = "said", data: dict | None = None,
         attempts: int = 0, error: str = "") -> Turn:
    return Turn(key=plan.key, discussion_id="d", round=plan.round, step=plan.step, phase=plan.phase,
                persona_key=plan.persona_key, status=status, text=text, data=data, attempts=attempts, error=error,
                created_at=T0)


def run(s: State) -> list[RunTurns]:
    """Runs steps, each turn written at once, until the engine asks for something else."""
    steps = []
    while isinstance(step := engine.next_step(s), RunTurns):
        steps.append(step)
        s.turns += [turn(p) for p in step.turns]
    return steps


def human(i: int, *, to: str = "", needs_answer: bool = True, answered: bool = False) -> HumanMessage:
    return HumanMessage(id=i, discussion_id="d", author_id="U", author_name="Sam", text="what about cost?",
                        needs_answer=needs_answer, answered=answered, addressed_to=to, created_at=T0)


def answered_by(step: object) -> list[tuple[int | None, str]]:
    assert isinstance(step, RunTurns), step
    assert all(p.phase == Phase.ANSWER for p in step.turns), step
    return [(p.reply_to, p.persona_key) for p in step.turns]


def single(step: object) -> TurnPlan:
    assert isinstance(step, RunTurns) and len(step.turns) == 1, step
    return step.turns[0]


# who answers a person ---------------------------------------------------------------------------------------
def test_a_person_who_names_no_one_is_answered_by_the_facilitator() -> None:
    s = moderated(status=Status.WAITING)
    s.humans = [human(1)]
    assert answered_by(engine.next_step(s)) == [(1, "moderator")]
    c = a_council(status=Status.WAITING)
    c.humans = [human(1)]
    assert answered_by(engine.next_step(c)) == [(1, "referee")], "the council's facilitator is its referee"


def test_a_person_who_names_someone_not_at_the_table_is_answered_by_the_facilitator() -> None:
    s = moderated(status=Status.WAITING)
    s.humans = [human(1, to="nobody"), human(2, to="e2")]
    assert answered_by(engine.next_step(s)) == [(1, "moderator"), (2, "e2")]


def test_with_no_facilitator_seated_a_message_naming_no_one_waits_and_one_naming_a_persona_is_answered() -> None:
    s = moderated(status=Status.WAITING, personas=list(EXPERTS))
    s.humans = [human(1), human(2, to="e1")]
    assert answered_by(engine.next_step(s)) == [(2, "e1")]
    s.humans = [human(1)]
    assert engine.next_step(s) == Idle()


def test_only_messages_owed_an_answer_and_not_yet_answered_are_answered() -> None:
    s = moderated(status=Status.WAITING)
    already = TurnPlan(key="d:h3", round=1, step=99, phase=Phase.ANSWER, persona_key="moderator", reply_to=3)
    s.turns = [turn(already)]  # its answer is written, the message not yet marked as answered
    s.humans = [human(1, needs_answer=False), human(2, answered=True), human(3), human(4, to="e0")]
    assert answered_by(engine.next_step(s)) == [(4, "e0")], "the ones before it do not stop the reading"
    s.humans = s.humans[:3]
    assert engine.next_step(s) == Idle()


def test_a_running_discussion_answers_a_person_before_its_next_step() -> None:
    s = moderated()
    s.humans = [human(1, to="e3")]
    step = engine.next_step(s)
    assert answered_by(step) == [(1, "e3")]
    s.turns.append(turn(single(step)))
    assert single(engine.next_step(s)).phase == Phase.OPENING


def test_a_pause_is_summed_up_before_anyone_is_answered() -> None:
    s = moderated(pending="pause")
    s.humans = [human(1)]
    assert single(engine.next_step(s)).phase == Phase.RESUME_SUMMARY


# the closing ------------------------------------------------------------------------------------------------
def test_a_person_who_wrote_before_the_closing_is_answered_first_and_none_after_it_has_begun() -> None:
    s = moderated()
    run(s)
    s.discussion.pending = "final"
    s.humans = [human(1)]
    assert not engine.closing_begun(s)
    assert answered_by(engine.next_step(s)) == [(1, "moderator")]
    closing = TurnPlan(key="d:final:r1", round=1, step=0, phase=Phase.FINAL_SYNTHESIS, persona_key="historian")
    s.turns.append(turn(closing, TurnStatus.RUNNING, text=""))  # being written: it reads what came in
    assert engine.closing_begun(s)
    assert engine.next_step(s) == RunTurns(turns=[closing])


def test_the_closing_is_written_by_the_flows_writer_and_then_the_discussion_is_done_with_nothing_pending() -> None:
    s = moderated()
    run(s)
    s.discussion.pending = "final"
    closing = single(engine.next_step(s))
    assert (closing.key, closing.phase, closing.persona_key) == ("d:final:r1", Phase.FINAL_SYNTHESIS, "historian")
    s.turns.append(turn(closing))
    assert engine.next_step(s) == Transition(status=Status.DONE, pending="")
    c = a_council()
    c.turns = [turn(p) for p in single_step(c)]
    c.discussion.pending = "final"
    assert single(engine.next_step(c)).persona_key == "referee", "the council's verdict is the referee's"


def single_step(s: State) -> list[TurnPlan]:
    step = engine.next_step(s)
    assert isinstance(step, RunTurns)
    return step.turns


def floor_turns(*, speech: bool) -> list[Turn]:
    """An open floor's bookkeeping (roster, persona, bid), all with text, and maybe one speech."""
    ana = "ana"
    rows = [
        TurnPlan(key="d:roster", round=1, step=0, phase=Phase.ROSTER, persona_key="moderator"),
        TurnPlan(key="d:r1:s0:ana", round=1, step=0, phase=Phase.PERSONA, persona_key=ana),
        TurnPlan(key="d:r1:s1:ana", round=1, step=1, phase=Phase.BID, persona_key=ana),
    ]
    out = [turn(p, text="bookkeeping") for p in rows]
    if speech:
        said = TurnPlan(key="d:r1:s2:ana", round=1, step=2, phase=Phase.SPEECH, persona_key=ana)
        out = [turn(p, text="") for p in rows] + [turn(said, text="I think so.")]
    return out


def test_a_closing_of_nothing_is_never_written_and_bookkeeping_is_not_speech() -> None:
    def floor(turns: list[Turn]) -> State:
        d = Discussion(id="d", topic="t", flow="open", pending="final", created_at=T0, updated_at=T0)
        ana = Persona(key="ana", name="Ana", role=Role.EXPERT, expertise=["x"])
        return State(discussion=d, personas=[open_floor.LEAD, ana], turns=turns)

    assert not engine.said_anything(floor(floor_turns(speech=False)))
    assert engine.next_step(floor(floor_turns(speech=False))) == Transition(status=Status.DONE, pending="",
                                                                            notice="nothing_said")
    spoke = floor(floor_turns(speech=True))
    assert engine.said_anything(spoke)
    assert single(engine.next_step(spoke)).phase == Phase.FINAL_SYNTHESIS


# the roster -------------------------------------------------------------------------------------------------
def test_the_roster_comes_first_and_reads_before_the_round_it_opens() -> None:
    s = moderated(personas=list(FIXED))
    roster = single(engine.next_step(s))
    assert (roster.key, roster.phase, roster.persona_key) == ("d:roster", Phase.ROSTER, "moderator")
    s.turns.append(turn(roster, data=ANSWERS))  # the roster gave the topic's answers: the question is open
    s.personas = full_roster(EXPERTS)  # what the roster seated
    opening = single(engine.next_step(s))
    s.turns.append(turn(opening))
    assert [t.phase for t in s.done_turns()] == [Phase.ROSTER, Phase.OPENING]


def test_a_roster_that_gave_no_answers_is_followed_by_a_question_turn_once() -> None:
    s = moderated(personas=list(FIXED))
    s.turns.append(turn(single(engine.next_step(s))))  # a roster without the topic's answers
    s.personas = full_roster(EXPERTS)
    asked = single(engine.next_step(s))
    assert (asked.key, asked.phase, asked.persona_key) == ("d:question:r1", Phase.QUESTION, "moderator")
    s.turns.append(turn(asked, TurnStatus.SKIPPED, text=""))  # it failed and was skipped: never asked again
    assert single(engine.next_step(s)).phase == Phase.OPENING


def test_a_different_topic_opens_a_new_question_before_its_round() -> None:
    from core.deliberation import question
    s = moderated(personas=full_roster(EXPERTS))
    s.turns.append(turn(TurnPlan(key="d:roster", round=1, step=0, phase=Phase.ROSTER, persona_key="moderator"),
                        data=ANSWERS))
    run(s)
    s.discussion.round = 2
    assert single(engine.next_step(s)).phase == Phase.OPENING  # another round: the same question
    question.open_new(s.discussion)  # *Different topic*
    asked = single(engine.next_step(s))
    assert (asked.key, asked.phase, asked.round) == ("d:question:r2", Phase.QUESTION, 2)


def test_a_finished_roster_that_seated_nobody_is_never_written_again() -> None:
    s = moderated(personas=list(FIXED))
    roster = single(engine.next_step(s))
    s.turns.append(turn(roster, TurnStatus.SKIPPED, text=""))
    assert engine.next_step(s) == Idle()


def test_asked_to_review_the_roster_people_see_it_before_the_first_round_and_start_it_once() -> None:
    s = moderated(pending="confirm")
    step = engine.next_step(s)
    assert step == Transition(status=Status.AWAITING_CONFIRMATION, pending="", notice="roster")
    assert posts.transition_notice(step.notice, s) is not None
    apply(s, step)
    s.discussion.status = Status.RUNNING  # Start pressed
    assert single(engine.next_step(s)).phase == Phase.OPENING


def apply(s: State, step: Transition) -> None:
    """What the driver keeps of a transition: each field it sets replaces the discussion's."""
    for name in ("status", "pending", "round", "round_topic", "blocked_reason"):
        if (value := getattr(step, name)) is not None:
            setattr(s.discussion, name, value)


# each protocol's round --------------------------------------------------------------------------------------
def test_a_council_needs_no_roster_and_its_round_is_the_advisors_openings() -> None:
    first = single(engine.next_step(a_council(asked=False)))
    assert (first.phase, first.persona_key) == (Phase.QUESTION, "referee"), "the referee frames the question first"
    c = a_council()
    step = engine.next_step(c)
    assert isinstance(step, RunTurns)
    assert {(p.phase, p.persona_key) for p in step.turns} == {
        (Phase.ADVISOR_OPENING, a.key) for a in council.DEFAULT_ADVISORS}
    assert not engine.round_complete(c)
    c.turns += [turn(p) for p in step.turns]
    assert engine.round_complete(c)
    assert engine.next_step(c) == Transition(pending="final"), "one round by default, then the verdict"


# pause and resume -------------------------------------------------------------------------------------------
def test_resumed_between_rounds_it_asks_what_next_with_nothing_left_pending() -> None:
    s = moderated()
    run(s)
    s.discussion.pending, s.discussion.resume_count = "resume", 1
    reopening = single(engine.next_step(s))
    assert (reopening.key, reopening.persona_key) == ("d:reopen:1", "moderator")
    s.turns.append(turn(reopening))
    step = engine.next_step(s)
    assert step == Transition(status=Status.WAITING, pending="", notice="next_action")


def test_resumed_straight_into_a_round_it_reopens_then_runs_the_round() -> None:
    s = moderated(pending="resume_round", resume_count=1, round=2)
    reopening = single(engine.next_step(s))
    assert reopening.phase == Phase.REOPENING
    s.turns.append(turn(reopening))
    step = engine.next_step(s)
    assert step == Transition(pending="")
    apply(s, step)
    assert single(engine.next_step(s)).phase == Phase.OPENING


def test_the_pause_is_summed_up_by_the_historian() -> None:
    s = moderated(pending="pause")
    summary = single(engine.next_step(s))
    assert (summary.key, summary.persona_key) == ("d:pause:0", "historian")


# a check someone asked for ---------------------------------------------------------------------------------
def asked_check(status: TurnStatus = TurnStatus.PLANNED) -> Turn:
    plan = TurnPlan(key=factcheck.requested_key("d", "d:r1:s1:e0"), round=1, step=factcheck.REQUESTED_STEP,
                    phase=Phase.FACT_CHECK, persona_key=FACT_CHECKER.key)
    return turn(plan, status, text="")


def test_a_check_someone_asked_for_runs_whatever_the_discussion_does_unless_it_was_stopped() -> None:
    for status in (Status.WAITING, Status.RUNNING, Status.PAUSED, Status.DONE):
        s = moderated([asked_check()], status=status)
        step = engine.next_step(s)
        assert isinstance(step, RunTurns) and [p.key for p in step.turns] == ["d:check:d:r1:s1:e0"], status
    assert engine.next_step(moderated([asked_check()], status=Status.STOPPED)) == Idle()
    assert engine.next_step(moderated([asked_check(TurnStatus.DONE)], status=Status.WAITING)) == Idle()


# what people are offered next -------------------------------------------------------------------------------
def test_the_next_topics_offered_are_the_latest_syntheses_even_when_later_turns_carry_data() -> None:
    synthesis = TurnPlan(key="d:r1:s5:moderator", round=1, step=5, phase=Phase.ROUND_SYNTHESIS,
                         persona_key="moderator")
    statement = TurnPlan(key="d:r2:s1:e0", round=2, step=1, phase=Phase.STATEMENT, persona_key="e0")
    s = moderated([turn(synthesis, data={"next_topic_suggestions": ["costs", "risks"]}),
                   turn(statement, data={"stance": "yes", "label": "for"})])
    assert engine.suggestions(s) == ["costs", "risks"]


def test_a_synthesis_that_suggested_nothing_offers_nothing() -> None:
    synthesis = TurnPlan(key="d:r1:s5:moderator", round=1, step=5, phase=Phase.ROUND_SYNTHESIS,
                         persona_key="moderator")
    assert engine.suggestions(moderated([turn(synthesis, data={"summary": "short"})])) == []


# when a failed step stops the discussion --------------------------------------------------------------------
def statements(s: State) -> list[TurnPlan]:
    """The round's statements, after an opening that was written."""
    opening = single(engine.next_step(s))
    s.turns.append(turn(opening))
    step = engine.next_step(s)
    assert isinstance(step, RunTurns) and {p.phase for p in step.turns} == {Phase.STATEMENT}
    return step.turns


def failed(plan: TurnPlan, attempts: int = 2, error: str = "timed out") -> Turn:
    return turn(plan, TurnStatus.FAILED, text="", attempts=attempts, error=error)


def test_a_failed_essential_turn_blocks_at_once_with_its_error_or_the_models_silence() -> None:
    s = moderated()
    opening = single(engine.next_step(s))
    assert engine.should_block(s, [failed(opening, attempts=1, error="rate limited")]) == (
        "Moderator could not write the opening: rate limited")
    assert engine.should_block(s, [failed(opening, attempts=1, error="")]) == (
        "Moderator could not write the opening: the model did not answer")


def test_a_failed_answer_to_a_person_never_blocks() -> None:
    s = moderated(status=Status.WAITING)
    s.humans = [human(1)]
    answer = failed(single(engine.next_step(s)))
    s.turns.append(answer)
    assert engine.should_block(s, [answer]) == ""


def test_one_expert_failing_again_is_skipped_and_the_round_goes_on() -> None:
    s = moderated()
    plans = statements(s)
    s.turns += [turn(p) for p in plans[1:]]
    again = failed(plans[0])  # its nudged re-run, the step's only turn this time
    s.turns.append(again)
    assert engine.should_block(s, [again]) == ""


def test_half_a_step_failing_is_not_most_of_it() -> None:
    s = moderated()
    plans = statements(s)
    step = [failed(p) for p in plans[:2]] + [turn(p) for p in plans[2:]]
    s.turns += step
    assert engine.should_block(s, step) == ""
    step[2] = failed(plans[2])
    assert engine.should_block(s, step) == "most of this step failed (Expert 0, Expert 1, Expert 2): timed out"


def test_a_third_turn_lost_in_one_round_blocks() -> None:
    s = moderated()
    plans = statements(s)
    s.turns += [turn(p, TurnStatus.SKIPPED, text="") for p in plans[:2]] + [turn(p) for p in plans[2:]]
    rebuttals = [TurnPlan(key=f"d:r1:s3:{e.key}", round=1, step=3, phase=Phase.REBUTTAL, persona_key=e.key)
                 for e in EXPERTS]
    again = failed(rebuttals[0])
    s.turns += [again, *(turn(p) for p in rebuttals[1:])]
    assert engine.should_block(s, [again]) == "repeated failures this round (Expert 0): timed out"


def test_turns_lost_in_an_earlier_round_do_not_count_against_this_one() -> None:
    s = moderated()
    plans = statements(s)
    s.turns += [turn(p, TurnStatus.SKIPPED, text="") for p in plans[:2]] + [turn(p) for p in plans[2:]]
    s.discussion.round = 2
    plans = statements(s)
    s.turns += [turn(p) for p in plans[1:]]
    again = failed(plans[0])
    s.turns.append(again)
    assert engine.should_block(s, [again]) == ""
