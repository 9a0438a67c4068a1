"""A poll's persona rows count the personas the verdict counts: the Contrarian's stance is shown beside the count,
never as a ballot on a poll, so the panel and the verdict under it agree."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.models import Phase
from core.ports import Completion, Prompt, TextSink
from tests.core.conftest import settle, start
from tests.fakes.llm import ScriptedLLM


class ContrarianChoosesTheFirst(ScriptedLLM):
    """The Contrarian's stance names the question's first option, as a counted persona's would."""

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        done = await super().complete(prompt, on_text)
        if prompt.purpose.phase != Phase.COUNTERPOINT:
            return done
        return done.model_copy(update={"text": done.text.rsplit("\n", 1)[0] + "\nStance: O1 — contrary, yet here"})


@pytest.fixture
def llm() -> ContrarianChoosesTheFirst:
    return ContrarianChoosesTheFirst()


async def test_the_contrarian_has_no_ballot_on_a_poll_and_the_verdict_counts_the_same_personas(app: App) -> None:
    reply = await app.service.handle(start(rounds=1))
    await settle(app)
    async with app.store.tx() as tx:
        turns = await tx.turns(reply.discussion_id)
        polled = await tx.round_ballots(reply.discussion_id)
        personas = await tx.personas(reply.discussion_id)
    contrarian = next(t for t in turns if t.phase == Phase.COUNTERPOINT)
    assert contrarian.data is not None and contrarian.data["choice"] == "O1"  # its stance is read, and shown
    names = {p.name for p in personas if p.role.value == "contrarian"}
    for _, ballots in polled:
        assert not [b for b in ballots if b.is_ai and b.voter_name in names]
    counted = sum(1 for p in personas if p.role.value in ("expert", "cross_domain"))
    closing = next(t for t in turns if t.phase == Phase.FINAL_SYNTHESIS)
    assert f" of {counted};" in str((closing.data or {})["verdict"]).split("people:")[0]
