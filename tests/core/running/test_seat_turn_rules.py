"""A seated person's turns, rule by rule, through the real app: a stance pick names a turn that waits for that
person or is refused; the stance recorded is the one picked, whatever its spacing, and the note that they wrote in
person names it; only the seat's person answers its turn; the ask is titled to them and says how to rank only when
they rank; back after many missed turns, they take back the latest; a seat is asked before the personas speak,
wherever it sits, two seats both in one step; an away person's next turn is handed over with one notice, only their
seat speaks as the stand-in, and the stand-in reads what people wrote in the thread."""

from __future__ import annotations

import pytest

from core.control import commands as c
from core.control.replies import UserError
from core.deliberation.holders import STAND_IN
from core.models import NextAction
from tests.core.running.test_seats import DANA, HERE, World, meeting_with_dana, say, state_of, world

__all__ = ["world"]  # the fixture, shared with the seats' story tests


async def test_a_pick_for_a_turn_nobody_waits_on_is_refused(world: World) -> None:
    did = await meeting_with_dana(world)
    ask = next(p for p in world.posts(did) if p.key.endswith(":ask"))
    _, turn_key, chosen = ask.actions[0].value.split("|", 2)
    # A button from another turn of this thread (or one edited by hand): no seat waits on it.
    with pytest.raises(UserError):
        await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=f"{turn_key}-elsewhere",
                                                    label=chosen, **DANA))
    async with world.app.store.tx() as tx:
        [wait] = await tx.seat_waits(did)
    assert (wait.turn_key, wait.stance) == (turn_key, "")


async def test_a_picked_stance_is_recorded_as_one_lower_case_label(world: World) -> None:
    did = await meeting_with_dana(world)
    ask = next(p for p in world.posts(did) if p.key.endswith(":ask"))
    _, turn_key, _ = ask.actions[0].value.split("|", 2)
    await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=turn_key,
                                                label="  Billing\n  FIRST ", **DANA))
    await say(world, did, "Invoices break every week.")  # no stance line: the menu's pick counts
    mine = (await state_of(world, did)).turn(turn_key)
    assert mine is not None and mine.data is not None and mine.data["label"] == "billing first"


async def test_the_in_person_note_names_the_stance_the_turn_recorded(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Invoices break every week.\nStance: new: Billing first — fix invoices")
    [mine] = [t for t in (await state_of(world, did)).turns if (t.data or {}).get("written_by") == "U1"]
    assert mine.data is not None
    note = next(p for p in world.posts(did) if p.key == f"{mine.key}:in")
    assert note.text.endswith(f"Stance: {mine.data['choice']} (Billing first).")


async def test_an_unreadable_stance_is_answered_never_echoed_as_accepted(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Invoices break every week.\nStance: b). — fix invoices")
    [mine] = [t for t in (await state_of(world, did)).turns if (t.data or {}).get("written_by") == "U1"]
    assert mine.data is not None and mine.data["choice"] == "unreadable"
    note = next(p for p in world.posts(did) if p.key == f"{mine.key}:in")
    assert "I couldn't read an option in that (“b)”)" in note.text and "Stance: b" not in note.text
    assert note.text.endswith("it counts as undecided. Name one by its id next time (`Stance: O2 — …`), or pick it "
                              "from the menu.")


async def test_the_note_reads_back_the_stance_without_any_of_the_reason(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Invoices break every week.\nStance: new: Billing first — fix invoices — then the app")
    [mine] = [t for t in (await state_of(world, did)).turns if (t.data or {}).get("written_by") == "U1"]
    assert mine.data is not None
    note = next(p for p in world.posts(did) if p.key == f"{mine.key}:in")
    assert note.text == f"✍️ Dana wrote their turn (Proposal) in person. Stance: {mine.data['choice']} (Billing first)."


async def test_a_picked_stance_keeps_its_first_forty_characters(world: World) -> None:
    did = await meeting_with_dana(world)
    ask = next(p for p in world.posts(did) if p.key.endswith(":ask"))
    _, turn_key, _ = ask.actions[0].value.split("|", 2)
    label = "Billing first, then the mobile app, then the platform work"
    await world.app.service.handle(c.TakeStance(discussion_id=did, turn_key=turn_key, label=label, **DANA))
    async with world.app.store.tx() as tx:
        [wait] = await tx.seat_waits(did)
    assert wait.stance == label.lower()[:40] and len(label) > 41


async def test_a_reply_from_someone_without_a_seat_is_a_comment_not_the_seats_turn(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Billing first, obviously.", user={"user_id": "U2", "user_name": "Lee", **HERE})
    async with world.app.store.tx() as tx:
        [wait] = await tx.seat_waits(did)
    assert (wait.state, wait.answer) == ("waiting", "")
    assert [(m.author_id, m.text) for m in (await state_of(world, did)).humans] == [
        ("U2", "Billing first, obviously.")]


async def test_the_ask_is_titled_to_its_person_and_says_how_to_rank_only_when_ranking(world: World) -> None:
    did = await meeting_with_dana(world)
    await say(world, did, "Billing first.\nStance: billing first — fix invoices")
    proposal_ask, ranking_ask = [p for p in world.posts(did) if p.key.endswith(":ask")]
    assert "Dana" in proposal_ask.title and "Dana" in ranking_ask.title
    assert "your ranking" in ranking_ask.text and "your ranking" not in proposal_ask.text



async def test_taking_a_seat_back_after_many_missed_turns_takes_back_the_latest(world: World) -> None:
    reply = await world.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", channel="C1", seats=[{"user_id": "U1", "name": "Dana"}],
        **DANA))  # type: ignore[list-item]
    did = reply.discussion_id
    await world.settle()
    await world.later(minutes=31)  # silent: her first turn times out, the next goes to the stand-in at once
    await world.app.service.handle(c.ChooseNextAction(discussion_id=did, action=NextAction.ANOTHER_ROUND, **DANA))
    await world.settle()  # still away: this round's turns are the stand-in's too
    async with world.app.store.tx() as tx:
        waits = await tx.seat_waits(did)
    assert len(waits) >= 3 and all(w.state == "stand_in" for w in waits)
    await say(world, did, "Back now.")
    async with world.app.store.tx() as tx:
        states = [w.state for w in await tx.seat_waits(did)]
    assert states == ["stand_in"] * (len(waits) - 1) + ["back"]
    assert [p.key for p in world.posts(did) if p.key.endswith(":back")] == [f"{waits[-1].turn_key}:back"]


async def start_meeting(w: World, owners: list[str]) -> str:
    await w.app.service.handle(c.SetOwners(channel="C1", owners=owners, **{**DANA, "is_admin": True}))
    reply = await w.app.service.handle(c.StartDiscussion(topic="Billing fixes or the mobile app first?",
                                                         flow="meeting", rounds=2, channel="C1", **DANA))
    await w.settle()
    return reply.discussion_id


async def test_a_seat_is_asked_before_the_personas_speak_wherever_it_sits(world: World) -> None:
    did = await start_meeting(world, ["Eli: Mobile app", "Fay: Platform", "Dana <@U1>: Billing"])
    keys = [p.key for p in world.posts(did)]
    [ask] = [k for k in keys if k.endswith(":ask")]
    proposals = [p.key for p in world.posts(did) if p.kind == "turn" and p.persona and p.persona.name != "Dana"]
    assert len(proposals) == 2 and all(keys.index(ask) < keys.index(k) for k in proposals)


async def test_two_people_seated_are_each_asked_in_the_same_step(world: World) -> None:
    did = await start_meeting(world, ["Dana <@U1>: Billing", "Eli <@U2>: Mobile app", "Fay: Platform"])
    asks = [p for p in world.posts(did) if p.key.endswith(":ask")]
    assert sorted(m for p in asks for m in p.mentions) == ["U1", "U2"]
    async with world.app.store.tx() as tx:
        assert sorted(w.user_id for w in await tx.seat_waits(did)) == ["U1", "U2"]


async def test_an_away_persons_next_turn_is_handed_over_without_a_second_timeout(world: World) -> None:
    reply = await world.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", channel="C1", seats=[{"user_id": "U1", "name": "Dana"}],
        **DANA))  # type: ignore[list-item]
    did = reply.discussion_id
    await world.settle()
    await world.later(minutes=31)
    async with world.app.store.tx() as tx:
        waits = await tx.seat_waits(did)
    assert len(waits) >= 2  # the missed turn, then the next one handed to the stand-in at once
    posts = [p.key for p in world.posts(did)]
    assert [k for k in posts if k.endswith(":timeout")] == [f"{waits[0].turn_key}:timeout"]
    assert [k for k in posts if k.endswith(":away")] == [f"{w.turn_key}:away" for w in waits[1:]]


async def test_while_a_person_is_away_only_their_seat_speaks_as_the_stand_in(world: World) -> None:
    reply = await world.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", channel="C1", seats=[{"user_id": "U1", "name": "Dana"}],
        **DANA))  # type: ignore[list-item]
    did = reply.discussion_id
    await world.settle()
    await world.later(minutes=31)  # silent: her turns go to the stand-in, beside the personas' own
    await world.app.service.handle(c.ChooseNextAction(discussion_id=did, action=NextAction.ANOTHER_ROUND, **DANA))
    await world.settle()
    names = {p.persona.name for p in world.posts(did) if p.kind == "turn" and p.persona is not None}
    assert f"{STAND_IN}Dana" in names and "Dana" not in names
    assert [n for n in names if n.startswith(STAND_IN)] == [f"{STAND_IN}Dana"]
    assert len(names) > 1  # the personas spoke too, under their own names


async def test_the_stand_in_reads_what_people_wrote_in_the_thread(world: World) -> None:
    reply = await world.app.service.handle(c.StartDiscussion(
        topic="Should we move to trunk-based development?", channel="C1", seats=[{"user_id": "U1", "name": "Dana"}],
        **DANA))  # type: ignore[list-item]
    did = reply.discussion_id
    await world.settle()
    await world.later(minutes=31)  # Dana is away
    await say(world, did, "Our CI takes forty minutes.", user={"user_id": "U2", "user_name": "Lee", **HERE})
    sent = len(world.llm.prompts)
    await world.app.service.handle(c.ChooseNextAction(discussion_id=did, action=NextAction.ANOTHER_ROUND, **DANA))
    await world.settle()
    stand_in = [p.purpose for p in world.llm.prompts[sent:] if p.purpose.persona == f"{STAND_IN}Dana"]
    assert stand_in and all("Lee" in p.humans for p in stand_in)
