"""A person in a seat, end to end on Discord: `/council seat:@Dana` on a meeting with two generated owners; Dana
is pinged with her turn, picks her stance from the buttons, and her thread messages are her turns."""

from __future__ import annotations

import json
import re

from core.deliberation.flows import meeting
from core.running.driver import load_state
from tests.adapters.discord.conftest import Council, settled


async def test_a_meeting_with_dana_seated_runs_to_its_recommendation(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    i = await fake.slash(lee, "council", topic="Billing fixes or the mobile app first?", flow="meeting", rounds=2,
                         experts=2, seat=dana)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        owners = [p for p in await tx.personas(d.id) if p.role.value == "owner"]
    assert len(owners) == 3 and [(p.name, p.held_by) for p in owners if p.held_by] == [("Dana", dana["id"])]

    [ask] = [m for m in fake.thread_messages(d.thread_ref) if "it is your turn" in m["content"]]
    assert ask["content"].startswith(f"<@{dana['id']}>")
    sent = next(c.body for c in fake.calls if c.method == "POST" and isinstance(c.body, dict)
                and "it is your turn" in str(c.body.get("content", "")))
    assert sent["allowed_mentions"] == {"parse": [], "users": [dana["id"]]}, "Dana, and only Dana, is pinged"
    stance = fake.find_button(ask, "Stance: against")
    refused = await fake.click(lee, ask, stance)
    await fake.wait_for(lambda: "Only the person who holds this seat" in str(refused.followups + refused.callbacks))
    picked = await fake.click(dana, ask, stance)
    await fake.wait_for(lambda: "Your stance: against." in str(picked.followups))

    await fake.say(dana, d.thread_ref, "Invoices break every week, so billing goes first.")
    await settled(council, lambda: _has(fake, d.thread_ref, "Dana wrote their turn (Proposal) in person"))
    await settled(council, lambda: _has(fake, d.thread_ref, "it is your turn** (Final vote"))
    # She ranks from the options she is shown: one by its id, one by its whole label; a line naming no option
    # is kept apart as unmatched.
    rank = [json.dumps(m, ensure_ascii=False) for m in fake.thread_messages(d.thread_ref)
            if "Final vote" in json.dumps(m) and "it is your turn" in json.dumps(m)][-1]
    (first_id, _), (second_id, second) = re.findall(r"(O\d+): (.+?)(?:\\n|\")", rank)[:2]
    await fake.say(dana, d.thread_ref, f"1. {first_id} — weekly breakage\n2. {second}\n3. Platform")

    async def done() -> bool:
        return (await council.discussion()).status.value == "done"

    await settled(council, done)
    async with council.app.store.tx() as tx:
        state = await load_state(tx, d.id)
    assert state is not None
    proposal = next(t for t in state.turns if t.persona_key == next(p.key for p in owners if p.held_by)
                    and t.phase.value == "proposal")
    assert proposal.data is not None and proposal.data["label"] == "against"  # the button she pressed
    ballots, _, unmatched = meeting.owner_ballots(state)
    assert ballots["Dana"] == [first_id, second_id, ""] and unmatched["Dana"] == ["Platform"]  # #3 unmatched
    assert any("Council Recommendation" in m["content"] for m in fake.thread_messages(d.thread_ref))


async def _has(fake, thread: str, text: str) -> bool:  # type: ignore[no-untyped-def]
    return any(text in m["content"] for m in fake.thread_messages(thread))


async def test_the_roster_form_gives_a_seat_to_a_member(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    i = await fake.slash(dana, "council", topic="Kanban or Scrum?", confirm=True, experts=2, rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        expert = next(p for p in await tx.personas(d.id) if p.role.value == "expert")
    confirm = next(m for m in fake.thread_messages(d.thread_ref) if m["components"])
    opened = await fake.click(dana, confirm, fake.find_button(confirm, "Modify roster"))
    await fake.wait_for(lambda: opened.callbacks)
    form = opened.callbacks[0]["data"]
    assert "person" in str(form["components"])
    bad = await fake.submit(dana, d.thread_ref, form["custom_id"], {"persona": expert.name, "person": "Lee"},
                            confirm)
    await fake.wait_for(lambda: bad.followups)
    assert "is not a member" in bad.followups[0]["content"]
    sent = await fake.submit(dana, d.thread_ref, form["custom_id"], {"persona": expert.name, "name": "Lee",
                                                                     "person": f"<@{lee['id']}>"}, confirm)
    await fake.wait_for(lambda: sent.followups)
    async with council.app.store.tx() as tx:
        seated = next(p for p in await tx.personas(d.id) if p.key == expert.key)
    assert (seated.name, seated.held_by) == ("Lee", lee["id"])
    await fake.click(dana, confirm, fake.find_button(confirm, "Start"))
    await settled(council, lambda: _has(fake, d.thread_ref, "Lee, it is your turn"))


async def test_dana_ranks_from_select_menus_and_the_same_option_twice_is_refused(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    i = await fake.slash(lee, "council", topic="Billing fixes or the mobile app first?", flow="meeting", rounds=2,
                         experts=2, seat=dana)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    await fake.say(dana, d.thread_ref, "Invoices break every week, so billing goes first.")
    await settled(council, lambda: _has(fake, d.thread_ref, "it is your turn** (Final vote"))
    rank = [m for m in fake.thread_messages(d.thread_ref)
            if "Final vote" in m["content"] and "it is your turn" in m["content"]][-1]
    listed = re.findall(r"(O\d+): ([^\n]+)", rank["content"])
    menus = [c for row in rank["components"] for c in row["components"] if c["type"] == 3]
    assert len(menus) == min(3, len(listed)) and len(listed) >= 3
    assert [o["value"] for o in menus[0]["options"]] == [oid for oid, _ in listed], "options by id"
    first, second, third = (oid for oid, _ in listed[:3])
    one, two, three = (m["custom_id"] for m in menus)
    said = await fake.select(dana, rank, one, [first])
    await fake.wait_for(lambda: "Pick #2 and #3" in str(said.followups))
    again = await fake.select(dana, rank, two, [first])  # the same option for a second place
    await fake.wait_for(lambda: "You already put" in str(again.followups))
    assert all(f.get("flags", 0) & 64 for f in again.followups), "told privately"
    stranger = await fake.select(lee, rank, two, [second])
    await fake.wait_for(lambda: "Only the person who holds this seat" in str(stranger.followups))
    await fake.select(dana, rank, two, [second])
    last = await fake.select(dana, rank, three, [third])
    await fake.wait_for(lambda: "Your ranking is in" in str(last.followups))

    async def done() -> bool:
        return (await council.discussion()).status.value == "done"

    await settled(council, done)
    async with council.app.store.tx() as tx:
        state = await load_state(tx, d.id)
    assert state is not None
    ballots, _, unmatched = meeting.owner_ballots(state)
    assert ballots["Dana"] == [first, second, third] and not unmatched.get("Dana")
