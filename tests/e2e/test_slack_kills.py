"""`python -m bot slack` on SQLite killed with SIGKILL mid-step three times: each restart moves the discussion
again within seconds of being ready, and it finishes with nothing lost and nothing posted twice; a SIGTERM mid-step
gives the lease back before the process exits."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.kills import run

# Three kills and a stop are four interruptions, within the one round's sequential steps (about eight); the campaign of
# eight kills over two rounds is bench/crash_recovery.py's.
KILLS = 3
ROUNDS = 1
TURNS = 1 + ROUNDS * 12 + 1  # roster, each round's twelve turns, the final synthesis
# Slack's limits ten times faster (fake and app alike): the time goes to the four starts, not to waiting out pacing.
TIME_SCALE = 10.0


async def test_three_kills_mid_step_each_resume_within_seconds(tmp_path: Path) -> None:
    out = await run(tmp_path, kills=KILLS, latency_s=0.25, rounds=ROUNDS, stop_once=True, time_scale=TIME_SCALE)
    assert out.killed_in_flight == KILLS, "every kill landed while a model call was in flight"
    assert len(out.resume_s) == KILLS and max(out.resume_s) <= 5.0, out.resume_s
    assert out.status == "done" and out.unsent == 0, out.log_tail
    assert len(out.turns) == TURNS and all(status == "published" for _, status in out.turns), out.turns
    assert out.duplicates == [], "posted twice"
    assert out.half_written == [], "a placeholder a killed process left is never left standing"
    assert "Traceback" not in out.log_tail
    assert out.lease_after_term is None and out.term_s < 5.0, "SIGTERM mid-step gave the lease back at once"
