"""Spending rules (pure): the budget day in the configured zone, what a turn reserves, how many turns fit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from core.running.spending import (
    Limits,
    day_window,
    turn_estimate,
    turns_that_fit,
    workspace_exhausted,
    workspace_message,
)

LA, BERLIN = ZoneInfo("America/Los_Angeles"), ZoneInfo("Europe/Berlin")


def test_the_budget_day_runs_from_midnight_to_midnight_in_its_zone() -> None:
    now = datetime(2026, 3, 2, 7, 30, 15, 123, tzinfo=UTC)  # Sunday 23:30:15 in Los Angeles
    assert day_window(now, "America/Los_Angeles") == (datetime(2026, 3, 1, tzinfo=LA), datetime(2026, 3, 2, tzinfo=LA))
    assert day_window(now, "UTC") == (datetime(2026, 3, 2, tzinfo=UTC), datetime(2026, 3, 3, tzinfo=UTC))
    start, end = day_window(now, "Asia/Kolkata")  # UTC+5:30: 13:00 there
    assert start == datetime(2026, 3, 1, 18, 30, tzinfo=UTC) and end - start == timedelta(days=1)


def test_a_daylight_saving_day_is_23_or_25_hours_long() -> None:
    spring = datetime(2026, 3, 29, 12, 0, tzinfo=BERLIN)
    start, end = day_window(spring, "Europe/Berlin")
    assert (start.hour, end.hour, end.day) == (0, 0, 30)
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=23)
    autumn = datetime(2026, 10, 25, 12, 0, tzinfo=BERLIN)
    start, end = day_window(autumn, "Europe/Berlin")
    assert end.astimezone(UTC) - start.astimezone(UTC) == timedelta(hours=25)


def test_a_workspace_is_exhausted_at_its_budget_and_never_without_one() -> None:
    limits = Limits(workspace_usd_per_day=0.05)
    assert not workspace_exhausted(limits, 0.0499) and workspace_exhausted(limits, 0.05)
    assert workspace_exhausted(limits, 0.06)
    assert not workspace_exhausted(Limits(workspace_usd_per_day=0), 1_000.0)


def test_the_budget_message_names_the_limit_what_was_spent_and_the_local_reset() -> None:
    limits = Limits(workspace_usd_per_day=2.5, tz="America/Los_Angeles")
    text = workspace_message(limits, 2.514, datetime(2026, 3, 2, 7, 30, tzinfo=UTC))
    assert text == ("this workspace reached its daily budget (COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY = $2.50; $2.51 "
                    "spent today); it resets at Mon 2 Mar 00:00 (America/Los_Angeles)")


def test_a_turn_reserves_the_costliest_call_so_far_or_the_configured_estimate() -> None:
    limits = Limits(turn_estimate_usd=0.07)
    assert turn_estimate(limits, 0.0) == 0.07
    assert turn_estimate(limits, 0.02) == 0.02
    assert turn_estimate(limits, 0.5) == 0.5
    assert Limits().turn_estimate_usd == 0.05


def test_a_turn_reserves_its_worst_case_when_that_is_more_than_any_call_so_far() -> None:
    limits = Limits(turn_estimate_usd=0.07)
    assert turn_estimate(limits, 0.0, 0.2) == 0.2  # known before any call: the configured guess is not needed
    assert turn_estimate(limits, 0.02, 0.2) == 0.2
    assert turn_estimate(limits, 0.5, 0.2) == 0.5  # a call cut at max_tokens and run again cost more
    assert turn_estimate(limits, 0.0, 0.0) == 0.07


@pytest.mark.parametrize("n,remaining,estimate,fit", [
    (4, 1.0, 0.0, 4),  # nothing known: no reservation
    (4, 1.0, -1.0, 4),
    (4, 0.25, 0.1, 2),
    (4, 0.3, 0.1, 2),  # 0.3 // 0.1 is 2 in floating point: never round up into an overshoot
    (4, 0.4, 0.1, 4),
    (4, 10.0, 0.1, 4),  # never more than the step has
    (4, 0.05, 0.1, 1),  # at least one while anything remains
    (4, 0.0, 0.1, 0),
    (4, -0.01, 0.1, 0),
    (4, float("inf"), 0.1, 4),  # no budget of its own and no day's limit: every turn, not a crash
])
def test_turns_that_fit(n: int, remaining: float, estimate: float, fit: int) -> None:
    assert turns_that_fit(n, remaining, estimate) == fit
