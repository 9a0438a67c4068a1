"""A person's seat as it reads: the title a seat given without one shows on the roster, and that the ask leaves it
out. Written as people read it, not read from the module."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import seats
from core.models import Discussion, FlowOptions, Persona, Role, SeatHolder

T0 = datetime(2026, 11, 2, tzinfo=UTC)


def test_a_seat_given_without_a_title_takes_part_in_person_and_its_ask_says_no_title() -> None:
    d = Discussion(id="d", topic="t", flow="council", created_at=T0, updated_at=T0,
                   options=FlowOptions(people=[SeatHolder(user_id="U9", name="Ines")]))
    [seat] = seats.people_seats(d, [])
    assert seat.title == "Takes part in person"
    ask = seats.ask_text("Say what you think.", seat, "round 1", "30 minutes")
    assert ask.startswith("**Ines, it is your turn** (round 1). Say what you think.")
    titled = Persona(key="ines", name="Ines", role=Role.ADVISOR, title="Payments", held_by="U9")
    assert seats.ask_text("Say.", titled, "round 1", "30 minutes").startswith(
        "**Ines, it is your turn** (round 1, as Payments). Say.")
