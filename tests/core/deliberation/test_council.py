"""The council flow end to end through the service: advisors in rounds, the referee's verdict, stances."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control.service import UserError
from core.models import Phase, Status, TurnStatus
from core.showing.export import export
from core.showing.filing import artifacts
from tests.core.conftest import discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


async def test_a_two_round_council_gives_positions_then_final_positions_then_the_verdict(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start(flow="council", rounds=2))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE and d.flow == "council"
    async with app.store.tx() as tx:
        turns = await tx.turns(d.id)
        personas = await tx.personas(d.id)
    assert [p.name for p in personas] == ["Pragmatist", "Visionary", "Skeptic", "Referee"]
    by_round = {r: sorted(t.phase for t in turns if t.round == r and t.phase != Phase.FINAL_SYNTHESIS)
                for r in (1, 2)}
    assert by_round == {1: [Phase.ADVISOR_OPENING] * 3 + [Phase.QUESTION], 2: [Phase.ADVISOR_FINAL] * 3}
    assert all(t.status == TurnStatus.PUBLISHED for t in turns)
    # No roster call and no moderator: the referee's question, three advisors x two rounds, then one verdict.
    assert [p.purpose.phase for p in llm.prompts].count(Phase.FINAL_SYNTHESIS) == 1 and len(llm.prompts) == 8
    assert llm.prompts[0].purpose.phase == Phase.QUESTION and llm.prompts[0].tier == "light"
    verdict = next(p for p in chat.posts(d.id) if p.kind == "synthesis")
    poll = chat.posts(d.id)[-1]  # people vote in a council too, on the same ids the advisors chose from
    # The referee's question put the topic's two answers on the table: advisors and people choose from them.
    assert poll.kind == "poll" and poll.poll is not None
    assert poll.poll.options == ["Move to trunk-based development", "Stay as we are"]
    assert verdict.kind == "synthesis" and verdict.text.startswith("**Referee's reading.**")
    assert "**Stances after round 2**" in verdict.text and "**Verdict:**" in verdict.text
    for name in ("Pragmatist", "Visionary", "Skeptic"):
        assert f"- {name}: **" in verdict.text
    # The final round's prompts carry the final-position task and see round 1.
    final = [p for p in llm.prompts if p.purpose.phase == Phase.ADVISOR_FINAL]
    assert all("what held firm" in p.instruction for p in final)
    assert all("Opening position]" in "\n".join(b.text for b in p.shared) for p in final)

    doc = await export(app.store, d.id)
    assert doc is not None and doc["discussion"]["flow"] == "council"
    advisor_turns = [t for t in doc["turns"] if t["kind"].startswith("advisor_")]
    assert advisor_turns and all(t["stance"] and t["stance"]["label"] for t in advisor_turns)
    assert "Referee's reading" in artifacts(doc)["synthesis.md"]


async def test_sequential_advisors_see_the_ones_before_them_and_parallel_ones_do_not(
    app: App, llm: ScriptedLLM
) -> None:
    await app.service.handle(start(flow="council", style="sequential"))
    await settle(app)
    openings = [p for p in llm.prompts if p.purpose.phase == Phase.ADVISOR_OPENING]
    seen = ["\n".join(b.text for b in p.shared).count("Opening position]") for p in openings]
    assert seen == [0, 1, 2]
    llm.prompts.clear()
    await app.service.handle(start(flow="council", style="parallel"))
    await settle(app)
    openings = [p for p in llm.prompts if p.purpose.phase == Phase.ADVISOR_OPENING]
    assert ["\n".join(b.text for b in p.shared).count("Opening position]") for p in openings] == [0, 0, 0]


async def test_debate_defaults_to_three_rounds_with_cross_rebuttals_and_refuses_one(
    app: App, llm: ScriptedLLM
) -> None:
    with pytest.raises(UserError, match="at least 2 rounds"):
        await app.service.handle(start(flow="council", style="debate", rounds=1))
    reply = await app.service.handle(start(flow="council", style="debate"))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.auto_rounds == 3 and d.status == Status.DONE
    phases = [p.purpose.phase for p in llm.prompts]
    assert phases.count(Phase.ADVISOR_REBUTTAL) == 3 and phases.count(Phase.ADVISOR_FINAL) == 3
    rebuttal = next(p for p in llm.prompts if p.purpose.phase == Phase.ADVISOR_REBUTTAL)
    assert "Answer each of" in rebuttal.instruction and "200-300 words" in rebuttal.instruction


async def test_roles_override_the_advisors_and_tiers_choose_the_models(app: App, llm: ScriptedLLM) -> None:
    await app.service.handle(start(flow="council", roles=["Security: threat models", "Finance"], tier="medium"))
    await settle(app)
    advisors = {p.purpose.persona: p.tier for p in llm.prompts if p.purpose.phase == Phase.ADVISOR_OPENING}
    assert advisors == {"Security": "medium", "Finance": "medium"}
    verdict = next(p for p in llm.prompts if p.purpose.phase == Phase.FINAL_SYNTHESIS)
    assert verdict.tier == "heavy" and verdict.purpose.persona == "Referee"
    llm.prompts.clear()
    await app.service.handle(start(flow="council", tier="heavy"))
    await settle(app)
    # Framing the question is bookkeeping, on the light model like a roster; every seat's turn is heavy.
    assert {p.tier for p in llm.prompts if p.purpose.phase != Phase.QUESTION} == {"heavy"}


async def test_a_discussion_speaks_the_language_asked_for(app: App, llm: ScriptedLLM) -> None:
    await app.service.handle(start(flow="council", lang="German"))
    await settle(app)
    assert all("Write in German" in p.instruction for p in llm.prompts)
    llm.prompts.clear()
    await app.service.handle(start(topic="¿Deberíamos adoptar el desarrollo basado en trunk?", flow="council"))
    await settle(app)
    assert all("language the topic is written in" in p.instruction for p in llm.prompts)


async def test_options_that_do_not_apply_to_the_flow_are_named_in_a_warning(app: App) -> None:
    reply = await app.service.handle(start(flow="meeting", style="debate", hints=["cost"], tier="medium"))
    assert reply.discussion_id and "⚠️ Ignored: `--style debate` applies to the council only" in reply.text
    assert "`--hints` applies to the open floor only" in reply.text and "--tier" not in reply.text
    plain = await app.service.handle(start(flow="council", rounds=1))
    assert "Ignored" not in plain.text
