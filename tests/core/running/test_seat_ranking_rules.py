"""A seated person's meeting ranking, rule by rule: one menu per place listing every option with its id; each pick
refused for its own reason (not theirs, not waiting, not a ranking, not listed, a place out of range, an option
already placed); the places left named until the last, which makes the ranking their turn with its ids as the
ballot and the options as people read them; and the terminal's question of which ranking is asked of whom."""

from __future__ import annotations

from core.deliberation import choices, question
from core.deliberation.flows import meeting
from core.models import Phase
from core.running.driver import load_state
from core.running.seat_turns import RANK_ACTION, places, rank_place, ranking_asked
from tests.core.running.test_seats import World, meeting_with_dana, say, state_of, world

__all__ = ["world"]  # the fixture, shared with the seats' story tests


async def at_ranking(w: World) -> tuple[str, str, list[choices.Option]]:
    """Dana's meeting, her proposal in: her ranked turn waits. Its discussion, turn key and the options fixed."""
    did = await meeting_with_dana(w)
    await say(w, did, "Billing first.\nStance: billing first — fix invoices")
    ask = [p for p in w.posts(did) if p.key.endswith(":ask")][-1]
    return did, ask.key.removesuffix(":ask"), meeting.fixed_options(await state_of(w, did))


async def pick(w: World, did: str, turn_key: str, place: int, option_id: str, user_id: str = "U1") -> tuple[bool, str]:
    async with w.app.store.tx() as tx:
        state = await load_state(tx, did)
        assert state is not None
        return await rank_place(tx, state, user_id, turn_key, place, option_id)


async def wait_of(w: World, did: str, turn_key: str):  # type: ignore[no-untyped-def]
    async with w.app.store.tx() as tx:
        return next(x for x in await tx.seat_waits(did) if x.turn_key == turn_key)


def test_places_are_as_many_as_people_rank_and_none_without_a_choice() -> None:
    listed = [choices.Option(f"O{i}", f"Option {i}") for i in range(1, 6)]
    assert [places(listed[:n]) for n in range(6)] == [0, 0, 2, 3, 3, 3]


async def test_one_menu_per_place_each_listing_every_option_by_id(world: World) -> None:
    did, turn_key, fixed = await at_ranking(world)
    assert len(fixed) == 4, "four options, three places"
    ask = [p for p in world.posts(did) if p.key == f"{turn_key}:ask"][-1]
    assert [(a.id, a.label, a.value) for a in ask.actions] == [
        (f"{RANK_ACTION}:{place}:{i}", f"{o.label} [{o.id}]", f"{turn_key}|{place}|{o.id}")
        for place in (1, 2, 3) for i, o in enumerate(fixed)]


async def test_only_the_seats_person_ranks_and_only_its_own_turn(world: World) -> None:
    did, turn_key, fixed = await at_ranking(world)
    refused = (False, "Only the person who holds this seat ranks for it.")
    assert await pick(world, did, turn_key, 1, fixed[0].id, user_id="U2") == refused
    assert await pick(world, did, f"{turn_key}-elsewhere", 1, fixed[0].id) == refused
    assert (await wait_of(world, did, turn_key)).stance == ""


async def test_a_turn_that_is_not_a_ranking_is_refused(world: World) -> None:
    did = await meeting_with_dana(world)
    proposal = [p for p in world.posts(did) if p.key.endswith(":ask")][-1].key.removesuffix(":ask")
    assert await pick(world, did, proposal, 1, "O1") == (
        False, "That turn is not a ranking: write it here in your own words.")
    assert (await wait_of(world, did, proposal)).stance == ""


async def test_a_turn_no_longer_waiting_is_refused(world: World) -> None:
    did, turn_key, fixed = await at_ranking(world)
    async with world.app.store.tx() as tx:
        w = next(x for x in await tx.seat_waits(did) if x.turn_key == turn_key)
        w.state = "stand_in"
        await tx.save_seat_wait(w)
    assert await pick(world, did, turn_key, 1, fixed[0].id) == (
        False, "That turn is no longer waiting for you: it was answered, or your AI stand-in took it.")


async def test_an_option_not_listed_or_a_place_out_of_range_is_refused(world: World) -> None:
    did, turn_key, fixed = await at_ranking(world)
    gone = (False, "That option is no longer on the list to rank; the newest list is in the thread.")
    assert await pick(world, did, turn_key, 1, "O99") == gone
    assert await pick(world, did, turn_key, 0, fixed[0].id) == gone
    assert await pick(world, did, turn_key, 4, fixed[0].id) == gone
    assert (await wait_of(world, did, turn_key)).stance == ""
    taken, said = await pick(world, did, turn_key, 3, fixed[0].id)  # the last place is a place
    assert taken and said.startswith(f"#3: {fixed[0].label} [{fixed[0].id}]. Pick #1 and #2 to finish")
    assert (await wait_of(world, did, turn_key)).stance == f"||{fixed[0].id}"


async def test_an_option_takes_one_place_and_may_be_picked_again_for_the_same_place(world: World) -> None:
    did, turn_key, fixed = await at_ranking(world)
    assert await pick(world, did, turn_key, 1, fixed[0].id) == (
        True, f"#1: {fixed[0].label} [{fixed[0].id}]. Pick #2 and #3 to finish your ranking (or write it here).")
    assert await pick(world, did, turn_key, 2, fixed[0].id) == (False, (
        f"You already put {fixed[0].label} [{fixed[0].id}] at #1: pick another option for this place (each option "
        "takes one place in your ranking)."))
    assert (await pick(world, did, turn_key, 1, fixed[0].id))[0], "the same option again for its own place"
    assert await pick(world, did, turn_key, 3, fixed[1].id) == (
        True, f"#3: {fixed[1].label} [{fixed[1].id}]. Pick #2 to finish your ranking (or write it here).")
    w = await wait_of(world, did, turn_key)
    assert (w.state, w.stance) == ("waiting", f"{fixed[0].id}||{fixed[1].id}")


async def test_the_last_place_makes_the_ranking_her_turn_with_ids_as_her_ballot(world: World) -> None:
    did, turn_key, fixed = await at_ranking(world)
    order = [fixed[2], fixed[0], fixed[1]]
    for place, o in ((2, order[1]), (1, order[0])):
        assert (await pick(world, did, turn_key, place, o.id))[0]
    read = [f"{n}. {o.label} [{o.id}]" for n, o in enumerate(order, 1)]
    assert await pick(world, did, turn_key, 3, order[2].id) == (True, f"Your ranking is in: {'; '.join(read)}.")
    w = await wait_of(world, did, turn_key)
    assert (w.state, w.answer, w.stance) == ("answered", "", "|".join(o.id for o in order))
    await world.later(seconds=1)  # the driver takes the answer up on its next look
    state = await state_of(world, did)
    [mine] = [t for t in state.turns if t.key == turn_key]
    assert mine.phase == Phase.RANKED_VOTE
    assert sorted(mine.text.index(o.label) for o in order) == [mine.text.index(o.label) for o in order]
    assert mine.data is not None and [r["item"] for r in mine.data["ranking"]] == [o.id for o in order]
    assert (mine.data["written_by"], mine.data["written_by_name"]) == ("U1", "Dana")
    ballots, _, unmatched = meeting.owner_ballots(state)
    assert ballots["Dana"] == [o.id for o in order] and not unmatched.get("Dana")
    note = next(p.text for p in world.posts(did) if p.key == f"{turn_key}:in")
    assert note == f"✍️ Dana wrote their turn (Final vote) in person. Their ranking: {'; '.join(read)}."
    assert (await wait_of(world, did, turn_key)).state == "done"


async def test_the_terminal_is_asked_the_ranking_that_waits_for_its_person(world: World) -> None:
    did = await meeting_with_dana(world)
    async with world.app.store.tx() as tx:
        state = await load_state(tx, did)
        assert state is not None
        assert await ranking_asked(tx, state, "U1") is None, "her proposal waits: not a ranking"
    await say(world, did, "Billing first.\nStance: billing first — fix invoices")
    turn_key = [p for p in world.posts(did) if p.key.endswith(":ask")][-1].key.removesuffix(":ask")
    async with world.app.store.tx() as tx:
        state = await load_state(tx, did)
        assert state is not None
        fixed = meeting.fixed_options(state)
        assert await ranking_asked(tx, state, "U1") == (turn_key, fixed)
        assert await ranking_asked(tx, state, "U2") is None, "nobody else's"
    await say(world, did, f"1. {fixed[1].id}\n2. {fixed[0].id}\n3. {fixed[2].id}")
    async with world.app.store.tx() as tx:
        state = await load_state(tx, did)
        assert state is not None
        assert await ranking_asked(tx, state, "U1") is None, "answered"


async def test_a_long_option_is_cut_to_the_75_characters_a_menu_shows(world: World) -> None:
    long = "Rebuild the whole invoicing pipeline on the new ledger before anything else ships this year"
    world.llm.rewrite[Phase.OPTIONS] = lambda v: v.model_copy(update={"options": [long, "Mobile app"]})
    did, turn_key, fixed = await at_ranking(world)
    [cut] = [o for o in fixed if o.label == long]
    ask = [p for p in world.posts(did) if p.key == f"{turn_key}:ask"][-1]
    labels = {a.label for a in ask.actions if a.value.endswith(f"|{cut.id}")}
    assert labels == {f"{long} [{cut.id}]"[:75]} and len(labels.pop()) == 75


async def test_one_option_leaves_no_place_to_pick_and_the_terminal_none_to_list(world: World) -> None:
    world.llm.rewrite[Phase.OPTIONS] = lambda v: v.model_copy(update={"options": ["Billing fixes"]})
    did, turn_key, fixed = await at_ranking(world)
    assert len(fixed) == 1
    ask = [p for p in world.posts(did) if p.key == f"{turn_key}:ask"][-1]
    assert ask.actions == [], "nothing to rank from menus: she writes it"
    async with world.app.store.tx() as tx:
        state = await load_state(tx, did)
        assert state is not None
        assert await ranking_asked(tx, state, "U1") == (turn_key, [])


async def test_the_menus_list_only_what_the_moderator_fixed_whatever_else_was_on_the_table(world: World) -> None:
    world.llm.rewrite[Phase.OPTIONS] = lambda v: v.model_copy(update={"options": ["Billing fixes", "Mobile app"]})
    did, turn_key, fixed = await at_ranking(world)
    on_table = question.on_table(await state_of(world, did))
    assert len(fixed) == 2 and len(on_table) > 2
    ask = [p for p in world.posts(did) if p.key == f"{turn_key}:ask"][-1]
    assert [a.value for a in ask.actions] == [f"{turn_key}|{place}|{o.id}" for place in (1, 2) for o in fixed]
    [other] = [o for o in on_table if o not in fixed][:1]
    assert await pick(world, did, turn_key, 1, other.id) == (
        False, "That option is no longer on the list to rank; the newest list is in the thread.")
