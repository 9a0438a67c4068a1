"""What a stance row says changed, word for word, where the earlier choice had no words of its own or was shown
as its option. Written as people read the table."""

from __future__ import annotations

from core.deliberation.stances import Row


def test_a_row_whose_earlier_choice_was_empty_says_it_was_undecided() -> None:
    assert Row("Ana", "for", "x", "").change == "was undecided"


def test_a_row_says_its_earlier_choice_as_it_was_shown() -> None:
    assert Row("Ana", "O2", "x", "O1", before_shown="Adopt [O1]").change == "was Adopt [O1]"
    assert Row("Ana", "O2", "x", "O1").change == "was O1"
    assert Row("Ana", "O1", "x", "O1", before_shown="Adopt [O1]").change == "unchanged"

