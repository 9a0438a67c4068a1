"""People in seats (pure): `Dana <@U123>: Billing` in a channel's owner lines seats the real Dana, and what her seat
says is credited to whoever wrote it (Dana, or her AI stand-in)."""

from __future__ import annotations

import re

from core.deliberation.roster import owner_line
from core.models import Author, Persona, Turn

PERSON_ICON = ":bust_in_silhouette:"
_HOLDER = re.compile(r"<@!?([A-Za-z0-9]+)(?:\|([^>]*))?>")


def holder_line(line: str) -> tuple[str, str]:
    """`Dana <@U123>: Billing` (or `<@U123|dana>: Billing`) → (`Dana: Billing`, `U123`); a line without a person
    comes back as it is, with no holder."""
    name, colon, domain = line.partition(":")
    m = _HOLDER.search(name)
    if m is None:
        return line, ""
    left = _HOLDER.sub(" ", name).strip(" @")
    shown = left or (m.group(2) or "").strip(" @") or f"Owner of {domain.strip() or 'a domain'}"
    return f"{shown}{colon}{domain}", m.group(1)


def stored_line(raw: str) -> str:
    """An owner line as typed, as it may be stored: the name and domain cleaned of every mention and markup, and a
    person it named kept as one mention rebuilt from their id alone (`Dana <@U123>: Billing`); "" when nothing
    but markup was typed (`<!here>: Billing`)."""
    shown, user_id = holder_line(raw)
    line = owner_line(shown)
    if not line or not user_id:
        return line
    name, colon, domain = line.partition(":")
    return f"{name} <@{user_id}>{colon}{domain}"


def clean_lines(lines: list[str]) -> list[str]:
    return [holder_line(line)[0] for line in lines]


def seated(lines: list[str], owners: list[Persona]) -> list[Persona]:
    """The configured owners, each seat whose line named a person held by them."""
    holders = {}
    for line in lines:
        clean, user_id = holder_line(line)
        if user_id:
            holders[clean.partition(":")[0].strip()[:80]] = user_id
    return [p.model_copy(update={"held_by": holders[p.name], "icon": PERSON_ICON}) if p.name in holders else p
            for p in owners]


STAND_IN = "AI stand-in for "


def stand_in(p: Persona) -> Persona:
    """The seat as its AI stand-in speaks and is shown: named so nobody reads its words as the person's (once: the
    state a stand-in's turn runs on already names its seat so)."""
    return p if p.name.startswith(STAND_IN) else p.model_copy(update={"name": f"{STAND_IN}{p.name}"})


def credited(p: Persona, turn: Turn | None) -> str:
    """Who a turn of this seat is credited to, from the turn's recorded author: the stand-in is never the person."""
    return stand_in(p).name if turn is not None and turn.author == Author.STAND_IN else p.name


def author_of(p: Persona | None) -> Author:
    """Who writes a turn the model runs for this seat: its persona, or the stand-in of the person who holds it."""
    return Author.STAND_IN if p is not None and p.held_by else Author.PERSONA
