"""`python -m bot slack` on SQLite killed with SIGKILL mid-step eight times: each restart moves the discussion
again within seconds of being ready, and it finishes with nothing lost and nothing posted twice; a SIGTERM mid-step
gives the lease back before the process exits."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.kills import run

ROUNDS = 2  # nine interruptions need more sequential steps than one round has (about eight)
TURNS = 1 + ROUNDS * 12 + 1  # roster, each round's twelve turns, the final synthesis


async def test_eight_kills_mid_step_each_resume_within_seconds(tmp_path: Path) -> None:
    out = await run(tmp_path, kills=8, latency_s=0.5, rounds=ROUNDS, stop_once=True)
    assert out.killed_in_flight == 8, "every kill landed while a model call was in flight"
    assert len(out.resume_s) == 8 and max(out.resume_s) <= 5.0, out.resume_s
    assert out.status == "done" and out.unsent == 0, out.log_tail
    assert len(out.turns) == TURNS and all(status == "published" for _, status in out.turns), out.turns
    assert out.duplicates == [], "posted twice"
    assert out.half_written == [], "a placeholder a killed process left is never left standing"
    assert "Traceback" not in out.log_tail
    assert out.lease_after_term is None and out.term_s < 5.0, "SIGTERM mid-step gave the lease back at once"
