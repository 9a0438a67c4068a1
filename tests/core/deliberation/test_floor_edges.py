"""The open floor's rules at their edges, on hand-built states: what each turn's task asks for, sentence by
sentence, and the other edges its rule tests leave open."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation.flows.base import State, StepSpec, TurnPlan, turn_key
from core.deliberation.flows.open_floor import LEAD, OpenFloor, spoken
from core.models import Discussion, FlowOptions, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
D = Discussion(id="d", topic="Ban cars downtown?", flow="open", experts=4, created_at=T0, updated_at=T0)
ADA, BEN, CAL = (Persona(key=k, name=n, role=Role.EXPERT, title="t", expertise=["x"])
                 for k, n in (("ada", "Ada Quill"), ("ben", "Ben Rook"), ("cal", "Cal Moss")))


def _speech(who: Persona, step: int) -> Turn:
    at = T0 + timedelta(minutes=step)
    return Turn(key=turn_key(D, 1, step, who.key), discussion_id="d", round=1, step=step, phase=Phase.SPEECH,
                persona_key=who.key, status=TurnStatus.DONE, text=f"{who.name} speaks", created_at=at, finished_at=at)


def _task(phase: Phase, who: Persona, state: State, step: int = 0) -> str:
    plan = TurnPlan(key=turn_key(state.discussion, 1, step, who.key), round=1, step=step, phase=phase,
                    persona_key=who.key)
    return OpenFloor().task(state, plan, who)


ROSTER = ("Plan 4 participants for an open discussion of the topic. Find the professional domain and the axes people "
          "really disagree on. For each slot write a 1-2 sentence brief that sets them apart (career path, seniority, "
          "background), a name culture (all different, from different regions), the position they start from, and "
          "their tone. Spread the positions across the axes. List the answers the topic asks to choose between as its "
          "options, each worded as an action (for a yes/no question both answers: what to do, and what to do "
          "instead): every stance names one.")


def test_the_roster_plans_the_participants_and_the_options_and_adds_what_the_team_asked_for() -> None:
    assert _task(Phase.ROSTER, LEAD, State(discussion=D, personas=[LEAD], turns=[])) == ROSTER
    asked = D.model_copy(update={"roles": ["a skeptic", "a shop owner"],
                                 "options": FlowOptions(hints=["cost vs speed", "old vs young"]), "mode": "debate"})
    task = _task(Phase.ROSTER, LEAD, State(discussion=asked, personas=[LEAD], turns=[]))
    assert task == (f"{ROSTER} It is a pro/con debate: split the positions between for and against.\n"
                    "Controversy axes the team asked to include:\n<hint>\ncost vs speed\n</hint>\n"
                    "<hint>\nold vs young\n</hint>\n"
                    "Perspectives the team asked for:\n<role>\na skeptic\n</role>\n<role>\na shop owner\n</role>")


def test_a_slot_becomes_a_participant_who_fits_its_brief() -> None:
    slot = Persona(key="slot1", name="slot1", role=Role.EXPERT, title="A nurse", bias="for", thinking_style="blunt",
                   reply_tendency="name culture: Korean")
    task = _task(Phase.PERSONA, slot, State(discussion=D, personas=[LEAD, slot], turns=[]))
    assert task.startswith("Create the participant this slot describes: a realistic full name from the name culture "
                           "given, a short title, 2-4 areas of expertise, a thinking style, a natural bias and a reply "
                           "tendency that fit the brief, position and tone:\n<slot>\n")
    assert task.endswith("</slot>"), "no outlier: nothing after the brief"
    odd = slot.model_copy(update={"reply_tendency": "name culture: Korean; outlier"})
    assert _task(Phase.PERSONA, odd, State(discussion=D, personas=[LEAD, odd], turns=[])).endswith(
        "</slot> This participant is an outlier: an unusual background for this domain; give them a compelling "
        "career path.")


def test_a_bid_asks_how_urgently_and_for_the_point_and_whom_it_answers() -> None:
    task = _task(Phase.BID, ADA, State(discussion=D, personas=[LEAD, ADA, BEN], turns=[]), 1)
    assert task == ("Bid for the floor. How urgently do you need to speak next (1 = nothing new to add, 10 = crucial: "
                    "you were asked something, someone misstated your view, or you see the synthesis)? Give the point "
                    "you would make in one line and whom you would answer.")


RECORD = ("Record whether you build on earlier positions, whether you propose a synthesis, and any question you leave "
          "open for someone.")


def test_a_speech_makes_its_point_and_records_what_it_did() -> None:
    s = State(discussion=D, personas=[LEAD, ADA, BEN, CAL], turns=[_speech(ADA, 2)])
    first = _task(Phase.SPEECH, BEN, s, 4)
    assert first == ('You have the floor. Make your point, answering others ("Ada Quill", "Cal Moss") by name where '
                     f"you engage them. Stay under 180 words. {RECORD}")
    again = _task(Phase.SPEECH, ADA, s, 4)
    assert again == ('You have the floor. Make your point, answering others ("Ben Rook", "Cal Moss") by name where you '
                     "engage them. This is not your first speech: build on what you and the others said; do not open "
                     "a new topic. If you see where the group can converge, propose it. Stay under 135 words. "
                     f"{RECORD}")


def test_the_synthesis_sums_up_without_declaring_a_consensus() -> None:
    task = _task(Phase.FINAL_SYNTHESIS, LEAD, State(discussion=D, personas=[LEAD, ADA, BEN], turns=[]))
    assert task.startswith(
        "The floor is closed. Write the synthesis of the whole discussion: an executive summary of about 500 "
        "characters; insights with confidence, supporting evidence and dissenting views; agreements with their "
        "supporters; unresolved debates with each position and its advocates; open questions; and three to five "
        "recommended actions. Do not declare a consensus and do not vote for anyone: the tally of the participants' "
        "own recorded stances is added. Set `reads` to the kind of the computed verdict;")


def test_a_phase_the_floor_has_no_task_for_asks_to_speak_briefly() -> None:
    assert _task(Phase.OPENING, ADA, State(discussion=D, personas=[LEAD, ADA], turns=[])) == \
        "Speak briefly, in character."


def test_a_speech_by_one_no_longer_on_the_floor_still_counts_once() -> None:
    gone = Persona(key="dan", name="Dan Pike", role=Role.EXPERT, title="t", expertise=["x"])
    s = State(discussion=D, personas=[LEAD, ADA, BEN], turns=[_speech(gone, 2), _speech(ADA, 4)])
    assert spoken(s) == {"ada": 1, "ben": 0, "dan": 1}


def _bid(who: Persona, step: int) -> Turn:
    at = T0 + timedelta(minutes=step)
    return Turn(key=turn_key(D, 1, step, who.key), discussion_id="d", round=1, step=step, phase=Phase.BID,
                persona_key=who.key, status=TurnStatus.DONE, data={"urgency": 5}, created_at=at, finished_at=at)


def test_a_planned_speech_whose_speaker_left_the_floor_is_given_to_nobody() -> None:
    gone = Turn(key=turn_key(D, 1, 2, "dan"), discussion_id="d", round=1, step=2, phase=Phase.SPEECH,
                persona_key="dan", status=TurnStatus.PLANNED, created_at=T0)
    s = State(discussion=D, personas=[LEAD, ADA, BEN], turns=[_bid(ADA, 1), _bid(BEN, 1), gone])
    assert OpenFloor().steps(s)[-2:] == [StepSpec(1, Phase.BID, [ADA, BEN]), StepSpec(2, Phase.SPEECH, [])]
