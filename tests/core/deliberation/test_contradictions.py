"""Nothing people see contradicts itself: one verdict, "no votes" never beside "split", no Historian where there is
none, no "answer the Contrarian" when the Contrarian was skipped, one label length, and no invented evidence."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import closings, flows, prompts, stances, verdicts
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.flows.meeting import MODERATOR
from core.deliberation.roster import FIXED
from core.deliberation.schemas import MeetingRecommendation
from core.models import Discussion, Persona, Phase, Role, Status, Turn, TurnStatus
from core.showing import posts

T0 = datetime(2026, 11, 2, tzinfo=UTC)


def discussion(flow: str, **kw: object) -> Discussion:
    return Discussion(id="d", topic="Should we rewrite billing?", flow=flow, created_at=T0, updated_at=T0,
                      **kw)  # type: ignore[arg-type]


def test_a_meeting_without_votes_says_so_and_never_calls_it_split() -> None:
    owners = [Persona(key=k, name=k.upper(), role=Role.OWNER) for k in "abc"]
    state = State(discussion=discussion("meeting", round=3), personas=[MODERATOR, *owners], turns=[])
    text, items = closings.recommendation("t", state, MeetingRecommendation(key_arguments=[], dissents=[],
                                                                             next_steps=[]),
                                          verdicts.of_round(state, 3, []))
    assert "no votes were cast" in text and items == []
    assert "split" not in text.lower(), text
    assert stances.verdict(["", "undecided"]).startswith("NO VERDICT")


@pytest.mark.parametrize("flow", ["council", "meeting", "open"])
def test_flows_without_a_historian_never_name_one(flow: str) -> None:
    d = discussion(flow, status=Status.RUNNING, pending="pause")
    seats = flows.get(flow).seats(d)
    shown = [posts.header_state(d), *(a.confirm for a in posts.header_controls(d.model_copy(update={"pending": ""}))),
             posts.next_action_post(d, []).text, *(a.confirm for a in posts.next_action_post(d, []).actions)]
    assert not [s for s in shown if "Historian" in s], shown
    writer = flows.get(flow).writer(State(discussion=d, personas=seats, turns=[]), Phase.RESUME_SUMMARY)
    assert writer is not None and writer.name in posts.header_state(d)


def test_the_moderated_flow_still_names_its_historian() -> None:
    d = discussion("moderated", status=Status.RUNNING, pending="pause")
    assert "Historian" in posts.header_state(d)


def test_experts_are_not_told_to_answer_a_contrarian_who_was_skipped() -> None:
    experts = [Persona(key="e1", name="Ana", role=Role.EXPERT)]
    d = discussion("moderated", round=1)
    skipped = Turn(key="d:r1:s2:contrarian", discussion_id="d", round=1, step=2, phase=Phase.COUNTERPOINT,
                   persona_key="contrarian", status=TurnStatus.SKIPPED, created_at=T0)
    state = State(discussion=d, personas=[*FIXED, *experts], turns=[skipped])
    plan = TurnPlan(key="d:r1:s3:e1", round=1, step=3, phase=Phase.REBUTTAL, persona_key="e1")
    task = flows.get("moderated").task(state, plan, experts[0])
    assert "Answer the Contrarian" not in task and "statements" in task
    spoke = skipped.model_copy(update={"status": TurnStatus.PUBLISHED, "text": "Is that really true?"})
    assert "Answer the Contrarian" in flows.get("moderated").task(state.__class__(
        discussion=d, personas=state.personas, turns=[spoke]), plan, experts[0])


def _all_prompt_text(flow: str, phase: Phase, persona: Persona, personas: list[Persona]) -> str:
    state = State(discussion=discussion(flow, round=1), personas=personas, turns=[])
    prompt = prompts.build(state, TurnPlan(key="k", round=1, step=0, phase=phase, persona_key=persona.key))
    return "\n".join(b.text for b in prompt.system) + "\n" + prompt.instruction


def test_one_label_length_in_every_prompt() -> None:
    owner = Persona(key="a", name="Ana", role=Role.OWNER, title="Billing")
    text = _all_prompt_text("meeting", Phase.PROPOSAL, owner, [MODERATOR, owner])
    assert "two to four words" not in text and "one or two words" not in text
    assert text.count(stances.LABEL_LENGTH) >= 2, "the rule and the stance line say the same"


@pytest.mark.parametrize(("flow", "phase", "role"), [("moderated", Phase.STATEMENT, Role.EXPERT),
                                                     ("council", Phase.ADVISOR_OPENING, Role.ADVISOR),
                                                     ("meeting", Phase.PROPOSAL, Role.OWNER),
                                                     ("open", Phase.SPEECH, Role.EXPERT)])
def test_every_flow_forbids_invented_evidence_and_asks_to_mark_unverified_claims(flow: str, phase: Phase,
                                                                                 role: Role) -> None:
    persona = Persona(key="a", name="Ana", role=role, title="Billing", expertise=["x"])
    text = _all_prompt_text(flow, phase, persona, [persona])
    assert "Never invent" in text and "ticket" in text and "(unverified)" in text
    assert "issue numbers" not in text, "no demand for evidence the model cannot look up"
