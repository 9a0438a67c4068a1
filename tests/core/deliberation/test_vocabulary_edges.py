"""The edges of the vocabulary's rules, one case each: what marks a label may carry, where a hedge ends, what a
table row credits and shows, and where a majority starts (each case fails when its rule is broken)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import choices, stances
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.models import Author, Discussion, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)
ADOPT = "Adopt trunk-based development"
ON_TABLE = [Option("O1", ADOPT), Option("O2", "Keep gitflow")]
SHOWN = {o.id: o.label for o in ON_TABLE}


def turn(who: str, data: dict[str, object] | None, round_: int = 1, author: Author = Author.PERSONA) -> Turn:
    if data and "choice" in data:
        data = {"label": data["choice"], **data}  # a stance turn records the label it read its choice from
    return Turn(key=f"d:r{round_}:{who}", discussion_id="d", round=round_, step=1, phase=Phase.STATEMENT,
                persona_key=who, status=TurnStatus.DONE, text="...", data=data, author=author, created_at=T0)


def table_of(personas: list[Persona], turns: list[Turn], round_: int = 1) -> list[stances.Row]:
    proposals = turn("moderator", {"listed": choices.records(ON_TABLE)}, round_=0)
    s = State(discussion=Discussion(id="d", topic="t", created_at=T0, updated_at=T0), personas=personas,
              turns=[proposals, *turns])
    return stances.table(s, round_)


ANA, BEN = (Persona(key=k, name=k.capitalize(), role=Role.EXPERT) for k in ("ana", "ben"))
CONTRARIAN = Persona(key="contrarian", name="Contrarian", role=Role.CONTRARIAN)


# choices: labels, hedges, new options ---------------------------------------------------------------------
@pytest.mark.parametrize("label", ["**O2**.", "“O2”", "`o2`!", "  O2  "])
def test_an_id_in_markup_or_quotes_is_still_that_id(label: str) -> None:
    assert choices.read(label, ON_TABLE) == "O2"


@pytest.mark.parametrize("label", ["“Not sure”, leaning O1", "Undecided but leaning O1", "maybe O2 later",
                                   "unentschieden aber eher O1"])
def test_a_hedge_followed_by_an_option_is_still_a_hedge(label: str) -> None:
    assert choices.is_hedge(label) and choices.read(label, ON_TABLE) == choices.UNDECIDED


@pytest.mark.parametrize(("label", "new"), [("**new: Trunk-based**", "Trunk-based"), ("new: “Plan X”.", "Plan X"),
                                            ("new: Plan X", "Plan X"), ("adopt O1", "")])
def test_a_new_option_is_read_without_its_markup(label: str, new: str) -> None:
    assert choices.proposed(label) == new


def test_a_new_options_label_is_cut_at_eighty_characters() -> None:
    assert choices.proposed("new: " + "a" * 100) == "a" * 80


def test_extending_cleans_each_label_and_passes_over_empty_ones() -> None:
    assert choices.extend([], ["", "**Adopt X**", "Plan X"]) == [Option("O1", "Adopt X"), Option("O2", "Plan X")]


def test_the_listing_a_prompt_reads() -> None:
    assert choices.listing(ON_TABLE) == f"- O1: {ADOPT}\n- O2: Keep gitflow"


# stances: what a turn records -------------------------------------------------------------------------------
def test_a_stance_without_a_label_is_undecided_not_unreadable() -> None:
    assert stances.record({}, ON_TABLE)["choice"] == choices.UNDECIDED
    assert stances.choice_of(turn("ana", {})) == choices.UNDECIDED


def test_a_recorded_stance_keeps_the_label_people_read() -> None:
    assert stances.record({"label": "o1"}, ON_TABLE)["shown"] == f"{ADOPT} [O1]"
    assert stances.record({"label": "new: Ship it"}, ON_TABLE)["shown"] == "Ship it [O3]"


def test_a_recorded_choice_wins_over_the_label_beside_it() -> None:
    assert stances.choice_of(turn("ana", {"choice": "O2", "label": "O1"}), ON_TABLE) == "O2"


def test_a_turn_recorded_before_choices_were_kept_is_read_against_the_options() -> None:
    old = turn("ana", {"label": ADOPT, "stance": "the trial"})
    assert stances.choice_of(old, ON_TABLE) == "O1"
    rows = table_of([ANA], [old])
    assert rows[0].choice == "O1" and rows[0].label == f"{ADOPT} [O1]"


def test_open_floor_slots_without_a_speaker_do_not_vote() -> None:
    empty = Persona(key="slot3", name="Seat 3", role=Role.EXPERT)
    taken = Persona(key="slot1", name="Ines", role=Role.EXPERT, expertise=["billing"])
    assert stances.voters([empty, taken, ANA]) == [taken, ANA]


def test_a_row_shows_what_its_persona_chose_before_and_who_wrote_it() -> None:
    dana = Persona(key="dana", name="Dana", role=Role.EXPERT, held_by="U1")
    rows = table_of([ANA, BEN, dana], [
        turn("ana", {"choice": "O2", "stance": "s"}, round_=1), turn("ana", {"choice": "O1", "stance": "s"}, round_=2),
        turn("ben", {"choice": "O1", "stance": "s"}, round_=2),
        turn("dana", {"choice": "O1", "stance": "s"}, round_=2, author=Author.STAND_IN)], round_=2)
    assert [(r.persona, r.before_shown, r.change) for r in rows] == [
        ("Ana", "Keep gitflow [O2]", "was Keep gitflow [O2]"), ("Ben", "", "new"), ("AI stand-in for Dana", "", "new")]


def test_only_the_contrarians_row_is_marked_not_counted() -> None:
    rows = table_of([ANA, CONTRARIAN], [turn("ana", {"choice": "O1", "stance": "s"}),
                                        turn("contrarian", {"choice": "O2", "stance": "s"})])
    lines = stances.text(rows, 1, shown=SHOWN).splitlines()
    assert [("not counted" in line) for line in lines[1:3]] == [False, True]


# stances: the verdict -----------------------------------------------------------------------------------------
def test_half_is_not_a_majority() -> None:
    verdict = stances.judge(["O1", "O1", "O2", "undecided"])
    assert (verdict.kind, verdict.choice) == ("SPLIT", "")
    assert stances.judge(["O1", "O1", "O2"]).kind == "LEANING"


@pytest.mark.parametrize(("personas", "people", "kind"), [
    ([], [], "NO VERDICT"), (["undecided", "unreadable"], [], "NO VERDICT"), (["O1", "O2"], [], "SPLIT"),
    (["O1", "O1"], ["O2", "O2"], "SPLIT")])
def test_a_verdict_without_a_side_names_no_option(personas: list[str], people: list[str], kind: str) -> None:
    verdict = stances.judge(personas, people)
    assert (verdict.kind, verdict.choice) == (kind, "")


def test_with_no_persona_stances_the_peoples_votes_are_still_shown() -> None:
    text = stances.judge([], ["O1"], SHOWN).text
    assert text.startswith("NO VERDICT") and f"people: {ADOPT} [O1] 1 of 1" in text and "personas: none" in text
    assert stances.judge([]).text == "NO VERDICT: no stances recorded"


def test_the_contrarian_is_shown_beside_the_verdict_by_its_label() -> None:
    text = stances.verdict(["O1", "O1"], [], SHOWN, aside=["O2"])
    assert text.startswith(f"CONSENSUS: {ADOPT} [O1]") and "the Contrarian (not counted): Keep gitflow [O2]" in text
    rows = table_of([ANA, BEN], [turn("ana", {"choice": "O1", "stance": "s"}), turn("ben", {"choice": "O1",
                                                                                           "stance": "s"})])
    assert f"CONSENSUS: {ADOPT} [O1]" in stances.of_rows(rows, [], SHOWN).text
