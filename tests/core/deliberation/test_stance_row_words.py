"""What a stance row says changed, word for word, where the earlier choice had no words of its own or was shown
as its option; and the stance line every stance turn is asked for, which is the one read. Written as people
read them."""

from __future__ import annotations

import pytest

from core.deliberation import stances
from core.deliberation.stances import Row


def test_a_row_whose_earlier_choice_was_empty_says_it_was_undecided() -> None:
    assert Row("Ana", "for", "x", "").change == "was undecided"


def test_a_row_says_its_earlier_choice_as_it_was_shown() -> None:
    assert Row("Ana", "O2", "x", "O1", before_shown="Adopt [O1]").change == "was Adopt [O1]"
    assert Row("Ana", "O2", "x", "O1").change == "was O1"
    assert Row("Ana", "O1", "x", "O1", before_shown="Adopt [O1]").change == "unchanged"



# What every stance turn is told, word for word: the form it asks for is the one `parse` reads.
STANCE_LINE = ("End your turn with one last line in exactly this form (it is recorded as your stance), whatever "
               "language you write in: the word `Stance:`, the label and the dash stay exactly as shown, in English; "
               "only your position after the dash is in the discussion's language:\n"
               "Stance: <label> — <your position right now, in one line>\n"
               "where <label> is exactly one of: the id of an option on the table (such as O2), `new: <a new option "
               "in at most five words>`, or undecided (for or against only while no option is listed); anything "
               "else is recorded as undecided (unreadable).")


def test_a_stance_turn_is_asked_for_the_line_it_is_read_by() -> None:
    assert stances.LINE_INSTRUCTION == STANCE_LINE
    form = STANCE_LINE.splitlines()[1]
    for label in ("O2", "new: pilot in one team", "undecided"):
        written = form.replace("<label>", label).replace("<your position right now, in one line>", "trial first")
        assert stances.parse(f"My case.\n{written}") == {"label": label, "stance": "trial first"}


@pytest.mark.parametrize("keyword", ["Stance", "Haltung", "Standpunkt", "Position", "Posición", "Postura",
                                     "Posizione", "Standpunt", "Positie"])
def test_a_stance_line_whose_keyword_a_model_translated_is_still_read(keyword: str) -> None:
    assert stances.parse(f"Text.\n{keyword}: O1 — trial first") == {"label": "O1", "stance": "trial first"}
