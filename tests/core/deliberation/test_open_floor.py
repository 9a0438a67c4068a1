"""The open floor through the service (offline model at the port): it remembers every round, a failed speech
does not waste a round, and turns that post nothing leave nothing in the thread."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import commands as c
from core.deliberation.flows.open_floor import NOBODY_SPOKE
from core.deliberation.schemas import FloorSpeech
from core.models import Phase, Status, TurnStatus
from core.ports import Prompt, T, Usage
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


class NeverSettles(ScriptedLLM):
    """Every speech leaves a question open, so the floor runs all the rounds it was given; each speech says
    which round it was given in, so a test can look for it later."""

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        value, usage = await super().structured(prompt, schema)
        if isinstance(value, FloorSpeech):
            value = value.model_copy(update={"open_question": "Who pays for it?",  # type: ignore[assignment]
                                             "text": f"{value.text} [said in round {prompt.purpose.round}]"})
        return value, usage


@pytest.fixture
def llm() -> ScriptedLLM:
    return NeverSettles()


async def test_a_five_round_floor_carries_round_one_to_its_final_synthesis(app: App, llm: ScriptedLLM) -> None:
    reply = await app.service.handle(start(topic="Should the city ban cars downtown?", flow="open", experts=2,
                                           rounds=5))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE and d.round == 5
    final = next(p for p in llm.prompts if p.purpose.phase == Phase.FINAL_SYNTHESIS)
    seen = "\n".join(b.text for b in final.shared)
    assert all(f"[said in round {r}]" in seen for r in range(1, 6)), "every round reaches the final synthesis"
    last_speech = [p for p in llm.prompts if p.purpose.phase == Phase.SPEECH][-1]
    assert "[said in round 1]" in "\n".join(b.text for b in last_speech.shared), "later speeches see round 1"


async def test_a_failed_speech_is_retried_and_a_round_never_ends_empty(app: App, chat: RecordingChat,
                                                                       llm: ScriptedLLM) -> None:
    for name in ("Ji-woo Han", "Chidi Okeke"):
        llm.fail(name, Phase.SPEECH, times=1)
    reply = await app.service.handle(start(topic="Should the city ban cars downtown?", flow="open", experts=2,
                                           rounds=1))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    async with app.store.tx() as tx:
        turns = await tx.turns(d.id)
    spoken = [t for t in turns if t.phase == Phase.SPEECH and t.status == TurnStatus.PUBLISHED]
    assert d.status == Status.DONE and len(spoken) == 2, "each failed speech was tried again and given"
    nudged = {p.key.split(":nudge:")[0] for p in chat.posts(d.id) if p.kind == "notice" and ":nudge:" in p.key}
    assert nudged == {t.key for t in spoken}, "each failed speech is noted in the thread before it is tried again"


async def test_a_floor_where_nobody_can_speak_blocks_instead_of_synthesising_nothing(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    for name in ("Ji-woo Han", "Chidi Okeke"):
        llm.fail(name, Phase.SPEECH, times=100)
    reply = await app.service.handle(start(topic="Should the city ban cars downtown?", flow="open", experts=2,
                                           rounds=1))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    for _ in range(6):  # the starter skips every speech that fails: the floor is given to another bid each time
        assert d.status == Status.BLOCKED and d.blocked_reason != NOBODY_SPOKE, (d.status, d.blocked_reason)
        await app.service.handle(c.SkipTurns(**C1, discussion_id=d.id, user_id="U1", user_name="Dana"))
        await settle(app)
        d = await discussion(app, reply.discussion_id)
    # Every bid's speech skipped: the round ended with nobody heard, and stays blocked however often it is skipped.
    for _ in range(2):
        assert d.status == Status.BLOCKED and d.round == 1
        assert d.blocked_reason == NOBODY_SPOKE, d.blocked_reason
        await app.service.handle(c.SkipTurns(**C1, discussion_id=d.id, user_id="U1", user_name="Dana"))
        await settle(app)
        d = await discussion(app, reply.discussion_id)
    assert not [p for p in llm.prompts if p.purpose.phase == Phase.FINAL_SYNTHESIS], "no synthesis of nothing"
    assert not [p for p in chat.posts(d.id) if p.kind == "synthesis"]


async def test_bids_and_roster_slots_leave_nothing_in_the_thread(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start(topic="Should the city ban cars downtown?", flow="open", experts=3,
                                           rounds=1))
    await settle(app)
    async with app.store.tx() as tx:
        turns = await tx.turns(reply.discussion_id)
    silent = {t.key for t in turns if t.phase in (Phase.BID, Phase.PERSONA)}
    assert silent and not {key for _, _, key in chat.thinking_calls} & silent, "no 'is thinking' for silent turns"
    assert not silent & set(chat.keys(reply.discussion_id)), "nothing posted for bids and slots"


async def test_a_failed_bid_is_retried_quietly(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    llm.fail("Ji-woo Han", Phase.BID, times=1)
    llm.fail("Chidi Okeke", Phase.BID, times=2)
    reply = await app.service.handle(start(topic="Should the city ban cars downtown?", flow="open", experts=3,
                                           rounds=1))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE
    texts = [p.text for p in chat.posts(d.id)]
    assert not [t for t in texts if "Ji-woo Han" in t and ("nudging" in t or "could not respond" in t)]
    assert not [t for t in texts if "Chidi Okeke" in t and ("nudging" in t or "could not respond" in t)]
    async with app.store.tx() as tx:
        keys = {p.name: p.key for p in await tx.personas(d.id)}
        bids = {t.persona_key: t for t in await tx.turns(d.id) if t.phase == Phase.BID and (t.round, t.step) == (1, 1)}
    # Failed once: retried, and the second try's bid counts. Failed twice: skipped after its one retry.
    once, twice = bids[keys["Ji-woo Han"]], bids[keys["Chidi Okeke"]]
    assert (once.status, once.attempts, bool(once.data)) == (TurnStatus.DONE, 2, True)
    assert (twice.status, twice.attempts) == (TurnStatus.SKIPPED, 2)


async def test_a_roster_slot_that_cannot_be_filled_leaves_the_floor_to_the_others(app: App, chat: RecordingChat,
                                                                                  llm: ScriptedLLM) -> None:
    llm.fail("Participant 3", Phase.PERSONA, times=2)
    reply = await app.service.handle(start(topic="Should the city ban cars downtown?", flow="open", experts=3,
                                           rounds=1))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE, d.blocked_reason
    async with app.store.tx() as tx:
        speakers = {t.persona_key for t in await tx.turns(d.id) if t.phase == Phase.SPEECH and t.text}
    assert speakers and "slot3" not in speakers
