"""Cron's names one by one: each month and weekday name, each @macro as people type them, each field's range with its
name in the refusal, and how far ahead a schedule may first fire. The tables are written from the cron standard,
not read from the module, so a name dropped or a bound moved fails its own case."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.when import cron

MONTH_NAMES = [("jan", 1), ("feb", 2), ("mar", 3), ("apr", 4), ("may", 5), ("jun", 6), ("jul", 7), ("aug", 8),
               ("sep", 9), ("oct", 10), ("nov", 11), ("dec", 12), ("JAN", 1), ("Dec", 12)]


@pytest.mark.parametrize(("name", "number"), MONTH_NAMES, ids=[n for n, _ in MONTH_NAMES])
def test_each_month_name_is_its_number(name: str, number: int) -> None:
    assert cron.parse(f"0 9 1 {name} *").months == {number}


DAY_NAMES = [("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6), ("MON", 1),
             ("Sat", 6)]


@pytest.mark.parametrize(("name", "number"), DAY_NAMES, ids=[n for n, _ in DAY_NAMES])
def test_each_weekday_name_is_its_number_from_sunday(name: str, number: int) -> None:
    assert cron.parse(f"0 9 * * {name}").weekdays == {number}


def test_named_ranges_run_over_the_names_between() -> None:
    assert cron.parse("0 9 * * mon-fri").weekdays == {1, 2, 3, 4, 5}
    assert cron.parse("0 9 1 mar-may *").months == {3, 4, 5}


MACROS = [
    ("@hourly", "0 * * * *"), ("@daily", "0 0 * * *"), ("@midnight", "0 0 * * *"), ("@weekly", "0 0 * * 0"),
    ("@monthly", "0 0 1 * *"), ("@yearly", "0 0 1 1 *"), ("@annually", "0 0 1 1 *"), ("@Daily", "0 0 * * *"),
]


@pytest.mark.parametrize(("macro", "schedule"), MACROS, ids=[m for m, _ in MACROS])
def test_each_macro_is_its_schedule(macro: str, schedule: str) -> None:
    assert cron.parse(macro) == cron.parse(schedule)
    assert cron.parse(macro).expr == schedule


# (a field's place, its name in a refusal, its lowest and highest value)
RANGES = [(0, "minute", 0, 59), (1, "hour", 0, 23), (2, "day of month", 1, 31), (3, "month", 1, 12),
          (4, "day of week", 0, 7)]


def _with(place: int, value: str) -> str:
    fields = ["0", "0", "1", "1", "*"]
    fields[place] = value
    return " ".join(fields)


@pytest.mark.parametrize(("place", "name", "low", "high"), RANGES, ids=[r[1] for r in RANGES])
def test_each_field_takes_its_lowest_and_highest_value(place: int, name: str, low: int, high: int) -> None:
    assert cron.parse(_with(place, str(low)))
    assert cron.parse(_with(place, str(high)))
    every = getattr(cron.parse(_with(place, "*")), ("minutes", "hours", "days", "months", "weekdays")[place])
    assert every == set(range(low, high + 1)) - ({7} if name == "day of week" else set())  # 7 is Sunday again


@pytest.mark.parametrize(("place", "name", "low", "high"), RANGES, ids=[r[1] for r in RANGES])
def test_each_field_refuses_one_past_its_range_by_name(place: int, name: str, low: int, high: int) -> None:
    with pytest.raises(cron.CronError) as above:
        cron.parse(_with(place, str(high + 1)))
    assert str(above.value) == f"{name} {high + 1} is out of range ({low}–{high})."
    with pytest.raises(cron.CronError) as word:
        cron.parse(_with(place, "x"))
    assert str(word.value) == f"“x” is not a valid {name} (expected {low}–{high})."
    if low:
        with pytest.raises(cron.CronError) as below:
            cron.parse(_with(place, str(low - 1)))
        assert str(below.value) == f"{name} {low - 1} is out of range ({low}–{high})."


# 29 February on a Sunday: 2032, then 2060.
SUNDAY_29_FEBRUARY = date(2032, 2, 29)


def _noon(days_before: int) -> datetime:
    return datetime.combine(SUNDAY_29_FEBRUARY - timedelta(days=days_before), datetime.min.time(), UTC).replace(
        hour=12)


def test_a_schedule_first_firing_eight_years_of_leap_days_ahead_is_found_and_one_day_more_is_refused() -> None:
    rare = cron.parse("0 0 29 2 */7")
    assert cron.next_time(rare, ZoneInfo("UTC"), _noon(366 * 8 - 1)) == datetime(2032, 2, 29, tzinfo=UTC)
    with pytest.raises(cron.CronError, match="never matches a real date"):
        cron.next_time(rare, ZoneInfo("UTC"), _noon(366 * 8))
