"""Two replica processes on one PostgreSQL database: 50 schedules fire exactly once, and a kill -9 of the replica
that leads and drives lets the other finish the discussion with no duplicate turn or post."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.cluster import run


def replica_logs(folder: Path) -> str:
    return "\n".join(p.read_text()[-3000:] for p in folder.glob("replica-*.log"))


@pytest.mark.slow  # seconds even on a quiet machine
async def test_two_replicas_fire_each_slot_once_and_survive_a_kill(pg_url: str, tmp_path: Path) -> None:
    # Two rounds outlast the four-second window (A is killed about halfway through them); three took seconds longer
    # for B to finish after the kill, and proved nothing more.
    outcome = await run(pg_url, tmp_path, schedules=50, window_s=4.0, lease_ttl=3.0, rounds=2)
    logs = replica_logs(tmp_path)
    assert outcome.misses == 0, logs
    assert outcome.duplicates == 0, logs
    assert outcome.digest_rows == 50
    assert outcome.status == "done", logs
    # B finished what A (killed after its first posts) was driving; how fast is bench/replicas.py's to measure.
    assert outcome.posts_by_owner.get("B", 0) >= 1, logs
    assert outcome.leader_takeover_s >= 0 and outcome.driver_takeover_s >= 0, "B never took over"
