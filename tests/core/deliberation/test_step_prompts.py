"""The prompts of one step's turns (pure): they read one transcript, built once for the step, and each keeps its own
cache breakpoints whatever tier its siblings are asked on."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import prompts
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.roster import FIXED
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus
from core.ports import Block

T0 = datetime(2026, 11, 2, tzinfo=UTC)
ANA = Persona(key="e1", name="Ana", role=Role.EXPERT, title="Billing")


def state() -> State:
    d = Discussion(id="d", topic="Should we rewrite billing?", round=1, created_at=T0, updated_at=T0)
    said = Turn(key="d:r1:s1:e1", discussion_id="d", round=1, step=1, phase=Phase.STATEMENT, persona_key="e1",
                status=TurnStatus.PUBLISHED, text="Rewrite it in stages.", created_at=T0)
    return State(discussion=d, personas=[*FIXED, ANA], turns=[said])


def test_a_steps_turns_share_one_transcript_and_keep_their_own_breakpoints() -> None:
    s, transcripts = state(), dict[bool, list[Block]]()
    light = prompts.build(s, TurnPlan(key="d:r1:s2:moderator", round=1, step=2, phase=Phase.ROSTER,
                                      persona_key="moderator"), transcripts)
    medium = prompts.build(s, TurnPlan(key="d:r1:s2:e1", round=1, step=2, phase=Phase.REBUTTAL, persona_key="e1"),
                           transcripts)
    alone = prompts.build(s, TurnPlan(key="d:r1:s2:e1", round=1, step=2, phase=Phase.REBUTTAL, persona_key="e1"))
    assert list(transcripts) == [False], "built once for the step"
    assert [b.text for b in light.shared] == [b.text for b in medium.shared] == [b.text for b in alone.shared]
    assert not any(b.cache for b in light.shared), "a call on another tier writes no cache"
    assert medium.shared == alone.shared and medium.shared[-1] == Block(text=medium.shared[-1].text, cache=True)
