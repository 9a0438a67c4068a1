"""The open floor's rules one by one, on hand-built states: who takes part, who gets the floor, when it closes,
the steps of a round and each turn's task."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from core.deliberation.flows.base import State, StepSpec, TurnPlan, turn_key
from core.deliberation.flows.open_floor import (
    LEAD,
    OpenFloor,
    closed,
    participants,
    policy_met,
    seated,
    spoken,
    winner,
)
from core.models import Discussion, FlowOptions, HumanMessage, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
D = Discussion(id="d", topic="Ban cars downtown?", flow="open", created_at=T0, updated_at=T0)
ADA, BEN, CAL = (Persona(key=k, name=n, role=Role.EXPERT, title="t", expertise=["x"])
                 for k, n in (("ada", "Ada Quill"), ("ben", "Ben Rook"), ("cal", "Cal Moss")))
PEOPLE = [ADA, BEN, CAL]


def speech(who: Persona, step: int, at: datetime, round_: int = 1) -> Turn:
    return Turn(key=turn_key(D, round_, step, who.key), discussion_id="d", round=round_, step=step,
                phase=Phase.SPEECH, persona_key=who.key, status=TurnStatus.DONE, text=f"{who.name} speaks",
                created_at=at, finished_at=at)


def bids(step: int, at: datetime, **urgency: float) -> list[Turn]:
    return [Turn(key=turn_key(D, 1, step, k), discussion_id="d", round=1, step=step, phase=Phase.BID, persona_key=k,
                 status=TurnStatus.DONE, data={"urgency": u}, created_at=at, finished_at=at)
            for k, u in urgency.items()]


def said(text: str, at: datetime) -> HumanMessage:
    return HumanMessage(discussion_id="d", author_id="U1", author_name="Dana", text=text, created_at=at)


def state(turns: list[Turn], humans: list[HumanMessage] | None = None) -> State:
    return State(discussion=D, personas=PEOPLE, turns=turns, humans=humans or [])


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def test_the_highest_bid_wins_and_a_tie_goes_to_who_has_spoken_least_then_to_the_first_seated() -> None:
    assert winner(state(bids(2, at(1), ada=2, ben=5, cal=1)), 1, 2) == BEN
    spoke = [speech(ADA, 1, at(0))]
    assert winner(state([*spoke, *bids(2, at(1), ada=4, ben=4, cal=1)]), 1, 2) == BEN, "Ada has spoken"
    assert winner(state(bids(2, at(1), ada=4, ben=4, cal=4)), 1, 2) == ADA, "nobody has spoken: the first"
    # A bid without a figure counts as no urgency, not as a failed bid.
    no_figure = [*bids(2, at(1), ada=0, ben=0), Turn(
        key=turn_key(D, 1, 2, "cal"), discussion_id="d", round=1, step=2, phase=Phase.BID, persona_key="cal",
        status=TurnStatus.DONE, data={"why": "I have a point"}, created_at=at(1), finished_at=at(1))]
    assert winner(state(no_figure), 1, 2) == ADA


def test_a_person_naming_a_participant_since_the_last_speech_raises_that_bid() -> None:
    spoke = [speech(ADA, 1, at(0))]
    named = [said("Cal, what about deliveries?", at(1))]
    assert winner(state([*spoke, *bids(2, at(2), ada=1, ben=3, cal=1)], named), 1, 2) == CAL  # 1 + 3 beats 3
    before = [said("Cal, what about deliveries?", at(0) - timedelta(seconds=30))]
    assert winner(state([*spoke, *bids(2, at(2), ada=1, ben=3, cal=1)], before), 1, 2) == BEN, \
        "named before the last speech: that speech was the answer"
    at_the_speech = [said("Cal, what about deliveries?", at(0))]
    assert winner(state([*spoke, *bids(2, at(2), ada=1, ben=3, cal=1)], at_the_speech), 1, 2) == BEN
    after_the_bids = [said("Cal, what about deliveries?", at(3))]
    assert winner(state([*spoke, *bids(2, at(2), ada=1, ben=3, cal=1)], after_the_bids), 1, 2) == BEN, \
        "said after the bids were in: it raises the next one"
    as_the_bids_end = [said("Cal, what about deliveries?", at(2))]
    assert winner(state([*spoke, *bids(2, at(2), ada=1, ben=3, cal=1)], as_the_bids_end), 1, 2) == CAL
    # With no speech yet, anything people said before the bids counts.
    assert winner(state(bids(2, at(2), ada=1, ben=3, cal=1), named), 1, 2) == CAL


def test_nobody_speaks_twice_in_a_row_until_everyone_has_spoken_twice() -> None:
    once_each = [speech(ADA, 1, at(0)), speech(BEN, 3, at(2)), speech(CAL, 5, at(4))]
    assert winner(state([*once_each, *bids(6, at(5), ada=1, ben=1, cal=9)]), 1, 6) == ADA, "Cal just spoke"
    twice = [*once_each, speech(ADA, 7, at(6)), speech(BEN, 9, at(8)), speech(CAL, 11, at(10))]
    assert winner(state([*twice, *bids(12, at(11), ada=1, ben=1, cal=9)]), 1, 12) == CAL, "all heard twice"


def test_a_speech_already_planned_for_the_step_keeps_its_speaker() -> None:
    planned = Turn(key=turn_key(D, 1, 3, "cal"), discussion_id="d", round=1, step=3, phase=Phase.SPEECH,
                   persona_key="cal", created_at=at(2))
    assert winner(state([*bids(2, at(1), ada=1, ben=9, cal=1), planned]), 1, 2) == CAL
    later = planned.model_copy(update={"step": 5, "key": turn_key(D, 1, 5, "cal")})
    assert winner(state([*bids(2, at(1), ada=1, ben=9, cal=1), later]), 1, 2) == BEN, "another step's plan"
    a_bid = planned.model_copy(update={"phase": Phase.BID})
    assert winner(state([*bids(2, at(1), ada=1, ben=9, cal=1), a_bid]), 1, 2) == BEN, "a bid is not a speech"


def test_a_tie_goes_to_who_has_spoken_less_when_neither_spoke_last() -> None:
    spoke = [speech(ADA, 1, at(0)), speech(BEN, 3, at(2))]  # Ben spoke last: he sits out
    assert winner(state([*spoke, *bids(4, at(3), ada=4, ben=9, cal=4)]), 1, 4) == CAL, "Cal has not spoken"


def test_with_no_bid_in_the_floor_goes_to_who_has_spoken_least() -> None:
    assert winner(state(bids(2, at(1), ben=2)), 1, 2) == BEN, "a missing bid is passed over, not the end"
    spoke = [speech(ADA, 1, at(0)), speech(CAL, 3, at(2))]
    assert winner(state(spoke), 1, 4) == BEN, "every bid failed: who has spoken least"
    unfinished = [t.model_copy(update={"finished_at": None, "data": None}) for t in bids(4, at(3), ada=1, cal=1)]
    assert winner(state([*spoke, *unfinished]), 1, 4) == BEN


def slot(n: int, **fields: Any) -> Persona:
    return Persona(key=f"slot{n}", name=f"Participant {n}", role=Role.EXPERT, **{"title": "t", **fields})


def persona_turn(who: Persona, status: TurnStatus) -> Turn:
    return Turn(key=turn_key(D, 1, 0, who.key), discussion_id="d", round=1, step=0, phase=Phase.PERSONA,
                persona_key=who.key, status=status, created_at=T0)


def test_a_slot_takes_part_once_its_persona_is_written_or_while_it_may_still_be() -> None:
    assert seated(ADA) and seated(Persona(key="ada", name="Ada", role=Role.EXPERT, title="t")), "not a slot"
    assert not seated(slot(1)) and seated(slot(1, expertise=["transit"]))
    skipped, waiting, failed = slot(1), slot(2), slot(3)
    s = State(discussion=D, personas=[LEAD, skipped, waiting, failed],
              turns=[persona_turn(skipped, TurnStatus.SKIPPED), persona_turn(failed, TurnStatus.FAILED)])
    assert participants(s) == [waiting, failed], "a skipped slot leaves the floor; a failed one is tried again"


def test_each_speech_with_text_counts_once_for_its_speaker() -> None:
    silent = speech(CAL, 5, at(4)).model_copy(update={"text": ""})
    s = state([speech(ADA, 1, at(0)), speech(BEN, 3, at(2)), silent, speech(ADA, 7, at(6))])
    assert spoken(s) == {"ada": 2, "ben": 1, "cal": 0}


def talk(who: Persona, step: int, round_: int = 1, **data: Any) -> Turn:
    """A speech with what it recorded: it builds on earlier ones and proposes nothing unless told otherwise."""
    turn = speech(who, step, at(step), round_)
    turn.data = {"stance": "s", "label": "for", "builds_on_earlier": True, "proposes_synthesis": False, **data}
    return turn


TWICE_EACH = [talk(ADA, 2), talk(BEN, 4), talk(CAL, 6), talk(ADA, 8), talk(BEN, 10),
              talk(CAL, 12, proposes_synthesis=True)]


def test_the_floor_converges_unless_the_last_speech_leaves_a_question_open() -> None:
    assert policy_met(state(TWICE_EACH)), "no open question recorded at all"
    asked_before = [*TWICE_EACH[:4], talk(BEN, 10, open_question="Cal, who pays?"),
                    talk(CAL, 12, proposes_synthesis=True, open_question=" ")]
    assert policy_met(state(asked_before)), "Cal's speech after the question answered it"
    asked_last = [*TWICE_EACH[:5], talk(CAL, 12, proposes_synthesis=True, open_question="Ada, who pays?")]
    assert not policy_met(state(asked_last))


def with_cap(turns: list[Turn], cap: int, round_: int = 1) -> State:
    d = D.model_copy(update={"options": FlowOptions(max_speeches=cap), "round": round_})
    return State(discussion=d, personas=PEOPLE, turns=turns)


def test_the_floor_closes_at_the_speech_cap() -> None:
    three = [speech(ADA, 2, at(2)), speech(BEN, 4, at(4)), speech(CAL, 6, at(6))]
    assert closed(with_cap(three, 3)) and not closed(with_cap(three, 4))


def test_a_closed_floor_opens_no_new_bidding_but_finishes_the_bidding_begun() -> None:
    three = [speech(ADA, 2, at(2)), speech(BEN, 4, at(4)), speech(CAL, 6, at(6))]
    assert OpenFloor().steps(with_cap(three, 3, round_=2)) == []
    begun = [Turn(key=turn_key(D, 2, 1, p.key), discussion_id="d", round=2, step=1, phase=Phase.BID,
                  persona_key=p.key, status=TurnStatus.RUNNING, created_at=at(7)) for p in PEOPLE]
    assert OpenFloor().steps(with_cap([*three, *begun], 3, round_=2)) == [StepSpec(1, Phase.BID, PEOPLE)]


def test_a_closed_floor_opens_no_new_bidding_after_a_person_was_answered_or_a_claim_checked() -> None:
    """An answer to a person (step 99) and a check someone asked for (step 90) are turns of the round past any bid
    step: taken for bidding begun, they kept a closed floor bidding, and speaking past its cap."""
    three = [speech(ADA, 2, at(2)), speech(BEN, 4, at(4)), speech(CAL, 6, at(6))]
    for phase, step in ((Phase.ANSWER, 99), (Phase.FACT_CHECK, 90)):
        aside = Turn(key=f"d:aside{step}", discussion_id="d", round=2, step=step, phase=phase, persona_key="moderator",
                     status=TurnStatus.DONE, text="Noted.", created_at=at(7), finished_at=at(7))
        assert OpenFloor().steps(with_cap([*three, aside], 3, round_=2)) == [], phase


def test_the_floor_lead_writes_outside_the_rounds_and_without_one_nobody_does() -> None:
    assert OpenFloor().writer(State(discussion=D, personas=[LEAD, *PEOPLE], turns=[]), Phase.FINAL_SYNTHESIS) == LEAD
    assert OpenFloor().writer(state([]), Phase.FINAL_SYNTHESIS) is None


def plan(phase: Phase, who: str, round_: int = 1, step: int = 0, reply_to: int | None = None) -> TurnPlan:
    return TurnPlan(key=turn_key(D, round_, step, who), round=round_, step=step, phase=phase, persona_key=who,
                    reply_to=reply_to)


def quoted(task: str, tag: str) -> list[str]:
    """What a task quotes under a tag (the team's and the roster's words are material, never framing)."""
    return re.findall(rf"<{tag}>\n(.*?)\n</{tag}>", task, re.S)


def roster_task(**fields: Any) -> str:
    d = D.model_copy(update=fields)
    return OpenFloor().task(State(discussion=d, personas=[LEAD], turns=[]), plan(Phase.ROSTER, "moderator"), LEAD)


def test_the_roster_is_planned_from_the_axes_and_perspectives_the_team_asked_for_and_split_in_a_debate() -> None:
    hints, roles = ["cost vs. safety", "who decides"], ["a delivery driver", "a shop owner"]
    asked = roster_task(options=FlowOptions(hints=hints), roles=roles, mode="debate")
    assert quoted(asked, "hint") == hints and quoted(asked, "role") == roles
    assert "for and against" in asked
    plain = roster_task()
    assert quoted(plain, "hint") == [] and quoted(plain, "role") == [] and "for and against" not in plain
    assert "Controversy axes" not in plain and "Perspectives the team asked" not in plain, "no empty headings"


def test_a_slots_persona_is_written_from_its_brief_and_an_outlier_is_told_so() -> None:
    brief = {"title": "A nurse turned city planner", "bias": "for a car-free centre", "thinking_style": "blunt"}
    usual, odd = slot(1, reply_tendency="name culture: Korean", **brief), \
        slot(2, reply_tendency="name culture: Ghanaian; outlier", **brief)
    s = State(discussion=D, personas=[LEAD, usual, odd], turns=[])
    task = OpenFloor().task(s, plan(Phase.PERSONA, "slot1"), usual)
    assert quoted(task, "slot") == ["brief: A nurse turned city planner\nposition: for a car-free centre\n"
                                    "tone: blunt\nname culture: Korean"]
    assert "outlier" not in task
    task = OpenFloor().task(s, plan(Phase.PERSONA, "slot2"), odd)
    assert quoted(task, "slot")[0].endswith("name culture: Ghanaian; outlier")
    assert "outlier" in task.split("</slot>", 1)[1], "told so outside the brief, not only inside it"


def test_a_bid_asks_how_urgently_on_a_scale_of_one_to_ten() -> None:
    task = OpenFloor().task(state([]), plan(Phase.BID, "ada", step=1), ADA)
    assert "urgently" in task and "1 = " in task and "10 = " in task


def test_a_speech_names_the_others_and_a_second_speech_builds_on_the_first_within_a_smaller_budget() -> None:
    s = state([speech(ADA, 2, at(2))])
    again = OpenFloor().task(s, plan(Phase.SPEECH, "ada", step=4), ADA)
    assert '"Ben Rook"' in again and '"Cal Moss"' in again and '"Ada Quill"' not in again
    assert "not your first speech" in again and "Stay under 135 words" in again, "180 words cut by a quarter"
    first = OpenFloor().task(s, plan(Phase.SPEECH, "ben", step=4), BEN)
    assert '"Ada Quill"' in first and '"Cal Moss"' in first and '"Ben Rook"' not in first
    assert "not your first speech" not in first and "Stay under 180 words" in first


def test_the_synthesis_is_given_the_verdict_with_each_participants_latest_stance_even_from_an_earlier_round() -> None:
    # Ada spoke only in round 1: her stance still counts, so all three are for (without it, two of three lean).
    turns = [talk(ADA, 2, choice="for"), talk(BEN, 2, round_=2, choice="for"), talk(CAL, 4, round_=2, choice="for")]
    s = State(discussion=D.model_copy(update={"round": 2}), personas=[LEAD, *PEOPLE], turns=turns)
    task = OpenFloor().task(s, plan(Phase.FINAL_SYNTHESIS, "moderator", round_=2), LEAD)
    assert "Computed verdict: CONSENSUS for" in task


def test_a_person_who_wrote_on_the_floor_is_answered_by_name() -> None:
    s = state([], [HumanMessage(id=7, discussion_id="d", author_id="U2", author_name="Priya", text="Deliveries?",
                                created_at=T0)])
    assert '"Priya"' in OpenFloor().task(s, plan(Phase.ANSWER, "ada", step=99, reply_to=7), ADA)
