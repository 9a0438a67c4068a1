"""Ballots only from personas who voted in their own turn: nobody (the moderator, the historian) fills in the
others' (through the service, offline model at the port)."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.models import Phase
from core.ports import Completion, Prompt, TextSink
from tests.core.conftest import settle, start
from tests.fakes.llm import ScriptedLLM


class AmaraBacksTheTrial(ScriptedLLM):
    """Amara's rebuttal names the first proposal as her stance; every other persona says for/against/undecided."""

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        done = await super().complete(prompt, on_text)
        if prompt.purpose.persona == "Amara Okafor" and prompt.purpose.phase == Phase.REBUTTAL:
            body = done.text.rsplit("\n", 1)[0]
            return done.model_copy(update={"text": f"{body}\nStance: four-week reversible trial — run it"})
        return done


@pytest.fixture
def llm() -> ScriptedLLM:
    return AmaraBacksTheTrial()


async def test_only_a_persona_whose_own_stance_names_an_option_has_a_ballot(app: App, llm: ScriptedLLM) -> None:
    reply = await app.service.handle(start(rounds=1))
    await settle(app)
    async with app.store.tx() as tx:
        polls = await tx.polls(reply.discussion_id)
        ballots = {p.key: [b for b in await tx.ballots(p.id) if b.is_ai] for p in polls}
    round_poll = next(p for p in polls if not p.final)
    assert [(b.voter_name, round_poll.options[b.choice]) for b in ballots[round_poll.key]] == [
        ("Amara Okafor", "Run a four-week reversible trial")]
    final_poll = next(p for p in polls if p.final)
    assert ballots[final_poll.key] == [], "the historian fills in nobody's ballot"
    synthesis = next(p for p in llm.prompts if p.purpose.phase == Phase.ROUND_SYNTHESIS)
    assert "proposal they support" not in synthesis.instruction
