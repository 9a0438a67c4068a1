"""Spending limits (pure): the budget day of a workspace and of the whole process, what is left to spend, what a
model call may cost with all its attempts, and how many turns a step may run."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from core.when.timeparse import local_text, zone

# A call cut at max_tokens is asked again with this many times the room it had (core/llm.py, `_more_room`);
# tests/core/running/test_worst_case_attempts.py drives the real client until it gives up, so a change there shows.
ROOM_GROWTH = 2


@dataclass(frozen=True)
class Attempts:
    """How many requests one model call may make, as the wiring configured the model client (core/llm.py's
    LLMConfig): `room` attempts at growing room for an answer cut at max_tokens, and `legs` requests for a fact
    check (the first and the continuations of a turn the API paused). The defaults: a model that asks once."""

    room: int = 1
    legs: int = 1

    def call_usd(self, first_usd: float) -> float:
        """The most a call may cost with all its attempts, from its first's worst case: attempt i asks for
        ROOM_GROWTH**i times the output room and sends the same input, so it costs at most ROOM_GROWTH**i times
        the first's worst case."""
        return first_usd * sum(ROOM_GROWTH ** i for i in range(max(1, self.room)))

    def check_usd(self, leg_usd: float, searches_usd: float) -> float:
        """The most a fact check may cost with all its legs, from one request's worst case in tokens (`leg_usd`)
        and in searches (`searches_usd`): leg k sends the question and the k legs before it back as input (their
        output, at most the whole room each, priced below output in every price list), so it costs at most k + 1
        times the first's tokens; and each leg may run its searches."""
        legs = max(1, self.legs)
        return leg_usd * legs * (legs + 1) / 2 + searches_usd * legs


@dataclass(frozen=True)
class Limits:
    workspace_usd_per_day: float = 0.0  # 0: no limit
    process_usd_per_day: float = 0.0  # every workspace and guild this deployment serves, together; 0: no limit
    starts_per_user_per_hour: int = 0  # 0: no limit
    answer_interval_s: float = 0.0  # at most one paid answer per person this often between rounds; 0: no pacing
    tz: str = "UTC"  # the zone whose midnight resets the daily budget
    turn_estimate_usd: float = 0.05  # what a turn reserves before its discussion has a cost of its own
    attempts: Attempts = Attempts()  # how many requests a model call may make (what a turn reserves covers them)


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


def process_exhausted(limits: Limits, spent_today: float) -> bool:
    return limits.process_usd_per_day > 0 and spent_today >= limits.process_usd_per_day


def process_message(limits: Limits, spent_today: float, now: datetime) -> str:
    _, reset = day_window(now, limits.tz)
    return (f"this Council reached the daily budget its operator set for every workspace together "
            f"(COUNCIL_PROCESS_DAILY_USD = ${limits.process_usd_per_day:.2f}; ${spent_today:.2f} spent today); it "
            f"resets at {local_text(reset, limits.tz)}")


def day_refusal(limits: Limits, workspace_today: float, process_today: float, now: datetime, more: float = 0.0) -> str:
    """Why nothing more may be spent today ('' when it may): the workspace's budget or the whole process's is
    reached, counting `more` (what the caller is about to spend) as spent."""
    if workspace_exhausted(limits, workspace_today + more):
        return workspace_message(limits, workspace_today, now)
    if process_exhausted(limits, process_today + more):
        return process_message(limits, process_today, now)
    return ""


def turns_that_fit(n_turns: int, remaining_usd: float, estimate_usd: float) -> int:
    """How many of a step's parallel turns to start now: each reserves the estimated cost of one turn, and
    at least one runs while anything remains, so a budget is never overshot by more than one turn's cost.
    The others wait for the next step, which sees the new total."""
    if remaining_usd <= 0:
        return 0
    if estimate_usd <= 0 or remaining_usd == math.inf:  # no limit anywhere: inf // estimate is NaN, not a count
        return n_turns
    return max(1, min(n_turns, int(remaining_usd // estimate_usd)))
