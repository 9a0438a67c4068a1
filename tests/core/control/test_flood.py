"""A thread flood through the real service: every prompt's people's part stays within its budget, and the flood
is noticed once in the thread."""

from __future__ import annotations

from bot.wiring import App
from core.control import commands as c
from core.control.people import MAX_HUMAN_CHARS
from core.deliberation import context
from tests.core.conftest import C1, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

NOTICE = "has written more here than the council reads from one person"


def reply(did: str, n: int, user: str = "U7", name: str = "Flo") -> c.PostHumanMessage:
    return c.PostHumanMessage(**C1, discussion_id=did, text=f"reply {n} " + "x" * (MAX_HUMAN_CHARS - 10),
                              event_id=f"Ev{user}{n}", user_id=user, user_name=name)


async def test_sixty_long_replies_by_one_member_are_noticed_once_and_bound_every_prompt(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    d = (await app.service.handle(start(flow="council", rounds=2))).discussion_id
    for n in range(60):
        await app.service.handle(reply(d, n))
    await app.service.handle(reply(d, 0, user="U8", name="Gus"))  # someone else's one message
    await settle(app)
    notices = [p for p in chat.posts(d) if NOTICE in p.text]
    assert len(notices) == 1 and notices[0].text.startswith("Flo "), [p.text for p in notices]
    later = [p for p in llm.prompts if any("<human" in b.text for b in p.shared)]
    assert later, "the council read the thread"
    for p in later:
        people = sum(len(b.text) for b in p.shared
                     if b.text.startswith("<human") or (b.text.startswith("(") and "earlier message" in b.text))
        assert people <= context.PEOPLE_CHARS, people


async def test_a_few_replies_are_not_a_flood(app: App, chat: RecordingChat) -> None:
    d = (await app.service.handle(start(flow="council", rounds=2))).discussion_id
    for n in range(2):
        await app.service.handle(reply(d, n))
    await settle(app)
    assert not any(NOTICE in p.text for p in chat.posts(d))
