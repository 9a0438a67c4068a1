"""Ballots only from personas who voted in their own turn: nobody (the moderator, the historian) fills in the
others' (through the service, offline model at the port)."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.deliberation import stances
from core.deliberation.schemas import RoundSynthesis
from core.models import Phase, Role
from core.ports import Completion, Prompt, T, TextSink, Usage
from tests.core.conftest import settle, start
from tests.fakes.llm import ScriptedLLM


class ModeratorPlacesEveryone(ScriptedLLM):
    """Every persona says only for/against/undecided, except Amara, whose round-2 rebuttal names the first
    proposal by its id; the moderator's synthesis claims a position for everyone anyway."""

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        done = await super().complete(prompt, on_text)
        if "\nStance: " not in done.text:
            return done
        body = done.text.rsplit("\n", 1)[0]
        amara = prompt.purpose.persona == "Amara Okafor" and prompt.purpose.phase == Phase.REBUTTAL and \
            prompt.purpose.round == 2
        line = "Stance: O1 — run it" if amara else "Stance: for — broadly"
        return done.model_copy(update={"text": f"{body}\n{line}"})

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        value, usage = await super().structured(prompt, schema)
        if isinstance(value, RoundSynthesis):
            value = value.model_copy(update={"positions": [  # type: ignore[assignment]
                {"persona": n, "proposal": 2} for n in prompt.purpose.others]})
        return value, usage


@pytest.fixture
def llm() -> ScriptedLLM:
    return ModeratorPlacesEveryone()


async def test_only_a_persona_whose_own_stance_names_an_option_has_a_ballot(app: App, llm: ScriptedLLM) -> None:
    reply = await app.service.handle(start(rounds=2))
    await settle(app)
    async with app.store.tx() as tx:
        round_poll = next(p for p in await tx.polls(reply.discussion_id) if not p.final and p.round == 2)
        ai = [b for b in await tx.ballots(round_poll.id) if b.is_ai]
    assert [(b.voter_name, round_poll.option_ids[b.choice]) for b in ai] == [("Amara Okafor", "O1")]
    synthesis = next(p for p in llm.prompts if p.purpose.phase == Phase.ROUND_SYNTHESIS)
    assert "proposal they support" not in synthesis.instruction


async def test_every_persona_ballot_is_that_personas_own_stance(app: App) -> None:
    reply = await app.service.handle(start(rounds=2))  # the plain offline model: stances that name proposals
    await settle(app)
    async with app.store.tx() as tx:
        personas = {p.key: p for p in await tx.personas(reply.discussion_id)}
        turns = await tx.turns(reply.discussion_id)
        polls = await tx.polls(reply.discussion_id)
        ballots = [(p, b) for p in polls for b in await tx.ballots(p.id) if b.is_ai]
    assert ballots, "the offline personas name proposals"
    for poll, b in ballots:
        key = b.voter_id.removeprefix("persona:")
        assert personas[key].role not in (Role.MODERATOR, Role.HISTORIAN)
        own = [t for t in turns if t.persona_key == key and t.round == poll.round and stances.has_stance(t)]
        assert own and own[-1].data is not None and own[-1].data["choice"] == poll.option_ids[b.choice]


async def test_the_places_of_a_meetings_ranking_carry_no_persona_ballots(app: App) -> None:
    reply = await app.service.handle(start(flow="meeting", rounds=2))
    await settle(app)
    async with app.store.tx() as tx:
        polls = await tx.polls(reply.discussion_id)
        ai = [b for p in polls for b in await tx.ballots(p.id) if b.is_ai]
    assert len(polls) >= 2 and ai == [], "an owner's first choice is not their #2 or #3"
