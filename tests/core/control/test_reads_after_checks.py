"""Permission before any read, through the service: the roster and the next round's suggestions are read only for
someone who may see and act on the discussion, and every poll a person may not see answers the same words."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control.permissions import Refused
from core.control.replies import UserError
from core.models import NextAction, Poll
from tests.core.conftest import settle

HERE = {"platform": "console", "workspace": "T1", "in_channel": "C1"}
ELSEWHERE = {"platform": "console", "workspace": "T1", "in_channel": "C2"}
OTHER_WORKSPACE = {"platform": "console", "workspace": "T2", "in_channel": "C1"}
NO_POLL = "I can't find that poll"


async def waiting(app: App, **kw: object) -> str:
    did = (await app.service.handle(c.StartDiscussion(topic="Trunk-based development?", channel="C1",
                                                      user_id="U1", user_name="Dana", **HERE, **kw))).discussion_id  # type: ignore[arg-type]
    await settle(app)
    return did


async def open_poll(app: App, did: str) -> Poll:
    async with app.store.tx() as tx:
        return next(p for p in await tx.polls(did) if not p.closed)


async def test_poll_errors_read_the_same_for_every_poll_a_person_may_not_see(app: App) -> None:
    did = await waiting(app)
    poll = await open_poll(app, did)
    closed = (await app.service.handle(c.ClosePoll(poll_id=poll.id, user_id="U1", **HERE)))
    assert closed.text.startswith("Poll closed")
    await app.service.handle(c.ChooseNextAction(discussion_id=did, action=NextAction.ANOTHER_ROUND, user_id="U1",
                                                **HERE))
    await settle(app)
    fresh = await open_poll(app, did)
    answers = []
    for where in (ELSEWHERE, OTHER_WORKSPACE):
        for poll_id, choice in ((fresh.id, 0), (poll.id, 0), (fresh.id, 99), (987654, 0)):
            with pytest.raises(UserError) as refused:
                await app.service.handle(c.CastBallot(poll_id=poll_id, choice=choice, user_id="U2", **where))
            answers.append(str(refused.value))
            with pytest.raises(UserError) as refused:
                await app.service.handle(c.ClosePoll(poll_id=poll_id, user_id="U2", **where))
            answers.append(str(refused.value))
    assert len(set(answers)) == 1 and NO_POLL in answers[0], answers
    async with app.store.tx() as tx:
        assert await tx.ballots(fresh.id) == [b for b in await tx.ballots(fresh.id) if b.is_ai]
    # From the discussion's own channel the reasons differ, as they may.
    with pytest.raises(UserError, match="closed"):
        await app.service.handle(c.CastBallot(poll_id=poll.id, choice=0, user_id="U2", **HERE))
    with pytest.raises(UserError, match="not on this poll"):
        await app.service.handle(c.CastBallot(poll_id=fresh.id, choice=99, user_id="U2", **HERE))
    with pytest.raises(Refused, match="Only Dana or a workspace admin can close a poll in"):
        await app.service.handle(c.ClosePoll(poll_id=fresh.id, user_id="U2", **HERE))
    assert "Your vote" in (await app.service.handle(c.CastBallot(poll_id=fresh.id, choice=0, user_id="U2",
                                                                  **HERE))).text


async def test_the_roster_is_read_only_for_who_may_edit_it(app: App) -> None:
    did = await waiting(app, confirm=True)
    for asker, error in ((c.Command(user_id="U2", **ELSEWHERE), "I can't find a discussion"),
                         (c.Command(user_id="U2", **OTHER_WORKSPACE), "I can't find a discussion"),
                         (c.Command(user_id="U2", **HERE), "Only Dana or a workspace admin can")):
        with pytest.raises(UserError, match=error):
            await app.service.guard.roster(asker, did)
    d, personas = await app.service.guard.roster(c.Command(user_id="U1", **HERE), did)
    assert d.id == did and personas
    _, same = await app.service.guard.roster(c.Command(user_id="A1", is_admin=True, **ELSEWHERE), did)
    assert same == personas


async def test_the_next_rounds_suggestions_are_read_only_for_who_may_steer(app: App) -> None:
    did = await waiting(app)
    deep = {"discussion_id": did, "action": NextAction.DEEP_DIVE, "user_id": "U2"}
    for where in (ELSEWHERE, OTHER_WORKSPACE):
        with pytest.raises(UserError, match="I can't find a discussion"):
            await app.service.guard.suggestions(c.ChooseNextAction(**deep, **where))  # type: ignore[arg-type]
    assert await app.service.guard.suggestions(c.ChooseNextAction(**deep, **HERE))  # type: ignore[arg-type]
