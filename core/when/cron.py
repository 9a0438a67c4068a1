"""Standard 5-field cron expressions: parsing and the next matching wall-clock minute in a zone (pure).

Written here rather than taken from croniter because the schedule's rules across daylight-saving changes
differ from croniter's: a wall-clock time the spring jump skips does not fire (croniter fires it at 03:00),
and a time the autumn fold repeats fires once (croniter fires it twice); the errors also name the field."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
# (name, lowest, highest, names for values starting at `lowest`)
FIELDS = [
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day of month", 1, 31, None),
    ("month", 1, 12, MONTHS),
    ("day of week", 0, 7, DAYS),
]
SEARCH_DAYS = 366 * 8  # "0 0 29 2 *" (29 February) can be 8 years away: 2100 is not a leap year


class CronError(ValueError):
    """The expression is not standard 5-field cron; the message says which part and why."""


@dataclass(frozen=True)
class Cron:
    expr: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool  # day-of-month was "*"
    any_weekday: bool  # day-of-week was "*"

    def day_matches(self, d: date) -> bool:
        if d.month not in self.months:
            return False
        dom = d.day in self.days
        dow = (d.isoweekday() % 7) in self.weekdays
        # Vixie cron: when both day fields are restricted, either one matching is enough.
        if self.any_day or self.any_weekday:
            return dom and dow
        return dom or dow


def _value(token: str, name: str, low: int, high: int, names: list[str] | None) -> int:
    lowered = token.lower()
    if names and lowered in names:
        return names.index(lowered) + (1 if name == "month" else 0)
    if not token.isdigit():
        raise CronError(f"“{token}” is not a valid {name} (expected {low}–{high}).")
    number = int(token)
    if not low <= number <= high:
        raise CronError(f"{name} {number} is out of range ({low}–{high}).")
    return number


def _field(text: str, name: str, low: int, high: int, names: list[str] | None) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        if not part:
            raise CronError(f"The {name} field has an empty list item.")
        base, _, step_text = part.partition("/")
        step = 1
        if step_text:
            if not step_text.isdigit() or int(step_text) == 0:
                raise CronError(f"“/{step_text}” is not a valid step in the {name} field.")
            step = int(step_text)
        if base == "*":
            start, end = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            start, end = _value(a, name, low, high, names), _value(b, name, low, high, names)
            if start > end:
                raise CronError(f"The {name} range {base} runs backwards.")
        else:
            start = _value(base, name, low, high, names)
            end = high if step_text else start
        values.update(range(start, end + 1, step))
    return frozenset(values)


def parse(expr: str) -> Cron:
    """Parse "m h dom mon dow" (names and @daily-style macros allowed); raise CronError if invalid."""
    text = " ".join(expr.split())
    text = MACROS.get(text.lower(), text)
    parts = text.split(" ")
    if len(parts) != 5:
        raise CronError(
            f"A cron expression has 5 fields (minute hour day-of-month month day-of-week); “{expr}” has "
            f"{len(parts) if text else 0}. Example: `0 9 * * 1-5` is 09:00 on weekdays."
        )
    sets = [_field(p, *spec) for p, spec in zip(parts, FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in sets[4])
    return Cron(expr=text, minutes=sets[0], hours=sets[1], days=sets[2], months=sets[3], weekdays=weekdays,
                any_day=parts[2].startswith("*"), any_weekday=parts[4].startswith("*"))


def _exists(local: datetime, tz: ZoneInfo) -> bool:
    """False for wall-clock times skipped by a daylight-saving jump."""
    return local.astimezone(UTC).astimezone(tz).replace(tzinfo=None) == local.replace(tzinfo=None)


def next_time(cron: Cron, tz: ZoneInfo, after: datetime) -> datetime:
    """The first matching minute strictly after `after`, as UTC; wall-clock times a DST jump skips do not
    fire, and a repeated hour fires once (its first occurrence)."""
    start = after.astimezone(tz).replace(second=0, microsecond=0, tzinfo=None) + timedelta(minutes=1)
    hours, minutes = sorted(cron.hours), sorted(cron.minutes)
    day = start.date()
    for _ in range(SEARCH_DAYS):
        if cron.day_matches(day):
            for h in hours:
                for m in minutes:
                    local = datetime.combine(day, time(h, m))
                    if local < start:
                        continue
                    aware = local.replace(tzinfo=tz, fold=0)
                    if not _exists(aware, tz):
                        continue
                    result = aware.astimezone(UTC)
                    if result > after:
                        return result
        day += timedelta(days=1)
    raise CronError(f"“{cron.expr}” never matches a real date.")
