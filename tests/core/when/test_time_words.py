"""The time words one by one: each spelling of a unit, each cadence word, each weekday and part of the day as people
type them, and the examples offered when words are not understood. The tables are written from what people type,
not read from the module, so a word dropped or a size misspelt fails its own case."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.when.timeparse import TimeParseError, parse_every, parse_when

NOW = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)  # a Monday afternoon

MINUTE, HOUR, DAY, WEEK = 60, 3600, 86400, 7 * 86400
CADENCES = [
    ("5m", 5 * MINUTE), ("5 min", 5 * MINUTE), ("5 mins", 5 * MINUTE), ("5 minute", 5 * MINUTE),
    ("5 minutes", 5 * MINUTE),
    ("2h", 2 * HOUR), ("2 hr", 2 * HOUR), ("2 hrs", 2 * HOUR), ("2 hour", 2 * HOUR), ("2 hours", 2 * HOUR),
    ("3d", 3 * DAY), ("3 day", 3 * DAY), ("3 days", 3 * DAY),
    ("2w", 2 * WEEK), ("2 wk", 2 * WEEK), ("2 wks", 2 * WEEK), ("2 week", 2 * WEEK), ("2 weeks", 2 * WEEK),
    ("hourly", HOUR), ("Daily", DAY), ("weekly", WEEK),
]


@pytest.mark.parametrize(("words", "seconds"), CADENCES, ids=[w for w, _ in CADENCES])
def test_each_spelling_of_a_unit_and_each_cadence_word_is_its_length(words: str, seconds: int) -> None:
    assert parse_every(words) == seconds


@pytest.mark.parametrize("words", ["in 2 hrs", "in 2 hr", "in 120 min", "in 2 hours"])
def test_a_unit_s_spellings_say_the_same_time_ahead(words: str) -> None:
    assert parse_when(words, NOW) == datetime(2026, 3, 2, 17, 30, tzinfo=UTC)


# The next such day at 09:00, never today: from Monday 2 March 2026.
WEEKDAYS = [
    ("monday", 9), ("tuesday", 3), ("wednesday", 4), ("thursday", 5), ("friday", 6), ("saturday", 7), ("sunday", 8),
    ("mon", 9), ("tue", 3), ("wed", 4), ("thu", 5), ("fri", 6), ("sat", 7), ("sun", 8), ("Thurs", 5),
]


@pytest.mark.parametrize(("word", "day"), WEEKDAYS, ids=[w for w, _ in WEEKDAYS])
def test_each_weekday_is_the_next_such_day_in_the_morning(word: str, day: int) -> None:
    assert parse_when(word, NOW) == datetime(2026, 3, day, 9, 0, tzinfo=UTC)


PARTS = [
    ("tomorrow morning", 3, 9), ("tomorrow afternoon", 3, 14), ("tomorrow evening", 3, 18),
    ("friday tonight", 6, 18), ("tonight", 2, 18), ("friday at noon", 6, 12),
]


@pytest.mark.parametrize(("words", "day", "hour"), PARTS, ids=[w for w, _, _ in PARTS])
def test_each_part_of_the_day_is_its_hour(words: str, day: int, hour: int) -> None:
    assert parse_when(words, NOW) == datetime(2026, 3, day, hour, 0, tzinfo=UTC)


def test_words_not_understood_are_answered_with_examples_people_can_copy() -> None:
    with pytest.raises(TimeParseError) as refused:
        parse_when("whenever", NOW)
    assert str(refused.value) == ("I don't understand “whenever” as a time. Try “in 1 hour”, “tomorrow 09:00”, "
                                  "“tomorrow morning”, “monday”, “friday 14:30” or “2026-03-02 09:00”.")


@pytest.mark.parametrize("example", ["in 1 hour", "tomorrow 09:00", "tomorrow morning", "monday", "friday 14:30",
                                     "2026-03-02 09:00"])
def test_each_example_offered_is_understood(example: str) -> None:
    assert parse_when(example, datetime(2026, 3, 1, 12, 0, tzinfo=UTC)) > datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
