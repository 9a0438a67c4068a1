"""The meeting's tally (pure): average rank with a missing item ranked sixth, then first places, then voters;
items are option ids compared exactly."""

from __future__ import annotations

from core.deliberation.tally import MISSING_RANK, Tallied, first_choices, places, tally


def test_items_are_ids_never_merged_by_their_words() -> None:
    """"Option A" is not "Option B", "A" is not "a", and no article is dropped: ids are compared exactly."""
    assert places(["A", "B", "C", "A", ""]) == [(1, "A"), (2, "B"), (3, "C")]
    assert [t.item for t in tally({"ana": ["A", "B"], "ben": ["A"]})] == ["A", "B"]
    assert first_choices({"ana": ["A"], "ben": ["a"]}) == ["A", "a"]


def test_the_average_counts_an_item_a_voter_left_out_as_ranked_sixth() -> None:
    assert MISSING_RANK == 6
    result = tally({"ana": ["Apex", "B"], "ben": ["B", "Apex"], "cy": ["Apex"]})
    assert result == [Tallied("Apex", (1 + 2 + 1) / 3, 2, 3), Tallied("B", (2 + 1 + 6) / 3, 1, 2)]


def test_ties_go_to_first_places_then_to_voters_then_by_name() -> None:
    # A and B average 3.5 each; A has the first place.
    assert [t.item for t in tally({"ana": ["Apex", "C", "D", "E", "F"], "ben": ["C", "D", "E", "F", "B"]})][:1] == ["C"]
    firsts = tally({"ana": ["Apex", "X"], "ben": ["X", "B"]})
    assert [(t.item, t.firsts) for t in firsts] == [("X", 1), ("Apex", 1), ("B", 0)]
    voters = tally({"ana": ["Apex", "B", "C"], "ben": ["C", "D", "Apex"], "cy": []})
    by_item = {t.item: t for t in voters}
    assert by_item["Apex"].average == by_item["C"].average and by_item["Apex"].voters == by_item["C"].voters == 2
    assert [t.item for t in voters][:2] == ["Apex", "C"]  # equal on everything: by name
    more_voters = tally({"ana": ["P", "Q"], "ben": ["Q", "R", "S", "T", "U"], "cy": ["R"]})
    assert {t.item: (t.average, t.firsts, t.voters) for t in more_voters}["Q"] == ((2 + 1 + 6) / 3, 1, 2)


def test_only_a_voters_first_five_places_count_and_a_repeat_keeps_its_place() -> None:
    """A repeat counts for none and keeps its place (nothing below it moves up): the first five places count."""
    result = tally({"ana": ["apex", "apex", "b", "c", "d", "e", "f"], "ben": ["apex", ""]})
    assert result[0].item == "apex"
    assert {t.item for t in result} == {"apex", "b", "c", "d"}  # e is the sixth place
    assert {t.item: t.average for t in result}["b"] == (3 + 6) / 2  # b stays third, never moved up to second
    first = result[0]
    assert (first.average, first.firsts, first.voters) == (1.0, 2, 2)
    five = tally({"ana": ["apex", "b", "c", "d", "e", "f"]})
    assert [t.item for t in five] == ["apex", "b", "c", "d", "e"] and five[-1].average == 5.0


def test_no_ballots_no_tally_and_first_choices_skip_empty_ballots() -> None:
    assert tally({}) == []
    assert first_choices({"ana": ["O2", "x"], "ben": [], "cy": ["O1"]}) == ["O2", "O1"]


def test_an_equal_average_goes_to_more_first_places() -> None:
    result = tally({"ana": ["Apex", "X", "Y"], "ben": ["Y", "X", "Apex"]})  # all three average 2
    assert [(t.item, t.average, t.firsts) for t in result] == [("Apex", 2.0, 1), ("Y", 2.0, 1), ("X", 2.0, 0)]


def test_an_equal_average_and_first_places_go_to_more_voters() -> None:
    result = tally({"ana": ["a1", "a2", "P", "Q"], "ben": ["b1", "b2", "P", "Q"], "cy": ["c1", "c2", "c3", "Q"]})
    by = {t.item: t for t in result}
    assert by["P"].average == by["Q"].average == 4.0 and by["P"].firsts == by["Q"].firsts == 0
    order = [t.item for t in result]
    assert order.index("Q") < order.index("P")  # three voters before two, though P comes first by name
