"""A seated person's turn, rule by rule, through the real app: a stance pick names a turn that waits for that person
or is refused, the stance recorded is the one picked whatever its spacing, and the note that they wrote in person
names it."""

from __future__ import annotations

import pytest

from core.control import commands as c
from core.control.replies import UserError
from tests.core.running.test_seats import DANA, World, meeting_with_dana, say, state_of, world

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
    await say(world, did, "Invoices break every week.\nStance: billing first — fix invoices")
    [mine] = [t for t in (await state_of(world, did)).turns if (t.data or {}).get("written_by") == "U1"]
    assert mine.data is not None
    note = next(p for p in world.posts(did) if p.key == f"{mine.key}:in")
    assert note.text.endswith(f"Stance: **{mine.data['label']}**.")
