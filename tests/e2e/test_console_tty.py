"""The README's first command on a real terminal (a pseudo-terminal): it ends by itself after "Done."."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

TOPIC = "Should we move to trunk-based development?"


def read_until_exit(master: int, proc: subprocess.Popen[bytes], limit_s: float) -> tuple[str, float | None]:
    """Everything the terminal shows until the process exits (or `limit_s` passes, nothing ever typed), and how
    long after "Done." it exited."""
    out, done_at, deadline = b"", None, time.monotonic() + limit_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the terminal's other side closed: the process is gone
                chunk = b""
            if not chunk:
                proc.wait(5)
                break
            out += chunk
            if done_at is None and b"Done." in out:
                done_at = time.monotonic()
        if proc.poll() is not None and not ready:
            break
    exited_after = time.monotonic() - done_at if done_at is not None and proc.poll() is not None else None
    return out.decode(errors="replace"), exited_after


def test_the_first_command_returns_to_the_shell_by_itself_with_no_log_lines_in_the_discussion(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL"))}
    env |= {"DATABASE_URL": f"sqlite:///{tmp_path / 'council.db'}", "COLUMNS": "100", "TERM": "xterm"}
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "bot", "console", TOPIC, "--rounds", "1"], cwd=tmp_path,
                            env=env, stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    try:
        shown, exited_after = read_until_exit(master, proc, limit_s=90)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        os.close(master)
    assert "Done." in shown, shown[-2000:]
    assert exited_after is not None, "the process waited for input after Done."
    assert proc.returncode == 0
    assert " INFO " not in shown and "alembic" not in shown, "library logs interleaved with the discussion"
    # A terminal program's warning: one plain line, no log record's timestamp and logger name.
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d", shown, re.M) is None and "bot.wiring" not in shown, shown[:400]
    assert "WARNING: No model provider is configured" in shown
    assert "💡" in shown or "🏛" in shown, "the roster's icons show as emoji"
    assert ":bulb:" not in shown
    assert "vote: /vote 2" not in shown, "no vote is offered on the final poll of an unattended ending"
    # The ending is the last word: the round's poll closes before it, and only the export line follows.
    after = shown[shown.index("✅ Finished"):]
    assert "closed" not in after and "╭" not in after, after
    # Round 1's poll closes at the end, after the final poll opened: not printed below it (the export has it).
    assert "Poll closed" not in shown[shown.index("poll 2 ·"):], shown[shown.index("poll 2 ·"):]
    # Paced for a person on a terminal by default: turns are seen being written (the unpaced model writes at once).
    assert "is writing: " in shown
