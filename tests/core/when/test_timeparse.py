"""Time words, cadences, cron and trigger slots in a zone: pure functions, fixed instants, no clock."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from apscheduler.triggers.cron import CronTrigger

from core.when import cron
from core.when.timeparse import (
    TimeParseError,
    describe,
    first_slot,
    local_text,
    next_slot,
    parse_every,
    parse_when,
    validate_cron,
)

BERLIN = "Europe/Berlin"
NOW = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)  # Monday 16:30 in Berlin


def berlin(*args: int) -> datetime:
    return datetime(*args, tzinfo=ZoneInfo(BERLIN)).astimezone(UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("in 1 hour", NOW + timedelta(hours=1)),
        ("in 30 minutes", NOW + timedelta(minutes=30)),
        ("in an hour", NOW + timedelta(hours=1)),
        ("in half an hour", NOW + timedelta(minutes=30)),
        ("in 2 days", NOW + timedelta(days=2)),
        ("tomorrow 09:00", berlin(2026, 3, 3, 9, 0)),
        ("tomorrow morning", berlin(2026, 3, 3, 9, 0)),
        ("Tomorrow", berlin(2026, 3, 3, 9, 0)),
        ("tomorrow 2:30pm", berlin(2026, 3, 3, 14, 30)),
        ("monday", berlin(2026, 3, 9, 9, 0)),  # said on a Monday: next week's
        ("monday 10:00", berlin(2026, 3, 9, 10, 0)),
        ("fri", berlin(2026, 3, 6, 9, 0)),
        ("next friday 14:30", berlin(2026, 3, 6, 14, 30)),
        ("17:00", berlin(2026, 3, 2, 17, 0)),  # later today
        ("09:00", berlin(2026, 3, 3, 9, 0)),  # already past today: tomorrow
        ("today 5pm", berlin(2026, 3, 2, 17, 0)),
        ("2026-03-05 08:00", berlin(2026, 3, 5, 8, 0)),
        ("2026-03-05", berlin(2026, 3, 5, 9, 0)),
        ("2026-03-05T08:00:00+00:00", datetime(2026, 3, 5, 8, 0, tzinfo=UTC)),
    ],
)
def test_when_words_become_utc_instants_in_the_zone(words: str, expected: datetime) -> None:
    result = parse_when(words, NOW, BERLIN)
    assert result == expected and result.tzinfo is not None and result.utcoffset() == timedelta(0)


def test_the_same_words_mean_different_instants_in_different_zones() -> None:
    assert parse_when("tomorrow 09:00", NOW, "America/New_York") == datetime(2026, 3, 3, 14, 0, tzinfo=UTC)
    # In Tokyo it is already 00:30 on Tuesday, so tomorrow is Wednesday.
    assert parse_when("tomorrow 09:00", NOW, "Asia/Tokyo") == datetime(2026, 3, 4, 0, 0, tzinfo=UTC)


def test_a_wall_time_skipped_by_daylight_saving_lands_when_the_clocks_do() -> None:
    # 29 March 2026: Berlin jumps from 02:00 to 03:00.
    before = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    assert parse_when("tomorrow 02:30", before, BERLIN) == berlin(2026, 3, 29, 3, 30)


@pytest.mark.parametrize(
    ("words", "message"),
    [
        ("whenever", "I don't understand “whenever” as a time"),
        ("yesterday", "I don't understand"),
        ("in 3 parsecs", "I don't understand"),
        ("25:00", "I don't understand"),
        ("monday 25:00", "I don't understand"),
        ("2020-01-01 09:00", "is in the past"),
        ("in 400 days", "within the next year"),
    ],
)
def test_unclear_or_impossible_times_get_a_friendly_sentence(words: str, message: str) -> None:
    with pytest.raises(TimeParseError, match=message):
        parse_when(words, NOW, BERLIN)


def test_an_unknown_zone_is_named_in_the_error() -> None:
    with pytest.raises(TimeParseError, match="Mars/Olympus"):
        parse_when("tomorrow", NOW, "Mars/Olympus")


@pytest.mark.parametrize(
    ("words", "seconds"),
    [("1d", 86400), ("12h", 43200), ("1w", 604800), ("30m", 1800), ("2 days", 172800), ("daily", 86400),
     ("3 hours", 10800), ("weekly", 604800)],
)
def test_cadences(words: str, seconds: int) -> None:
    assert parse_every(words) == seconds


@pytest.mark.parametrize("words", ["fortnightly", "0d", "10s", "2 years", "d"])
def test_bad_cadences(words: str) -> None:
    with pytest.raises(TimeParseError):
        parse_every(words)


@pytest.mark.parametrize("expr", ["* * * * *", "0 9 * * 1-5", "*/15 9-17 * * mon-fri", "0 0 1 jan,jul *",
                                  "5,35 */2 1-15/3 * 0", "0 9 * * 7", " 0  9 * * 1 "])
def test_valid_cron_is_kept_as_written(expr: str) -> None:
    assert validate_cron(expr) == " ".join(expr.split())


def test_cron_nicknames_are_expanded() -> None:
    assert validate_cron("@daily") == "0 0 * * *"


@pytest.mark.parametrize(
    ("expr", "message"),
    [("* * * *", "5 fields"), ("* * * * * *", "5 fields"), ("60 * * * *", "out of range"), ("a * * * *", "minute"),
     ("*/0 * * * *", "step"), ("0 0 30 2 *", "never matches"), ("5-1 * * * *", "backwards"), ("", "5 fields")],
)
def test_invalid_cron_says_what_is_wrong(expr: str, message: str) -> None:
    with pytest.raises(TimeParseError, match=message):
        validate_cron(expr)


def test_cron_every_minute_is_the_next_whole_minute() -> None:
    c = cron.parse("* * * * *")
    assert cron.next_time(c, ZoneInfo("UTC"), datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)) == datetime(
        2026, 3, 2, 9, 1, tzinfo=UTC)
    assert cron.next_time(c, ZoneInfo("UTC"), datetime(2026, 3, 2, 9, 0, 59, 999, tzinfo=UTC)) == datetime(
        2026, 3, 2, 9, 1, tzinfo=UTC)


def test_cron_day_fields_follow_vixie_cron_or_semantics() -> None:
    c = cron.parse("0 9 13 * 5")  # the 13th, or any Friday
    after = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
    assert cron.next_time(c, ZoneInfo("UTC"), after) == datetime(2026, 3, 6, 9, 0, tzinfo=UTC)  # Friday 6th


def test_cron_across_daylight_saving_changes_in_the_zone() -> None:
    tz = ZoneInfo(BERLIN)
    daily = cron.parse("30 2 * * *")
    # Spring forward: 02:30 does not exist on 29 March, so that day has no firing.
    assert cron.next_time(daily, tz, berlin(2026, 3, 28, 3, 0)) == berlin(2026, 3, 30, 2, 30)
    # Fall back: 02:30 happens twice on 25 October; it fires once.
    first = cron.next_time(daily, tz, berlin(2026, 10, 25, 0, 0))
    assert first == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    assert cron.next_time(daily, tz, first) == berlin(2026, 10, 26, 2, 30)
    nine = cron.parse("0 9 * * *")
    assert cron.next_time(nine, tz, berlin(2026, 3, 28, 10, 0)) == datetime(2026, 3, 29, 7, 0, tzinfo=UTC)


def test_cron_matches_apscheduler_on_random_expressions() -> None:
    """A cross-check against APScheduler's CronTrigger: AND-only day fields (so one of them stays '*'), and
    weekdays by name, because APScheduler 3's from_crontab reads day-of-week numbers as Monday=0."""
    rng = random.Random(7)
    for _ in range(300):
        minute = rng.choice(["*", "*/7", "0", "15,45", "5-20/5"])
        hour = rng.choice(["*", "9", "*/3", "8-18", "0,12"])
        dom, dow = rng.choice([("*", "*"), ("1", "*"), ("*/10", "*"), ("*", "mon-fri"), ("*", "sat,sun"),
                               ("15-20", "*")])
        month = rng.choice(["*", "2", "*/4", "jun-aug"])
        expr = f"{minute} {hour} {dom} {month} {dow}"
        zone = rng.choice(["UTC", "Asia/Tokyo", "America/Sao_Paulo"])  # zones without DST in these years
        after = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=rng.randrange(0, 400 * 24 * 60))
        ours = cron.next_time(cron.parse(expr), ZoneInfo(zone), after)
        theirs = CronTrigger.from_crontab(expr, timezone=zone).get_next_fire_time(None, after + timedelta(minutes=1)
                                                                                   if after.second == 0 else after)
        assert theirs is not None and ours == theirs.astimezone(UTC), (expr, zone, after)


def test_every_slots_keep_their_phase_and_skip_what_was_missed() -> None:
    slot = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    assert next_slot("every:3600", "UTC", slot, slot) == slot + timedelta(hours=1)
    # Down for five and a half hours: one firing now, the next on the hour after.
    assert next_slot("every:3600", "UTC", slot, slot + timedelta(hours=5, minutes=30)) == slot + timedelta(hours=6)


def test_daily_cadences_keep_the_wall_clock_across_daylight_saving() -> None:
    slot = berlin(2026, 3, 28, 9, 0)
    assert next_slot("every:86400", BERLIN, slot, slot) == berlin(2026, 3, 29, 9, 0)  # 23 hours later
    assert next_slot("every:604800", BERLIN, slot, slot) == berlin(2026, 4, 4, 9, 0)


def test_one_shot_and_cron_slots() -> None:
    at = datetime(2026, 3, 3, 8, 0, tzinfo=UTC)
    assert first_slot(f"at:{at.isoformat()}", "UTC", NOW) == at
    assert next_slot(f"at:{at.isoformat()}", "UTC", at, at) is None
    assert first_slot("cron:0 9 * * 1", BERLIN, NOW) == berlin(2026, 3, 9, 9, 0)
    # A cron missed for days fires once; its next slot is the first one after now.
    assert next_slot("cron:0 9 * * *", BERLIN, berlin(2026, 3, 2, 9, 0), berlin(2026, 3, 5, 12, 0)) == berlin(
        2026, 3, 6, 9, 0)


def test_descriptions_people_read() -> None:
    assert describe("every:86400", "UTC") == "every day"
    assert describe("every:43200", "UTC") == "every 12 hours"
    assert describe("cron:0 9 * * 1", BERLIN) == "cron `0 9 * * 1` (Europe/Berlin)"
    assert local_text(berlin(2026, 3, 3, 9, 0), BERLIN) == "Tue 3 Mar 09:00 (Europe/Berlin)"


def test_numeric_days_of_week_are_standard_cron_sunday_zero_or_seven() -> None:
    """APScheduler 3's from_crontab would read 0 as Monday; the schedule table uses standard cron."""
    after = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday
    sunday = datetime(2026, 3, 8, 9, 0, tzinfo=UTC)
    for expr in ("0 9 * * 0", "0 9 * * 7", "0 9 * * sun"):
        assert cron.next_time(cron.parse(expr), ZoneInfo("UTC"), after) == sunday
    assert cron.next_time(cron.parse("0 9 * * 1"), ZoneInfo("UTC"), after) == datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


# The edges of each rule, one case each: a clock's hours and minutes, half-day words, the past and the year ahead.
THURSDAY = berlin(2026, 3, 5, 7, 0)  # 07:00 on Thursday 5 March in Berlin


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("noon", berlin(2026, 3, 5, 12, 0)),
        ("at noon", berlin(2026, 3, 5, 12, 0)),
        ("at 14:30", berlin(2026, 3, 5, 14, 30)),
        ("1am", berlin(2026, 3, 6, 1, 0)),
        ("9am", berlin(2026, 3, 5, 9, 0)),
        ("9pm", berlin(2026, 3, 5, 21, 0)),
        ("12pm", berlin(2026, 3, 5, 12, 0)),  # noon
        ("12am", berlin(2026, 3, 6, 0, 0)),  # midnight
        ("23:00", berlin(2026, 3, 5, 23, 0)),
        ("10:59", berlin(2026, 3, 5, 10, 59)),
        ("today", berlin(2026, 3, 5, 9, 0)),  # a day without a time means its morning
        ("tonight", berlin(2026, 3, 5, 18, 0)),
        ("tonight 20:00", berlin(2026, 3, 5, 20, 0)),
        ("tuesday", berlin(2026, 3, 10, 9, 0)),  # said on a Thursday: five days on
        ("wed", berlin(2026, 3, 11, 9, 0)),
        ("in half hour", THURSDAY + timedelta(minutes=30)),
        ("in one day", THURSDAY + timedelta(days=1)),
        ("now", THURSDAY),
        ("right now", THURSDAY),
        ("in 366 days", THURSDAY + timedelta(days=366)),  # the last day within a year
        ("2026-03-05T08:00:00Z", datetime(2026, 3, 5, 8, 0, tzinfo=UTC)),
    ],
)
def test_the_edges_of_each_time_word(words: str, expected: datetime) -> None:
    assert parse_when(words, THURSDAY, BERLIN) == expected


@pytest.mark.parametrize("words", ["13pm", "0am", "24:00", "10:60", "9", "mo", "in 367 days"])
def test_words_just_past_an_edge_are_refused(words: str) -> None:
    with pytest.raises(TimeParseError):
        parse_when(words, THURSDAY, BERLIN)


def test_a_clock_time_said_at_that_very_minute_means_tomorrow() -> None:
    nine = berlin(2026, 3, 5, 9, 0)
    assert parse_when("09:00", nine, BERLIN) == berlin(2026, 3, 6, 9, 0)


def test_a_moment_up_to_a_second_ago_is_now_and_older_is_the_past() -> None:
    assert parse_when("2026-03-05T05:59:59+00:00", THURSDAY, BERLIN) == THURSDAY - timedelta(seconds=1)
    with pytest.raises(TimeParseError, match="is in the past"):
        parse_when("2026-03-05T05:59:58.500+00:00", THURSDAY, BERLIN)


def test_no_zone_means_utc() -> None:
    assert parse_when("tomorrow 09:00", THURSDAY) == datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
    assert parse_when("tomorrow 09:00", THURSDAY, " ") == datetime(2026, 3, 6, 9, 0, tzinfo=UTC)
    assert local_text(datetime(2026, 3, 6, 9, 0, tzinfo=UTC), "") == "Fri 6 Mar 09:00 (UTC)"


def test_the_servers_own_time_zone_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every instant comes back in UTC, whatever zone the machine running Council is set to."""
    import time as system_time

    monkeypatch.setenv("TZ", "Asia/Kolkata")
    system_time.tzset()
    try:
        moments = [parse_when("tomorrow 09:00", THURSDAY, BERLIN), parse_when("2026-03-06T10:00+01:00", THURSDAY),
                   first_slot("at:2026-03-06T10:00:00+01:00", BERLIN, THURSDAY)]
    finally:
        monkeypatch.undo()
        system_time.tzset()
    assert moments == [berlin(2026, 3, 6, 9, 0), datetime(2026, 3, 6, 9, 0, tzinfo=UTC),
                       datetime(2026, 3, 6, 9, 0, tzinfo=UTC)]
    assert all(m is not None and m.utcoffset() == timedelta(0) for m in moments)


def test_cadence_edges_and_their_messages() -> None:
    assert parse_every("1m") == 60 and parse_every("366d") == 366 * 86400
    with pytest.raises(TimeParseError, match="is not a cadence"):
        parse_every("often")
    with pytest.raises(TimeParseError, match="between one minute and one year"):
        parse_every("367d")


def test_every_few_days_keeps_its_wall_clock_after_a_long_gap() -> None:
    slot = berlin(2026, 3, 2, 9, 0)
    assert next_slot("every:172800", BERLIN, slot, slot + timedelta(days=3)) == berlin(2026, 3, 6, 9, 0)


@pytest.mark.parametrize(
    ("trigger", "tz", "text"),
    [
        ("every:604800", "UTC", "every week"),
        ("every:1209600", "UTC", "every 2 weeks"),
        ("every:3600", "UTC", "every hour"),
        ("every:120", "UTC", "every 2 minutes"),
        ("every:172800", "UTC", "every 2 days"),
        ("at:2026-03-03T08:00:00+00:00", BERLIN, "once, Tue 3 Mar 09:00 (Europe/Berlin)"),
        ("cron:0 9 * * 1", "", "cron `0 9 * * 1` (UTC)"),
    ],
)
def test_every_description_people_read(trigger: str, tz: str, text: str) -> None:
    assert describe(trigger, tz) == text
