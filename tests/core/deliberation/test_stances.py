"""Stances: the table with what changed, and a verdict that says consensus only when the ballots do."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import stances
from core.deliberation.flows.base import State
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)
PEOPLE = [Persona(key=k, name=k.capitalize(), role=Role.EXPERT) for k in ("ana", "ben", "cy")]


def turn(who: str, round_: int, label: str, stance: str = "because") -> Turn:
    return Turn(key=f"d:r{round_}:{who}", discussion_id="d", round=round_, step=1, phase=Phase.STATEMENT,
                persona_key=who, status=TurnStatus.PUBLISHED, text="...",
                data={"text": "...", "stance": stance, "label": label}, created_at=T0)


def test_the_table_shows_each_latest_stance_and_what_changed_since_the_last_round() -> None:
    s = State(discussion=Discussion(id="d", topic="t", created_at=T0, updated_at=T0), personas=PEOPLE,
              turns=[turn("ana", 1, "For"), turn("ben", 1, "against"), turn("ana", 2, "for"),
                     turn("ben", 2, "for", "convinced by Ana"), turn("cy", 2, "undecided")])
    rows = stances.table(s, 2)
    assert [(r.persona, r.label, r.change) for r in rows] == [
        ("Ana", "for", "unchanged"), ("Ben", "for", "was against"), ("Cy", "undecided", "new")]
    text = stances.text(rows, 2)
    assert "- Ben: **for** (was against) — convinced by Ana" in text
    assert text.endswith("**Verdict:** LEANING: for — personas: for 2 · undecided 1 of 3; people: no votes")


def test_consensus_needs_every_ballot_personas_and_people_alike() -> None:
    assert stances.verdict(["for", "for", "for"]) == "CONSENSUS: for — personas: for 3 of 3; people: no votes"
    assert stances.verdict(["for", "for", "undecided"]).startswith("LEANING: for")
    assert stances.verdict(["for", "against"]) == \
        "SPLIT — personas: split 1-1 — for 1 · against 1 of 2; people: no votes"
    assert stances.verdict(["for", "for"], ["O1", "O2"]).startswith("SPLIT: the personas agree on for")
    assert stances.verdict(["for", "for"], ["for", "O2", "for"]).startswith("CONSENSUS")
    assert stances.verdict(["for"]).startswith("LEANING")  # one voice is not a consensus
    assert stances.verdict([]) == "NO VERDICT: no stances recorded"


def test_the_stance_line_a_turn_ends_with_is_read_as_data() -> None:
    assert stances.parse("My view...\n\nStance: For — a trial first") == {"label": "For", "stance": "a trial first"}
    assert stances.parse("x\n**Stance:** *against* - too risky now**") == {"label": "against",
                                                                             "stance": "too risky now"}
    assert stances.parse("x\nStance: Option B | cheaper to undo") == {"label": "Option B", "stance": "cheaper to undo"}
    assert stances.parse("Stance: for — early\n\nThen I kept talking.") is None  # only the last line counts
    assert stances.parse("") is None
