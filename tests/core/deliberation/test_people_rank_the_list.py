"""People rank the moderator's whole list, whatever the owners' ballots named: owners whose answers name none of
the options leave the people a full menu, and the people's ranking closes beside an owners' tally of nothing."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control.replies import UserError
from core.deliberation.schemas import RankedItem, RankedVote
from core.ports import Prompt, T, Usage
from tests.core.conftest import C1, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


class OwnersOffTheList(ScriptedLLM):
    """Every owner's ranking names things nobody put on the list."""

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        if schema is not RankedVote:
            return await super().structured(prompt, schema)
        self.prompts.append(prompt)
        vote = RankedVote(ranking=[RankedItem(item="Option 2", why="x"), RankedItem(item="the second one", why="y")],
                          stance="mine", label="Option 2")
        return vote, Usage(model="offline")  # type: ignore[return-value]


@pytest.fixture
def llm() -> OwnersOffTheList:
    return OwnersOffTheList()


async def test_owners_naming_no_option_still_leave_people_the_whole_list_to_rank(
        app: App, chat: RecordingChat, llm: OwnersOffTheList) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    did = reply.discussion_id
    async with app.store.tx() as tx:
        turns = await tx.turns(did)
        places = [p for p in await tx.polls(did) if ":rank" in p.key]
    fixed = next(t.data["listed"] for t in turns if t.data and t.data.get("listed") and t.phase.value == "options")
    assert len(places) == 3 and all(p.option_ids == [o["id"] for o in fixed][:5] for p in places)
    # Two people rank; the starter closes the ranking; the owners' ballots stand beside theirs, counted as none.
    first, second = places[0], places[1]
    await app.service.handle(c.CastBallot(**C1, poll_id=first.id, choice=0, user_id="U2", user_name="Sam"))
    await app.service.handle(c.CastBallot(**C1, poll_id=second.id, choice=1, user_id="U2", user_name="Sam"))
    await app.service.handle(c.CastBallot(**C1, poll_id=first.id, choice=1, user_id="U3", user_name="Ria"))
    await app.service.handle(c.ClosePoll(**C1, poll_id=first.id, user_id="U1", user_name="Dana"))
    await settle(app)
    [closed] = [p.text for p in chat.posts(did) if "people's ranking beside the owners'" in p.text]
    assert "_2 people ranked" in closed
    verdict = closed.split("**Final verdict:** ")[1]
    assert verdict.startswith("NO VERDICT") and " of 2" in verdict.split("people:")[1]  # Sam and Ria, once each


async def test_the_same_option_for_two_places_is_refused_with_a_message(
        app: App, chat: RecordingChat, llm: OwnersOffTheList) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    did = reply.discussion_id
    async with app.store.tx() as tx:
        first, second = [p for p in await tx.polls(did) if ":rank" in p.key][:2]
    await app.service.handle(c.CastBallot(**C1, poll_id=first.id, choice=0, user_id="U2", user_name="Sam"))
    with pytest.raises(UserError) as refused:
        await app.service.handle(c.CastBallot(**C1, poll_id=second.id, choice=0, user_id="U2", user_name="Sam"))
    assert str(refused.value), "the refusal says why"
    async with app.store.tx() as tx:
        assert [b.voter_id for b in await tx.ballots(second.id) if not b.is_ai] == []  # nothing was recorded
    # Another option for the second place is taken.
    await app.service.handle(c.CastBallot(**C1, poll_id=second.id, choice=1, user_id="U2", user_name="Sam"))
