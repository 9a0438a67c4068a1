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
    assert [(r.persona, r.label, r.change) for r in rows] == [("Ana", "against", "unchanged"), ("Ben", "for", "new")]
    assert stances.table(s, 0) == [] and stances.text([], 1) == ""


def test_a_row_says_what_changed() -> None:
    assert stances.Row("Ana", "for", "x", None).change == "new"
    assert stances.Row("Ana", "for", "x", "for").change == "unchanged"
    assert stances.Row("Ana", "for", "x", "against").change == "was against"


def test_the_stance_line_is_cut_to_size_and_its_label_lowercased() -> None:
    parsed = stances.parse("Stance: " + "Very Long Label " * 5 + "— " + "y" * 300)
    assert parsed is not None and len(parsed["label"]) == 40 and parsed["label"] == parsed["label"].lower()
    assert parsed["stance"] == "y" * 200
    assert stances.parse("text\n  \n> Stance: For – with care  \n") == {"label": "for", "stance": "with care"}
    assert stances.parse("Stance: for, because") is None  # no separator: not a stance line


@pytest.mark.parametrize("labels,people,verdict", [
    (["for", "for"], None, "CONSENSUS: for (for 2)"),
    (["for", "for"], [], "CONSENSUS: for (for 2)"),
    (["for", "for"], ["A"], "CONSENSUS: for (for 2; people: A 1)"),
    (["for", "for"], ["A", "B"], "LEANING for (for 2; people: A 1 · B 1)"),
    (["mixed", "neutral", "abstain"], None, "SPLIT (undecided 3)"),
    (["unsure", "unsure"], ["A", "A"], "SPLIT (undecided 2; people: A 2)"),
    (["for", "against", "for"], None, "LEANING for (for 2 · against 1)"),
    (["for", "against", "x", "y"], None, "SPLIT (for 1 · against 1 · x 1 · y 1)"),
    (["for", "for", "against", "against"], None, "SPLIT (for 2 · against 2)"),  # half is no majority
    (["undecided", "undecided", "for"], None, "SPLIT (undecided 2 · for 1)"),
])
def test_the_verdict(labels: list[str], people: list[str] | None, verdict: str) -> None:
    assert stances.verdict(labels, people) == verdict


def test_the_text_lists_every_row_and_ends_with_the_verdict() -> None:
    rows = [stances.Row("Ana", "for", "a trial", None), stances.Row("Ben", "", "not sure yet", "for")]
    assert stances.text(rows, 3, ["A"]) == ("**Stances after round 3**\n- Ana: **for** (new) — a trial\n"
                                            "- Ben: **undecided** (was for) — not sure yet\n\n"
                                            "**Verdict:** SPLIT (for 1 · undecided 1; people: A 1)")


def test_a_persona_without_a_stance_is_left_out_and_the_rest_still_shown() -> None:
    s = state(turn("ana", 1, {"label": "for"}), turn("ben", 1, {"label": "against", "stance": "too soon"}))
    assert [(r.persona, r.label, r.stance) for r in stances.table(s, 1)] == [("Ben", "against", "too soon")]
