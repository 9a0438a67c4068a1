"""What spending means when nothing was configured, and how much room each retry asks: no daily budget, no start
limit, no pacing, a day that turns at UTC midnight, five cents a turn before a discussion costs anything, one
attempt a call, and each room retry twice the one before. Written from the rules, not read from the module."""

from __future__ import annotations

from datetime import UTC, datetime

from core.running.spending import Attempts, Limits, day_refusal, turn_estimate

NOW = datetime(2026, 3, 2, 15, 30, tzinfo=UTC)  # a Monday


def test_nothing_configured_limits_nothing() -> None:
    assert day_refusal(Limits(), workspace_today=1000.0, process_today=1000.0, now=NOW) == ""
    assert (Limits().starts_per_user_per_hour, Limits().answer_interval_s) == (0, 0.0)  # 0: no limit, no pacing


def test_a_budget_day_turns_at_utc_midnight_when_no_zone_was_configured() -> None:
    assert day_refusal(Limits(workspace_usd_per_day=1.0), 1.0, 0.0, NOW).endswith("it resets at Tue 3 Mar 00:00 (UTC)")
    assert day_refusal(Limits(process_usd_per_day=1.0), 0.0, 1.0, NOW).endswith("it resets at Tue 3 Mar 00:00 (UTC)")


def test_a_turn_reserves_five_cents_until_a_cost_is_known() -> None:
    assert turn_estimate(Limits(), 0.0) == 0.05


def test_a_call_asks_once_unless_configured_and_each_room_retry_may_cost_twice_the_one_before() -> None:
    assert Attempts().call_usd(1.0) == 1.0
    assert Attempts().check_usd(1.0, 0.5) == 1.5
    assert Limits().attempts == Attempts()
    assert Attempts(room=3).call_usd(1.0) == 1.0 + 2.0 + 4.0
