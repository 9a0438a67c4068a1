"""Seats held by people: asked with the turn's task, their reply is the turn; silent, a nudge at half the wait, then
a labelled stand-in, and the seat taken back; a restart keeps the stored deadline; a meeting ranking is the owner's
ballot. The real app on SQLite, the offline model, an injected clock: no sleeping."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.replies import UserError
from core.deliberation.flows import meeting
from core.models import NextAction, Phase, Post, SeatHolder, Status, TurnStatus
from core.running.driver import load_state
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

HERE = {"platform": "console", "workspace": "T1", "in_channel": "C1"}
DANA = {"user_id": "U1", "user_name": "Dana", **HERE}


@dataclass
class World:
    app: App
    chat: RecordingChat
    clock: FakeClock
    llm: ScriptedLLM
    settings: Settings

    async def restart(self) -> None:
        await self.app.close()
        self.app = await build_app(self.settings, {"console": self.chat}, llm=self.llm, clock=self.clock)

    async def settle(self) -> None:
        await self.app.driver.idle()

    async def later(self, **delta: float) -> None:
        """Time passes; the sweeper (which runs every few seconds in a server) looks for work."""
        self.clock.advance(timedelta(**delta))
        await self.app.driver.sweep()
        await self.settle()

    def posts(self, did: str) -> list[Post]:
        return self.chat.posts(did)


@pytest.fixture
async def world(db_url: str) -> AsyncIterator[World]:
    """On SQLite and PostgreSQL alike (where a restart is also another replica taking over)."""
    settings = Settings(_env_file=None, database_url=db_url, council_seat_wait_min=30)  # type: ignore[call-arg]
    chat, clock, llm = RecordingChat(), FakeClock(), ScriptedLLM()
    w = World(await build_app(settings, {"console": chat}, llm=llm, clock=clock), chat, clock, llm, settings)
    yield w
    await w.app.close()


async def meeting_with_dana(w: World, rounds: int = 2) -> str:
    # A channel's owners are set by an admin (issue 19); Dana is seated by her mention.
    await w.app.service.handle(c.SetOwners(channel="C1", owners=["Dana <@U1>: Billing", "Eli: Mobile app",
                                                                  "Fay: Platform"], **{**DANA, "is_admin": True}))
    reply = await w.app.service.handle(c.StartDiscussion(topic="Billing fixes or the mobile app first?",
                                                         flow="meeting", rounds=rounds, channel="C1", **DANA))
    await w.settle()
    return reply.discussion_id


async def say(w: World, did: str, text: str, user: dict[str, str] = DANA) -> c.Reply:
    reply = await w.app.service.handle(c.PostHumanMessage(discussion_id=did, text=text, **user))
    await w.settle()
    return reply


async def state_of(w: World, did: str):  # type: ignore[no-untyped-def]
    async with w.app.store.tx() as tx:
        return await load_state(tx, did)


async def test_a_seated_person_answers_in_time_and_their_reply_is_the_turn(world: World) -> None:
    did = await meeting_with_dana(world)
    asks = [p for p in world.posts(did) if p.key.endswith(":ask")]
    assert len(asks) == 1 and asks[0].mentions == ["U1"]
    assert "Dana, it is your turn" in asks[0].text and "three to five sentences" in asks[0].text  # the task, plainly
    assert {a.label for a in asks[0].actions} >= {"Stance: for", "Stance: against"}
    others = [p for p in world.posts(did) if p.kind == "turn" and p.persona and p.persona.name in ("Eli", "Fay")]
    assert len(others) == 2, "the other owners' proposals are posted without waiting for Dana"
    state = await state_of(world, did)
    assert state.discussion.status == Status.RUNNING

    reply = await say(world, did, "Invoices break every week; billing first.\nStance: billing first — fix invoices")
    assert reply.text == "Noted: this is your turn."
    state = await state_of(world, did)
    [mine] = [t for t in state.turns if t.phase == Phase.PROPOSAL and t.persona_key == "dana"]
    assert mine.text.startswith("Invoices break every week") and mine.data is not None
    assert (mine.data["written_by"], mine.data["label"]) == ("U1", "billing first")
    assert state.humans == [], "the turn is not also a comment"
    assert not [p for p in world.posts(did) if p.key == mine.key], "her words are in the thread already"
    assert any(p.key == f"{mine.key}:in" and "in person" in p.text for p in world.posts(did))
    assert not any(p.key.endswith(":nudge") or p.key.endswith(":timeout") for p in world.posts(did))


async def test_a_seated_persons_meeting_ranking_is_the_owners_ballot(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Billing first.\nStance: billing first — fix invoices")
    ranking_ask = [p for p in world.posts(did) if p.key.endswith(":ask")][-1]
    assert "Final vote" in ranking_ask.text  # a ranking, not a stance: a menu per place, none for a stance
    assert ranking_ask.actions and all(a.id.startswith("seat:rank:") for a in ranking_ask.actions)
    fixed = meeting.fixed_options(await state_of(world, did))
    assert f"{fixed[1].id}: {fixed[1].label}" in ranking_ask.text, "the options she ranks, with their ids"
    # One line by id, one by the option's whole label, one naming no option: it stays unmatched.
    await say(world, did, f"1. {fixed[1].id} — weekly breakage\n2. {fixed[0].label.upper()} — users wait\n"
                          "3. Not the platform — later")
    state = await state_of(world, did)
    assert state.discussion.status == Status.DONE
    ballots, _, unmatched = meeting.owner_ballots(state)
    assert ballots["Dana"] == [fixed[1].id, fixed[0].id, ""] and unmatched["Dana"] == ["Not the platform"]
    assert set(ballots) == {"Dana", "Eli", "Fay"}
    recommendation = next(p.text for p in world.posts(did) if "**Council Recommendation**" in p.text)
    assert f"{fixed[1].label} [{fixed[1].id}]" in recommendation
    assert "Not counted (names no option on the list): Dana: Not the platform" in recommendation


async def test_her_words_win_over_places_picked_so_far_and_a_late_pick_is_refused(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Billing first.\nStance: billing first — fix invoices")
    ask = [p for p in world.posts(did) if p.key.endswith(":ask")][-1]
    turn_key = ask.key.removesuffix(":ask")
    fixed = meeting.fixed_options(await state_of(world, did))
    reply = await world.app.service.handle(c.RankPlace(discussion_id=did, turn_key=turn_key, place=1,
                                                       option_id=fixed[0].id, **DANA))
    assert reply.text.startswith(f"#1: {fixed[0].label} [{fixed[0].id}]")
    with pytest.raises(UserError, match="no longer on the list"):
        await world.app.service.handle(c.RankPlace(discussion_id=did, turn_key=turn_key, place=2, option_id="O99",
                                                   **DANA))
    await say(world, did, f"1. {fixed[1].id}\n2. {fixed[2].id}")  # she writes it after all: her words are the turn
    state = await state_of(world, did)
    ballots, _, _ = meeting.owner_ballots(state)
    assert ballots["Dana"] == [fixed[1].id, fixed[2].id]
    with pytest.raises(UserError, match="has ended"):
        await world.app.service.handle(c.RankPlace(discussion_id=did, turn_key=turn_key, place=2,
                                                   option_id=fixed[0].id, **DANA))


async def test_silent_then_nudged_then_a_labelled_stand_in_then_the_seat_taken_back(world: World) -> None:
    reply = await world.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", channel="C1", seats=[{"user_id": "U1", "name": "Dana"}],
        **DANA))  # type: ignore[list-item]
    did = reply.discussion_id
    await world.settle()
    state = await state_of(world, did)
    dana = next(p for p in state.personas if p.held_by == "U1")
    assert dana.name == "Dana" and dana.role.value == "expert", "seated beside the generated experts"
    assert [p.key for p in world.posts(did) if p.key.endswith(":ask")] == [f"{did}:r1:s1:{dana.key}:ask"]

    await world.later(minutes=14)
    assert not [p for p in world.posts(did) if p.key.endswith(":nudge")]
    await world.later(minutes=1)
    [nudge] = [p for p in world.posts(did) if p.key.endswith(":nudge")]
    assert nudge.mentions == ["U1"] and "15 minutes" in nudge.text
    await world.later(minutes=10)
    assert len([p for p in world.posts(did) if p.key.endswith(":nudge")]) == 1, "nudged once"
    assert not [p for p in world.posts(did) if p.key.endswith(":timeout")]
    await world.later(minutes=5)
    assert [p for p in world.posts(did) if p.key.endswith(":timeout")]
    stand_ins = [p for p in world.posts(did) if p.kind == "turn" and p.persona and "stand-in" in p.persona.name]
    assert stand_ins and stand_ins[0].persona is not None and stand_ins[0].persona.name == "AI stand-in for Dana"
    assert any(p.key.endswith(":away") for p in world.posts(did)), "her rebuttal went to the stand-in at once"
    state = await state_of(world, did)
    assert state.discussion.status == Status.WAITING  # the round ended; people choose what next

    await say(world, did, "Sorry, I was in a meeting. I'm back.")
    assert any(p.key.endswith(":back") and "takes their seat back" in p.text for p in world.posts(did))
    await world.app.service.handle(c.ChooseNextAction(discussion_id=did, action=NextAction.ANOTHER_ROUND, **DANA))
    await world.settle()
    ask = [p for p in world.posts(did) if p.key.endswith(":ask")][-1]
    assert ask.key == f"{did}:r2:s1:{dana.key}:ask", "her next turn is hers again"
    await say(world, did, "Trunk-based, with feature flags.\nStance: for — flags make it safe")
    state = await state_of(world, did)
    mine = state.turn(f"{did}:r2:s1:{dana.key}")
    assert mine is not None and mine.status in (TurnStatus.DONE, TurnStatus.PUBLISHED)
    assert mine.data is not None and mine.data["written_by"] == "U1"


async def test_a_restart_during_the_wait_keeps_the_deadline(world: World) -> None:
    did = await meeting_with_dana(world)
    async with world.app.store.tx() as tx:
        [before] = await tx.seat_waits(did)
    await world.restart()
    await world.later(minutes=10)  # a restart does not start the wait again, and does not end it early
    async with world.app.store.tx() as tx:
        [after] = await tx.seat_waits(did)
    assert (after.asked_at, after.deadline, after.state) == (before.asked_at, before.deadline, "waiting")
    await world.restart()
    await world.later(minutes=6)
    assert [p for p in world.posts(did) if p.key.endswith(":nudge")]
    await world.restart()
    await world.later(minutes=15)
    assert [p for p in world.posts(did) if p.key.endswith(":timeout")]
    state = await state_of(world, did)
    assert any(t.phase == Phase.PROPOSAL and t.persona_key == "dana" and t.status in (TurnStatus.DONE,
               TurnStatus.PUBLISHED) and not (t.data or {}).get("written_by") for t in state.turns)


async def test_the_stance_menu_and_who_may_use_it(world: World) -> None:
    did = await meeting_with_dana(world)
    ask = next(p for p in world.posts(did) if p.key.endswith(":ask"))
    pick = next(a for a in ask.actions if a.label == "Stance: against")
    _, turn_key, chosen = pick.value.split("|", 2)
    with pytest.raises(UserError, match="Only the person who holds this seat"):
        await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=turn_key, label=chosen,
                                                    user_id="U9", user_name="Eve", **HERE))
    await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=turn_key, label=chosen, **DANA))
    await say(world, did, "Mobile can wait; billing is bleeding money.")  # no stance line: the menu's counts
    state = await state_of(world, did)
    mine = state.turn(turn_key)
    assert mine is not None and mine.data is not None and mine.data["label"] == "against"


@pytest.mark.parametrize("flow", ["council", "open"])
async def test_a_seat_in_the_other_flows_is_asked_and_answered(world: World, flow: str) -> None:
    reply = await world.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", flow=flow, rounds=1, experts=2, channel="C1",
        seats=[SeatHolder(user_id="U1", name="Dana", title="Release engineering")], **DANA))
    did = reply.discussion_id
    for _ in range(6):  # answer each of her turns as it comes
        await world.settle()
        state = await state_of(world, did)
        if state.discussion.status == Status.DONE:
            break
        asks = [p for p in world.posts(did) if p.key.endswith(":ask")]
        assert asks, (state.discussion.status, state.discussion.blocked_reason)
        await say(world, did, "Trunk-based with flags.\nStance: for — flags keep main releasable")
    state = await state_of(world, did)
    assert state.discussion.status == Status.DONE
    dana = next(p for p in state.personas if p.held_by == "U1")
    mine = [t for t in state.turns if (t.data or {}).get("written_by") == "U1"]
    asked = [p for p in world.posts(did) if p.key.endswith(":ask")]
    assert len(mine) == len(asked) and all(t.status in (TurnStatus.DONE, TurnStatus.PUBLISHED) for t in mine)
    if flow == "council":
        assert len(mine) == 1  # her opening position
    else:  # on the open floor her stand-in bids for the floor; she speaks when her seat wins it
        assert [t for t in state.turns if t.phase == Phase.BID and t.persona_key == dana.key]


async def test_a_seated_persons_ask_reads_as_plain_words(db_url: str) -> None:
    """The options to rank are listed one a line (not as the prompt quotes them), a seat without a title is not
    called "Takes part in person", and a short wait is told in minutes and seconds, singular where one."""
    settings = Settings(_env_file=None, database_url=db_url, council_seat_wait_min=1.5)  # type: ignore[call-arg]
    chat, clock, llm = RecordingChat(), FakeClock(), ScriptedLLM()
    w = World(await build_app(settings, {"console": chat}, llm=llm, clock=clock), chat, clock, llm, settings)
    try:
        did = await meeting_with_dana(w)
        [ask] = [p for p in w.posts(did) if p.key.endswith(":ask")]
        assert "within 1 minute 30 seconds" in ask.text and "minutes" not in ask.text
        await say(w, did, "Billing first.\nStance: billing first — fix invoices")
        ranking = [p for p in w.posts(did) if p.key.endswith(":ask")][-1]
        assert "<option>" not in ranking.text and "</option>" not in ranking.text
        state = await state_of(w, did)
        options = re.findall(r"^- (O\d+): (.+)$", ranking.text, re.M)
        fixed = [(o.id, o.label) for o in meeting.fixed_options(state)]
        assert options and options == fixed, "the options the moderator fixed, one a line, each with its id"
        assert "as Billing" in ranking.text
        # A seat given to a person without a title: named, never "as Takes part in person".
        reply = await w.app.service.handle(c.StartDiscussion(
            topic="Should we move to trunk-based development?", channel="C1",
            seats=[{"user_id": "U1", "name": "Dana"}], **DANA))  # type: ignore[list-item]
        await w.settle()
        [ask] = [p for p in w.posts(reply.discussion_id) if p.key.endswith(":ask")]
        assert "Takes part in person" not in ask.text and "Dana, it is your turn" in ask.text
        await w.later(seconds=45)
        [nudge] = [p for p in w.posts(reply.discussion_id) if p.key.endswith(":nudge")]
        assert "within 45 seconds" in nudge.text
    finally:
        await w.app.close()


async def test_a_stance_picked_after_the_turn_is_in_is_refused_and_the_turn_kept(world: World) -> None:
    """Dana answers in words first, then picks from the menu under the ask: the turn keeps the stance it was
    written with, and she is told so."""
    did = await meeting_with_dana(world)
    ask = next(p for p in world.posts(did) if p.key.endswith(":ask"))
    pick = next(a for a in ask.actions if a.label == "Stance: against")
    _, turn_key, chosen = pick.value.split("|", 2)
    await say(world, did, "Mobile can wait; billing is bleeding money.")
    before = (await state_of(world, did)).turn(turn_key)
    assert before is not None and before.data is not None and before.data["label"] == "undecided"
    with pytest.raises(UserError, match="already recorded"):
        await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=turn_key, label=chosen, **DANA))
    after = (await state_of(world, did)).turn(turn_key)
    assert after is not None and after.data == before.data and after.text == before.text


async def test_a_stance_picked_after_the_stand_in_spoke_leaves_the_stand_ins_turn_as_it_was(world: World) -> None:
    did = await meeting_with_dana(world)
    ask = next(p for p in world.posts(did) if p.key.endswith(":ask"))
    pick = next(a for a in ask.actions if a.label == "Stance: against")
    _, turn_key, chosen = pick.value.split("|", 2)
    await world.later(minutes=31)  # silent past the wait: the stand-in speaks for her seat
    spoken = (await state_of(world, did)).turn(turn_key)
    assert spoken is not None and spoken.data is not None and spoken.data.get("written_by") != "U1"
    with pytest.raises(UserError, match="has ended, so its stances stay as they were recorded"):  # told so
        await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=turn_key, label=chosen, **DANA))
    after = (await state_of(world, did)).turn(turn_key)
    assert after is not None and after.data == spoken.data
