"""Spending limits (pure): the workspace's budget day, what is left to spend, and how many turns a step may run."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from core.when.timeparse import local_text, zone


@dataclass(frozen=True)
class Limits:
    workspace_usd_per_day: float = 0.0  # 0: no limit
    starts_per_user_per_hour: int = 0  # 0: no limit
    answer_interval_s: float = 0.0  # at most one paid answer per person this often between rounds; 0: no pacing
    tz: str = "UTC"  # the zone whose midnight resets the daily budget
    turn_estimate_usd: float = 0.05  # what a turn reserves before its discussion has a cost of its own


def turn_estimate(limits: Limits, costliest_so_far: float, worst_usd: float = 0.0) -> float:
    """What each turn of a step reserves: the worst case of its costliest call (the model's price for its whole
    max_tokens and input), or the discussion's costliest call so far when that was more; when neither is known
    (a model that charges nothing), the configured estimate, so parallel discussions still reserve something."""
    known = max(worst_usd, costliest_so_far)
    return known if known > 0 else limits.turn_estimate_usd


def day_window(now: datetime, tz: str) -> tuple[datetime, datetime]:
    """The start of today and of tomorrow in `tz` (the budget day), as aware datetimes."""
    local = now.astimezone(zone(tz))
    start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    return start, (start + timedelta(days=1)).replace(hour=0)


def workspace_exhausted(limits: Limits, spent_today: float) -> bool:
    return limits.workspace_usd_per_day > 0 and spent_today >= limits.workspace_usd_per_day


def workspace_message(limits: Limits, spent_today: float, now: datetime) -> str:
    _, reset = day_window(now, limits.tz)
    return (f"this workspace reached its daily budget (COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY = "
            f"${limits.workspace_usd_per_day:.2f}; ${spent_today:.2f} spent today); it resets at "
            f"{local_text(reset, limits.tz)}")


def turns_that_fit(n_turns: int, remaining_usd: float, estimate_usd: float) -> int:
    """How many of a step's parallel turns to start now: each reserves the estimated cost of one turn, and
    at least one runs while anything remains, so a budget is never overshot by more than one turn's cost.
    The others wait for the next step, which sees the new total."""
    if remaining_usd <= 0:
        return 0
    if estimate_usd <= 0:
        return n_turns
    return max(1, min(n_turns, int(remaining_usd // estimate_usd)))
