"""A topic that is a question with answers puts those answers on the table as the first options, with ids, before
anyone speaks: round 1's stances name them by id (through the service, the model scripted at the port)."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.deliberation.schemas import RosterSpec
from core.models import Phase
from core.ports import Completion, Prompt, T, TextSink, Usage
from tests.core.conftest import settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

ANSWERS = ["Adopt trunk-based development", "Keep gitflow"]


class QuestionWithAnswers(ScriptedLLM):
    """The roster call lists the topic's two answers; every expert's round-1 stance names the second by its id."""

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        value, usage = await super().structured(prompt, schema)
        if isinstance(value, RosterSpec):
            value = value.model_copy(update={"options": ANSWERS})  # type: ignore[assignment]
        return value, usage

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        done = await super().complete(prompt, on_text)
        if "\nStance: " not in done.text or prompt.purpose.round != 1:
            return done
        return done.model_copy(update={"text": done.text.rsplit("\n", 1)[0] + "\nStance: O2 — branches rot"})


@pytest.fixture
def llm() -> ScriptedLLM:
    return QuestionWithAnswers()


async def test_the_answers_a_question_offers_are_the_first_options(app: App, chat: RecordingChat,
                                                                   llm: ScriptedLLM) -> None:
    reply = await app.service.handle(start(topic="Trunk-based development or gitflow?", rounds=1))
    await settle(app)
    openings = [p for p in llm.prompts if p.purpose.phase == Phase.STATEMENT and p.purpose.round == 1]
    assert openings and all("- O1: <option>" in p.instruction and "- O2: <option>" in p.instruction
                            for p in openings), "every expert sees the options with their ids before speaking"
    synthesis = next(p.text for p in chat.posts(reply.discussion_id) if p.title.endswith("Round synthesis")
                     or "Stances after round 1" in p.text)
    assert "**Verdict:** CONSENSUS: Keep gitflow [O2] — personas: Keep gitflow [O2]" in synthesis, synthesis
