"""A one-word topic gets one clarifying question before anything is spent; the answer, or "go", starts it."""

from __future__ import annotations

from bot.wiring import App
from core.control import commands as c
from core.models import Status
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


def answer(did: str, text: str, event: str = "Ev1") -> c.PostHumanMessage:
    return c.PostHumanMessage(**C1, discussion_id=did, text=text, event_id=event, user_id="U1", user_name="Dana")


async def test_a_one_word_topic_is_asked_about_once_and_the_answer_starts_it(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start(topic="Pricing?", flow="council", rounds=1, clarify=True))
    assert "asked one question in the thread" in reply.text
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.AWAITING_CONFIRMATION and llm.prompts == [], "nothing spent before the answer"
    assert any("what exactly should it decide" in p.text for p in chat.posts(d.id))
    await app.service.handle(answer(d.id, "Should the Pro plan cost 10% more from Q3?"))
    await settle(app)
    d = await discussion(app, d.id)
    assert d.status == Status.DONE and d.topic == "Pricing? — Should the Pro plan cost 10% more from Q3?"
    assert llm.prompts and all(p.purpose.topic == d.topic for p in llm.prompts)
    assert chat.posts(d.id)[0].title == d.topic, "the header shows the clearer topic"


async def test_go_starts_with_the_topic_as_it_is_and_clear_topics_are_never_asked_about(
    app: App, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start(topic="Rust", flow="council", rounds=1, clarify=True))
    await app.service.handle(answer(reply.discussion_id, "go"))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE and d.topic == "Rust"
    clear = await app.service.handle(start(topic="Adopt Rust?", flow="council", rounds=1, clarify=True))
    assert (await discussion(app, clear.discussion_id)).status == Status.RUNNING


async def test_a_topic_with_one_word_of_substance_is_asked_about_too(app: App, llm: ScriptedLLM) -> None:
    """"What about our roadmap?" names one thing and no question about it: as vague as a single word."""
    asked = {"What about our roadmap?": True, "The pricing": True, "Thoughts on hiring?": True,
             "Kanban or Scrum?": False, "Should we raise prices?": False}
    for n, (topic, vague) in enumerate(asked.items()):  # each by another person: the start limit is not the point
        reply = await app.service.handle(start(topic=topic, flow="council", rounds=1, clarify=True).model_copy(
            update={"user_id": f"U{n + 10}"}))
        assert ("asked one question in the thread" in reply.text) is vague, topic


async def test_only_the_starter_or_an_admin_answers_the_clarifying_question(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    """Anyone may reply in the thread, but the topic runs under the starter's name and budget."""
    reply = await app.service.handle(start(topic="Pricing?", flow="council", rounds=1, clarify=True))
    did = reply.discussion_id
    other = answer(did, "Should we make the Pro plan free for everyone?", "Ev2").model_copy(
        update={"user_id": "U2", "user_name": "Mallory"})
    said = await app.service.handle(other)
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.AWAITING_CONFIRMATION and d.topic == "Pricing?" and llm.prompts == []
    assert "for Dana (or a workspace admin) to answer" in said.text
    go = answer(did, "go", "Ev3").model_copy(update={"user_id": "U2", "user_name": "Mallory"})
    await app.service.handle(go)
    assert (await discussion(app, did)).status == Status.AWAITING_CONFIRMATION, "not even `go`"
    admin = answer(did, "Should the Pro plan cost 10% more from Q3?", "Ev4").model_copy(
        update={"user_id": "U3", "user_name": "Ines", "is_admin": True})
    await app.service.handle(admin)
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.DONE and d.topic == "Pricing? — Should the Pro plan cost 10% more from Q3?"
