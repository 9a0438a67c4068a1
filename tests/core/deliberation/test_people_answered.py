"""People are answered in every flow: a message in the thread gets the next fitting turn (the persona it names,
else the moderator, lead or referee), by name, even when it lands as the round's last turn is being written; what
stays unanswered is listed as an open question (through the service, offline model at the port)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.wiring import App
from core.control import commands as c
from core.models import Phase, Status, TurnStatus
from core.showing.export import export
from core.showing.filing import artifacts
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

# flow, start options, the phase during which the person writes (the round's last turn), who should answer
CASES: list[tuple[str, dict[str, Any], Phase, str, str]] = [
    ("council", {"rounds": 1}, Phase.ADVISOR_OPENING, "What does this cost us?", "Referee"),
    ("council", {"rounds": 2}, Phase.ADVISOR_FINAL, "Skeptic, what worries you most?", "Skeptic"),
    ("meeting", {"rounds": 2}, Phase.RANKED_VOTE, "What does this cost us?", "Moderator"),
    ("open", {"rounds": 1, "experts": 2}, Phase.SPEECH, "What does this cost us?", "Floor Lead"),
    ("moderated", {"rounds": 1}, Phase.ROUND_SYNTHESIS, "What does this cost us?", "Moderator"),
    ("moderated", {"rounds": 1}, Phase.STATEMENT, "Kenji Watanabe, is the pager load real?", "Kenji Watanabe"),
]


@pytest.mark.parametrize(("flow", "options", "phase", "text", "answerer"), CASES,
                         ids=[f"{c[0]}-{c[2].value}-{c[4]}" for c in CASES])
async def test_a_persons_message_is_answered_by_name_in_every_flow(
    app: App, chat: RecordingChat, llm: ScriptedLLM, flow: str, options: dict[str, Any], phase: Phase, text: str,
    answerer: str,
) -> None:
    started: list[str] = []
    llm.on_phase[phase] = lambda: app.service.handle(c.PostHumanMessage(
        **C1, discussion_id=started[0], text=text, event_id="Ev1", user_id="U7", user_name="Rosa"))
    started.append((await app.service.handle(start(topic="Should we rewrite billing?", flow=flow,
                                                   **options))).discussion_id)
    await settle(app)
    d = await discussion(app, started[0])
    assert d.status == Status.DONE
    async with app.store.tx() as tx:
        [message] = await tx.human_messages(d.id)
        answers = [t for t in await tx.turns(d.id) if t.reply_to == message.id]
        names = {p.key: p.name for p in await tx.personas(d.id)}
    assert [(names[t.persona_key], t.status) for t in answers] == [(answerer, TurnStatus.PUBLISHED)]
    post = next(p for p in chat.posts(d.id) if p.key == answers[0].key)
    assert "Rosa" in post.text, "the answer names them"
    final = next(t for t in await _turns(app, d.id) if t.phase == Phase.FINAL_SYNTHESIS)
    assert answers[0].finished_at and final.created_at >= answers[0].finished_at, "answered before the closing"


async def _turns(app: App, did: str) -> list:  # type: ignore[type-arg]
    async with app.store.tx() as tx:
        return await tx.turns(did)


async def test_a_message_nobody_could_answer_is_listed_as_an_open_question(app: App, chat: RecordingChat,
                                                                          llm: ScriptedLLM) -> None:
    llm.fail("Referee", Phase.ANSWER, times=5)
    started: list[str] = []
    llm.on_phase[Phase.ADVISOR_OPENING] = lambda: app.service.handle(c.PostHumanMessage(
        **C1, discussion_id=started[0], text="Who signs off the budget?", event_id="Ev2", user_id="U7",
        user_name="Rosa"))
    started.append((await app.service.handle(start(topic="Should we rewrite billing?", flow="council"))).discussion_id)
    await settle(app)
    d = await discussion(app, started[0])
    assert d.status == Status.DONE
    verdict = next(p.text for p in chat.posts(d.id) if p.kind == "synthesis")
    assert "**Open questions from people**" in verdict and "Rosa: Who signs off the budget?" in verdict


@pytest.mark.parametrize("flow", ["moderated", "council", "meeting", "open"])
async def test_a_message_written_during_the_closing_gets_no_answer_after_it(
    app: App, chat: RecordingChat, llm: ScriptedLLM, flow: str
) -> None:
    started: list[str] = []
    noted: list[str] = []

    async def write() -> None:
        reply = await app.service.handle(c.PostHumanMessage(
            **C1, discussion_id=started[0], text="Who signs off the budget?", event_id="Ev3", user_id="U7",
            user_name="Rosa"))
        noted.append(reply.text)

    llm.on_phase[Phase.FINAL_SYNTHESIS] = write
    started.append((await app.service.handle(start(topic="Should we rewrite billing?", flow=flow,
                                                   rounds=2 if flow == "meeting" else 1, experts=2))).discussion_id)
    await settle(app)
    d = await discussion(app, started[0])
    assert d.status == Status.DONE
    turns = await _turns(app, d.id)
    assert not [t for t in turns if t.phase == Phase.ANSWER], "an answer came after the closing"
    final = next(t for t in turns if t.phase == Phase.FINAL_SYNTHESIS)
    keys = chat.keys(d.id)
    after = [chat.by_key[k].post for k in keys[keys.index(final.key) + 1:]]
    assert not [p for p in after if p.persona is not None], "a persona spoke after the closing"
    assert noted and "open questions" in noted[0], "the person is told what becomes of their message"
    closing = chat.by_key[final.key].post.text
    assert "**Open questions from people**" in closing and "Rosa: Who signs off the budget?" in closing, closing
    # ... and it is: the closing's open questions, as filed, list it under the person's name.
    doc = await export(app.store, d.id, operator=True)
    assert doc is not None
    assert "- Rosa: Who signs off the budget?" in artifacts(doc)["open-questions.md"]


async def test_a_message_written_once_the_closing_is_written_is_told_it_is_filed_with_the_open_questions(
    app: App, chat: RecordingChat
) -> None:
    """The closing already written (it shows as the message is typed), the person is not promised an answer
    before it: the message is filed with the open questions the export keeps."""
    started: list[str] = []
    noted: list[str] = []
    shown = chat.publish

    async def publish(d: Any, post: Any) -> str:
        ref = await shown(d, post)
        if post.kind == "synthesis" and not noted:
            reply = await app.service.handle(c.PostHumanMessage(
                **C1, discussion_id=started[0], text="Who signs off the budget?", event_id="Ev4", user_id="U7",
                user_name="Rosa"))
            noted.append(reply.text)
        return ref

    chat.publish = publish  # type: ignore[method-assign]
    started.append((await app.service.handle(start(topic="Should we rewrite billing?", flow="council",
                                                   rounds=1))).discussion_id)
    await settle(app)
    d = await discussion(app, started[0])
    assert d.status == Status.DONE
    assert noted and "before the closing" not in noted[0] and "open questions" in noted[0], noted
    doc = await export(app.store, d.id, operator=True)
    assert doc is not None and "- Rosa: Who signs off the budget?" in artifacts(doc)["open-questions.md"]


@pytest.mark.parametrize(("rounds", "promised"), [(2, True), (1, False)], ids=["a-round-follows", "last-round"])
async def test_the_offline_answer_promises_a_next_round_only_when_one_follows(
    app: App, chat: RecordingChat, llm: ScriptedLLM, rounds: int, promised: bool,
) -> None:
    """Asked in round 1 of two, the answer takes the point into the next round; asked in the only round, it says
    the closing weighs it: the flow's next step decides, not the words."""
    started: list[str] = []
    llm.on_phase[Phase.STATEMENT] = lambda: app.service.handle(c.PostHumanMessage(
        **C1, discussion_id=started[0], text="What does this cost us?", event_id="Ev9", user_id="U7",
        user_name="Rosa"))
    started.append((await app.service.handle(start(topic="Should we rewrite billing?", flow="moderated",
                                                   rounds=rounds))).discussion_id)
    await settle(app)
    async with app.store.tx() as tx:
        [answer] = [t for t in await tx.turns(started[0]) if t.phase == Phase.ANSWER]
    assert answer.round == 1
    assert ("into the next round" in answer.text) is promised, answer.text
    assert ("closing synthesis" in answer.text) is not promised, answer.text
