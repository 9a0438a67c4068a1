"""People in seats, rule by rule: who a seat's line names, how it is stored, who a turn is credited to, and that a
stand-in is never the person."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import holders
from core.models import Author, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)
DANA = Persona(key="dana", name="Dana", role=Role.OWNER, held_by="U1")
ANA = Persona(key="ana", name="Ana", role=Role.EXPERT)


def turn(author: Author) -> Turn:
    return Turn(key="d:r1:dana", discussion_id="d", round=1, step=1, phase=Phase.STATEMENT, persona_key="dana",
                status=TurnStatus.DONE, author=author, created_at=T0)


@pytest.mark.parametrize(("line", "shown", "user_id"), [
    ("Dana <@U123>: Billing: payments", "Dana: Billing: payments", "U123"),
    ("@Dana <@U123>: Billing", "Dana: Billing", "U123"),
    ("Xi <@U1>: Ops", "Xi: Ops", "U1"),
    ("<@U1| @dana>: Billing", "dana: Billing", "U1"),
    ("<@U1|Xi>: Ops", "Xi: Ops", "U1"),
    ("<@U1>: Billing", "Owner of Billing: Billing", "U1"),
    ("<@U1>", "Owner of a domain", "U1"),
    ("Dana: Billing", "Dana: Billing", ""),
])
def test_a_seats_line_names_its_person_once_and_shows_a_name(line: str, shown: str, user_id: str) -> None:
    assert holders.holder_line(line) == (shown, user_id)


@pytest.mark.parametrize(("raw", "stored"), [
    ("Dana <@U1>: Billing: EU", "Dana <@U1>: Billing: EU"),
    ("Dana: Billing", "Dana: Billing"),
    ("**Dana** <@U1|dana>: *Billing*", "Dana <@U1>: Billing"),
])
def test_a_seats_line_is_stored_with_the_person_rebuilt_from_their_id(raw: str, stored: str) -> None:
    assert holders.stored_line(raw) == stored


def test_the_seat_a_line_names_is_held_by_that_person() -> None:
    long_name = "A" * 85
    owners = [Persona(key="dana", name="Dana", role=Role.OWNER), Persona(key="a", name="A" * 80, role=Role.OWNER),
              ANA]
    out = holders.seated(["Dana <@U1>: Billing: EU", f"{long_name} <@U2>: Ops", "Ana: Platform"], owners)
    assert [(p.name[:4], p.held_by, p.icon) for p in out] == [
        ("Dana", "U1", holders.PERSON_ICON), ("AAAA", "U2", holders.PERSON_ICON), ("Ana", "", ANA.icon)]


def test_a_model_turn_for_a_held_seat_is_the_stand_ins_and_credited_so() -> None:
    assert holders.author_of(None) == Author.PERSONA
    assert holders.author_of(ANA) == Author.PERSONA
    assert holders.author_of(DANA) == Author.STAND_IN
    assert holders.credited(DANA, None) == "Dana"
    assert holders.credited(DANA, turn(Author.PERSONA)) == "Dana"
    assert holders.credited(DANA, turn(Author.STAND_IN)) == "AI stand-in for Dana"


def test_a_stand_in_is_named_once() -> None:
    once = holders.stand_in(DANA)
    assert once.name == "AI stand-in for Dana" and holders.stand_in(once).name == "AI stand-in for Dana"
    assert once.key == "dana" and DANA.name == "Dana"
