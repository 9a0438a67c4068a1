"""People's words for times and cadences, schedule triggers and their next slots, in an IANA zone (pure)."""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.when import cron

MORNING, AFTERNOON, EVENING = time(9, 0), time(14, 0), time(18, 0)
DAY = 86400
UNITS = {"m": 60, "min": 60, "minute": 60, "h": 3600, "hr": 3600, "hour": 3600, "d": DAY, "day": DAY,
         "w": 7 * DAY, "wk": 7 * DAY, "week": 7 * DAY}
WORDS = {"hourly": 3600, "daily": DAY, "weekly": 7 * DAY}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
PARTS_OF_DAY = {"morning": MORNING, "afternoon": AFTERNOON, "evening": EVENING, "tonight": EVENING}
MIN_EVERY, MAX_EVERY = 60, 366 * DAY
MAX_AHEAD = timedelta(days=366)
WHEN_EXAMPLES = "“in 1 hour”, “tomorrow 09:00”, “tomorrow morning”, “monday”, “friday 14:30” or “2026-03-02 09:00”"

_DURATION = re.compile(r"^(\d+)\s*([a-z]+?)s?$")
_CLOCK = re.compile(r"^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$")


class TimeParseError(ValueError):
    """The words do not name a time we can use; the message is a friendly sentence with examples."""


def zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name.strip() or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise TimeParseError(f"“{name}” is not a time zone I know; use an IANA name such as Europe/Berlin.") from None


def _duration(text: str) -> int | None:
    text = text.strip().lower()
    if text in WORDS:
        return WORDS[text]
    match = _DURATION.match(text)
    if not match:
        return None
    number, unit = int(match.group(1)), match.group(2)
    return number * UNITS[unit] if unit in UNITS else None


def parse_every(text: str) -> int:
    """A cadence such as "1d", "12h", "1w", "30m", "2 days" or "daily", in seconds."""
    seconds = _duration(text)
    if seconds is None:
        raise TimeParseError(f"“{text}” is not a cadence; try 30m, 12h, 1d or 1w.")
    if not MIN_EVERY <= seconds <= MAX_EVERY:
        raise TimeParseError("A cadence must be between one minute and one year.")
    return seconds


def _clock(text: str) -> time | None:
    text = text.strip().lower().removeprefix("at ").strip()
    if text in PARTS_OF_DAY:
        return PARTS_OF_DAY[text]
    if text == "noon":
        return time(12, 0)
    match = _CLOCK.match(text)
    if not match or (match.group(2) is None and match.group(3) is None):
        return None  # a bare number is too ambiguous to be a time
    hour, minute, half = int(match.group(1)), int(match.group(2) or 0), match.group(3)
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "pm" else 0)
    if hour > 23 or minute > 59:
        return None
    return time(hour, minute)


def _at(day: date, clock: time, tz: ZoneInfo) -> datetime:
    """Wall-clock time in the zone as UTC: a time a DST jump skips moves forward by the jump (PEP 495),
    a repeated one means its first occurrence."""
    return datetime.combine(day, clock, tzinfo=tz).astimezone(UTC)


def _absolute(text: str, tz: ZoneInfo) -> datetime | None:
    """ISO 8601; without an offset it is wall-clock time in the zone, and a bare date means its morning."""
    try:
        value = datetime.fromisoformat(text.upper())
    except ValueError:
        return None
    if value.tzinfo is not None:
        return value.astimezone(UTC)
    bare_date = len(text.strip()) == len("2026-03-02")
    return _at(value.date(), MORNING if bare_date else value.time(), tz)


def _relative(words: str, now: datetime) -> datetime | None:
    """"in 1 hour", "in 30 minutes", "in an hour", "in half an hour", "in 2 days"."""
    words = words.removeprefix("in ").strip()
    if words in ("half an hour", "half hour"):
        words = "30 minutes"
    seconds = _duration(re.sub(r"^(an?|one)\s+", "1 ", words))
    return None if seconds is None else now + timedelta(seconds=seconds)


def _on_day(words: str, today: date, tz: ZoneInfo) -> datetime | None:
    """"tomorrow", "tomorrow 09:00", "tomorrow morning", "monday", "next friday 14:30", "today 17:00"."""
    day_word, _, rest = words.removeprefix("next ").partition(" ")
    if day_word in ("today", "tonight"):
        day, rest = today, rest or ("evening" if day_word == "tonight" else "")
    elif day_word == "tomorrow":
        day = today + timedelta(days=1)
    elif (weekday := _weekday(day_word)) is not None:
        day = today + timedelta(days=(weekday - today.weekday()) % 7 or 7)  # the next such day, never today
    else:
        return None
    clock = _clock(rest) if rest else MORNING
    return None if clock is None else _at(day, clock, tz)


def parse_when(text: str, now: datetime, tz: str = "UTC") -> datetime:
    """A future moment from words such as "in 1 hour", "tomorrow 09:00", "monday" or ISO 8601, as UTC."""
    words = " ".join(text.strip().lower().split())
    zone_info = zone(tz)
    today = now.astimezone(zone_info).date()
    result: datetime | None
    if words in ("now", "right now"):
        result = now
    elif words.startswith("in "):
        result = _relative(words, now)
    elif (result := _on_day(words, today, zone_info)) is None and (clock := _clock(words)) is not None:
        result = _at(today, clock, zone_info)
        if result <= now:  # "09:00" said in the afternoon means tomorrow's
            result = _at(today + timedelta(days=1), clock, zone_info)
    if result is None:
        result = _absolute(text.strip(), zone_info)
    if result is None:
        raise TimeParseError(f"I don't understand “{text}” as a time. Try {WHEN_EXAMPLES}.")
    if result < now - timedelta(seconds=1):
        raise TimeParseError(f"“{text}” is in the past ({local_text(result, tz)}).")
    if result - now > MAX_AHEAD:
        raise TimeParseError("Please pick a time within the next year.")
    return result.replace(microsecond=0)


def _weekday(word: str) -> int | None:
    if len(word) < 3:
        return None
    return next((i for i, name in enumerate(WEEKDAYS) if name.startswith(word)), None)


def validate_cron(expr: str) -> str:
    """The normalised expression, or a TimeParseError saying what is wrong with it."""
    try:
        parsed = cron.parse(expr)
        cron.next_time(parsed, ZoneInfo("UTC"), datetime(2000, 1, 1, tzinfo=UTC))
    except cron.CronError as exc:
        raise TimeParseError(str(exc)) from None
    return parsed.expr


# triggers: "cron:<expr>" | "every:<seconds>" | "at:<iso>" ---------------------------------------------
def next_slot(trigger: str, tz: str, slot: datetime | None, now: datetime) -> datetime | None:
    """The first slot strictly after `now`; slots missed meanwhile are skipped, not queued (None: no more)."""
    kind, _, arg = trigger.partition(":")
    if kind == "at":
        return None
    if kind == "cron":
        return cron.next_time(cron.parse(arg), zone(tz), now)
    if kind == "every":
        seconds = int(arg)
        base = slot or now
        steps = max(1, math.floor((now - base).total_seconds() / seconds) + 1)
        if seconds % DAY:
            return base + timedelta(seconds=seconds * steps)
        # Whole days step on the wall clock, so "every 1d" from 09:00 stays at 09:00 across DST changes.
        zone_info = zone(tz)
        local = base.astimezone(zone_info)
        while True:
            candidate = _at(local.date() + timedelta(days=seconds // DAY * steps), local.time(), zone_info)
            if candidate > now:
                return candidate
            steps += 1
    raise ValueError(f"unknown trigger {trigger!r}")


def first_slot(trigger: str, tz: str, now: datetime) -> datetime | None:
    kind, _, arg = trigger.partition(":")
    if kind == "at":
        return datetime.fromisoformat(arg).astimezone(UTC)
    return next_slot(trigger, tz, None, now)


def local_text(moment: datetime, tz: str) -> str:
    """"Mon 2 Mar 09:00 (Europe/Berlin)": how people read a slot."""
    local = moment.astimezone(zone(tz))
    return f"{local:%a} {local.day} {local:%b %H:%M} ({tz or 'UTC'})"


def describe(trigger: str, tz: str) -> str:
    kind, _, arg = trigger.partition(":")
    if kind == "at":
        return f"once, {local_text(datetime.fromisoformat(arg), tz)}"
    if kind == "every":
        seconds = int(arg)
        for unit, size in (("week", 7 * DAY), ("day", DAY), ("hour", 3600), ("minute", 60)):
            if seconds % size == 0:
                n = seconds // size
                return f"every {unit}" if n == 1 else f"every {n} {unit}s"
    return f"cron `{arg}` ({tz or 'UTC'})"
