"""Stance rules (pure), beyond the table's happy path: what counts as a stance, how labels are cleaned, which
round's stance a persona holds, and the verdict's edges."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import stances
from core.deliberation.flows.base import State
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)
ANA, BEN = Persona(key="ana", name="Ana", role=Role.EXPERT), Persona(key="ben", name="Ben", role=Role.EXPERT)


def turn(who: str, round_: int, data: dict[str, str] | None, status: TurnStatus = TurnStatus.PUBLISHED) -> Turn:
    return Turn(key=f"d:r{round_}:{who}", discussion_id="d", round=round_, step=1, phase=Phase.STATEMENT,
                persona_key=who, status=status, text="...", data=data, created_at=T0)


def state(*turns: Turn) -> State:
    return State(discussion=Discussion(id="d", topic="t", created_at=T0, updated_at=T0), personas=[ANA, BEN],
                 turns=list(turns))


def test_labels_are_cleaned_and_cut() -> None:
    assert stances.label_of(turn("ana", 1, {"label": "  **For!** ", "stance": "x"})) == "for"
    assert stances.label_of(turn("ana", 1, {"label": "Option   B.", "stance": "x"})) == "option b"
    assert stances.label_of(turn("ana", 1, {"label": "x" * 50, "stance": "x"})) == "x" * 40
    assert stances.label_of(turn("ana", 1, None)) == ""
    assert stances.label_of(turn("ana", 1, {"stance": "x"})) == ""


def test_only_a_turn_with_both_a_label_and_a_stance_has_one() -> None:
    assert stances.has_stance(turn("ana", 1, {"label": "for", "stance": "x"}))
    assert not stances.has_stance(turn("ana", 1, {"label": "for"}))
    assert not stances.has_stance(turn("ana", 1, {"stance": "x"}))
    assert not stances.has_stance(turn("ana", 1, None))
    assert not stances.has_stance(turn("ana", 1, {}))


def test_a_persona_holds_its_latest_stance_up_to_the_round_asked() -> None:
    s = state(turn("ana", 1, {"label": "for", "stance": "a"}), turn("ana", 2, {"label": "against", "stance": "b"}),
              turn("ben", 3, {"label": "for", "stance": "c"}), turn("ben", 2, {"label": "x"}))
    assert {k: stances.label_of(t) for k, t in stances.latest(s, 2).items()} == {"ana": "against"}
    assert {k: stances.label_of(t) for k, t in stances.latest(s, 1).items()} == {"ana": "for"}
    assert stances.latest(s, 0) == {}
    rows = stances.table(s, 3)
    # Ana wrote no stance in round 3: she counts as undecided this round, and the row says what she held before.
    assert [(r.persona, r.label, r.change) for r in rows] == [("Ana", "undecided", "was against"),
                                                             ("Ben", "for", "new")]
    assert stances.text([], 1) == ""


def test_a_row_says_what_changed() -> None:
    assert stances.Row("Ana", "for", "x", None).change == "new"
    assert stances.Row("Ana", "for", "x", "for").change == "unchanged"
    assert stances.Row("Ana", "for", "x", "against").change == "was against"


def test_the_stance_line_is_cut_to_size() -> None:
    parsed = stances.parse("Stance: " + "Very Long Label " * 8 + "— " + "y" * 300)
    assert parsed is not None and len(parsed["label"]) == 100
    assert parsed["stance"] == "y" * 200
    assert stances.parse("text\n  \n> Stance: For – with care  \n") == {"label": "For", "stance": "with care"}
    assert stances.parse("Stance: for, because") is None  # no separator: not a stance line


# The README's verdict rules, case by case, over recorded choices (the exact wording is pinned in test_verdicts.py).
@pytest.mark.parametrize("labels,people,kind", [
    (["for", "for"], None, "CONSENSUS: for"),
    (["for", "for"], [], "CONSENSUS: for"),
    (["for", "for"], ["for"], "CONSENSUS: for"),
    (["for", "for"], ["for", "against"], "SPLIT"),  # one of two did not choose otherwise: that is not most
    (["for", "for"], ["against"], "SPLIT"),  # the personas agree, most people who voted chose otherwise
    (["for"], None, "LEANING: for"),  # a consensus takes at least two
    (["undecided", "unreadable", ""], None, "NO VERDICT"),
    (["undecided", "unreadable"], ["O1", "O1"], "NO VERDICT"),
    (["for", "against", "for"], None, "LEANING: for"),
    (["for", "against", "O1", "O2"], None, "SPLIT"),
    (["for", "for", "against", "against"], None, "SPLIT"),  # half is no majority
    (["undecided", "undecided", "for"], None, "SPLIT"),  # one of three is no majority
    (["for", "for", ""], None, "LEANING: for"),  # a persona without a stance is undecided, and counts
])
def test_the_verdict(labels: list[str], people: list[str] | None, kind: str) -> None:
    said = stances.verdict(labels, people)
    assert said.startswith(kind), said


def test_the_text_lists_every_row_and_ends_with_the_verdict() -> None:
    rows = [stances.Row("Ana", "for", "a trial", None, label="for"),
            stances.Row("Ben", "unreadable", "not sure yet", "for", label="undecided (unreadable)")]
    assert stances.text(rows, 3, [""]) == ("**Stances after round 3**\n- Ana: **for** (new) — a trial\n"
                                           "- Ben: **undecided (unreadable)** (was for) — not sure yet\n\n"
                                           "**Verdict:** SPLIT — personas: for 1 · undecided 1 of 2; people: "
                                           "undecided 1 of 1")  # a vote that names no position is undecided


def test_a_persona_without_a_stance_counts_as_undecided_beside_the_rest() -> None:
    s = state(turn("ana", 1, {"label": "for"}), turn("ben", 1, {"label": "against", "stance": "too soon"}))
    assert [(r.persona, r.label, r.stance) for r in stances.table(s, 1)] == [
        ("Ana", "undecided", "no stance recorded this round"), ("Ben", "against", "too soon")]
