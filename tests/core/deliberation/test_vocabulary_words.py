"""The vocabulary word by word: each language's position words and hedges as people type them, the forms an option's
id takes beside words, and what is shown for a choice. Each table here is written from what people type, not read
from the module, so a word dropped or misspelt there fails its own case."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from core.deliberation import choices
from core.deliberation.choices import AGAINST, FOR, UNDECIDED, UNREADABLE, Option

# What people write for the three positions, language by language, where no list of options exists.
POSITION_WORDS = [
    ("For", FOR), ("against", AGAINST), ("Undecided", UNDECIDED),
    ("Dafür", FOR), ("dafur", FOR), ("Dagegen", AGAINST), ("unentschieden", UNDECIDED), ("unentschlossen", UNDECIDED),
    ("Pour", FOR), ("contre", AGAINST), ("Indécis", UNDECIDED), ("indécise", UNDECIDED),
    ("A favor", FOR), ("en contra", AGAINST), ("Contra", AGAINST), ("indeciso", UNDECIDED), ("indecisa", UNDECIDED),
    ("a favore", FOR), ("Contro", AGAINST), ("indecisi", UNDECIDED),
    ("Voor", FOR), ("tegen", AGAINST), ("onbeslist", UNDECIDED),
]
HEDGE_WORDS = [
    "Unsure", "not sure", "Mixed", "neutral", "abstain", "It depends", "depends", "no position", "N/A", "na", "None",
    "leaning", "TBD", "unclear", "open", "Maybe", "undetermined",
    "Weiß nicht", "weiss nicht", "unsicher", "Enthaltung", "kommt darauf an", "keine Position", "je nachdem",
    "vielleicht", "Tendenz", "incertain", "ça dépend", "sans avis", "peut-être", "depende", "no sé", "quizás",
    "dipende", "forse", "weet niet", "hangt ervan af",
]
ON_TABLE = [Option("O1", "Adopt trunk-based development"), Option("O2", "Stabilise the core first")]


@pytest.mark.parametrize(("word", "position"), POSITION_WORDS, ids=[w for w, _ in POSITION_WORDS])
def test_each_language_s_position_words_read_as_their_position_where_no_options_are_listed(
        word: str, position: str) -> None:
    assert choices.read(word, choices.SIDES) == position


@pytest.mark.parametrize("word", HEDGE_WORDS, ids=HEDGE_WORDS)
def test_each_hedge_is_undecided_alone_and_ahead_of_a_position(word: str) -> None:
    assert choices.is_hedge(word)
    assert choices.read(word, ON_TABLE) == UNDECIDED
    assert choices.read(f"{word} but leaning for", choices.SIDES) == UNDECIDED


def test_people_choose_for_or_against_by_those_words_where_no_list_exists() -> None:
    assert [(o.id, o.label) for o in choices.SIDES] == [(FOR, "For"), (AGAINST, "Against")]
    assert [choices.read(o.label, choices.SIDES) for o in choices.SIDES] == [FOR, AGAINST]


@pytest.mark.parametrize(("label", "choice"), [
    ("Adopt trunk-based development [O1]", "O1"), ("Stabilise the core first (O2)", "O2"),
    ("O1 (Adopt trunk-based development)", "O1"), ("O2: Stabilise the core first", "O2"),
    ("O1 (or O2)", UNREADABLE), ("O1 — see O2", UNREADABLE),
    ("O1 (Stabilise the core first)", UNREADABLE), ("Stabilise the core first [O1]", UNREADABLE),
])
def test_an_id_beside_words_decides_unless_the_words_name_another_option(label: str, choice: str) -> None:
    assert choices.read(label, ON_TABLE) == choice


def test_a_turn_whose_data_is_not_a_record_lists_no_options() -> None:
    turns = [SimpleNamespace(data=["O9"]), SimpleNamespace(data=None),
             SimpleNamespace(data={"listed": choices.records(ON_TABLE)})]
    assert choices.catalogue(turns) == ON_TABLE


def test_a_position_is_shown_as_its_word_and_no_choice_as_undecided() -> None:
    assert choices.show(FOR, {}) == FOR
    assert choices.show(AGAINST, {"O1": "x"}) == AGAINST
    assert choices.show("", {}) == UNDECIDED
    assert choices.show(UNREADABLE, {}) == "undecided (unreadable)"
    assert choices.show("O1", {"O1": "Adopt"}) == "Adopt [O1]"
    assert choices.show("O7", {}) == "option O7"
