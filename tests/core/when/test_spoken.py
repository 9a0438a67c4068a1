"""Durations as people say them: minutes and seconds, singular where one, never "1 minutes"."""

from __future__ import annotations

import pytest

from core.when.spoken import duration


@pytest.mark.parametrize(("seconds", "said"), [
    (0.2, "1 second"), (1, "1 second"), (45, "45 seconds"), (60, "1 minute"), (61, "1 minute 1 second"),
    (90, "1 minute 30 seconds"), (120, "2 minutes"), (3600, "1 hour"), (7500, "2 hours 5 minutes"),
    (3661, "1 hour 1 minute 1 second"),
])
def test_a_wait_is_said_in_minutes_and_seconds(seconds: float, said: str) -> None:
    assert duration(seconds) == said
