"""Kill -9 a real console process mid-round, resume it (in process), and find no turn run twice and no post twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.__main__ import cli
from tests.fakes.kills import POSTED

TOPIC = "Should we adopt a four-day work week?"


def env_for(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL"))}
    env |= {"DATABASE_URL": f"sqlite:///{tmp / 'council.db'}", "COUNCIL_OFFLINE_DELAY_S": "0.2",
            "COUNCIL_LOG_LEVEL": "WARNING"}
    return env


def published(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            return conn.execute("SELECT count(*) FROM outbox WHERE sent").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


# flow arguments, posts published before the kill, the turns a finished run has (and which of them are posted)
FLOWS: dict[str, tuple[list[str], int, int | None]] = {
    # roster + 2 rounds x (opening, 4 statements, contrarian, 4 rebuttals, cross-domain, synthesis) + final
    "moderated": (["--rounds", "2"], 6, 1 + 2 * 12 + 1),
    # 3 advisors x 2 rounds + the referee's verdict
    "council": (["--flow", "council", "--rounds", "2"], 3, 1 + 3 * 2 + 1),  # the question, two rounds, the verdict
    # roster + 4 owners x (proposal, deliberation, vote) + the direct answers of round 2 + the recommendation
    "meeting": (["--flow", "meeting"], 6, None),
    # plan, 4 personas, then bids and speeches until the floor closes, then the synthesis
    "open": (["--flow", "open", "--rounds", "2"], 7, None),
}


def bid_keys(db: Path) -> list[tuple[str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT key FROM turns WHERE phase IN ('bid', 'persona')").fetchall()


@pytest.mark.parametrize("flow", list(FLOWS))
def test_kill_during_a_round_then_resume_finishes_without_duplicates(tmp_path: Path, flow: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    args, kill_after, expected_turns = FLOWS[flow]
    env, db = env_for(tmp_path), tmp_path / "council.db"
    cmd = [sys.executable, "-m", "bot", "console", TOPIC, "--no-input", *args, "--exports", "out"]
    first = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while published(db) < kill_after and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    assert first.poll() is None, first.stderr.read().decode() if first.stderr else ""
    os.kill(first.pid, signal.SIGKILL)
    first.wait()

    with sqlite3.connect(db) as conn:
        discussion_id, status_before = conn.execute("SELECT id, status FROM discussions").fetchone()
        before = dict(conn.execute(f"SELECT key, {POSTED} FROM turns").fetchall())
    assert status_before == "running" and 0 < len(before), "killed mid-discussion"
    if expected_turns is not None:
        assert len(before) < expected_turns, "killed mid-discussion"

    # The kill needs a process of its own; the resume is the same command run here, in process (typer's runner), so
    # it pays no second start. Without the pretend latency, which is there only for the kill to land mid-round.
    for name in [n for n in os.environ if n not in env]:
        monkeypatch.delenv(name)
    for name, value in (env | {"COUNCIL_OFFLINE_DELAY_S": "0"}).items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    resumed = CliRunner().invoke(cli, ["console", "--resume", discussion_id, "--no-input", "--exports", "out"])
    assert resumed.exit_code == 0, resumed.output

    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM discussions").fetchone()[0]
        turns = conn.execute(f"SELECT key, {POSTED}, attempts FROM turns").fetchall()
        unsent = conn.execute("SELECT count(*) FROM outbox WHERE NOT sent").fetchone()[0]
    assert status == "done" and unsent == 0
    if expected_turns is not None:
        assert len(turns) == expected_turns
    else:  # the meeting's and the floor's length depend on what was said; one final turn closes them
        assert sum(1 for k, _, _ in turns if ":final:" in k) == 1 and len(turns) > len(before)
    bids = {k for (k,) in bid_keys(db)}
    # Bids and roster slots are recorded, never posted (the header's roster shows the slots).
    assert all(s == "published" for k, s, _ in turns if k not in bids)
    assert all(s == "done" for k, s, _ in turns if k in bids)
    # Only a turn that was running when the process died may have been attempted again.
    retried = {k for k, _, attempts in turns if attempts > 1}
    assert retried <= {k for k, s in before.items() if s == "running"}
    assert all(attempts == 1 for k, _, attempts in turns if before.get(k) in ("done", "published"))

    journal = (tmp_path / "council.console-journal").read_text().split()
    duplicates = [k for k, n in Counter(journal).items() if n > 1]
    assert duplicates == [], f"posted twice: {duplicates}"
    assert (tmp_path / "out" / discussion_id / "artifacts" / "synthesis.md").exists()
