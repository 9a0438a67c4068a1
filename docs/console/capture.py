"""Rewrites the sessions in this folder from the current code: each flow run on a pseudo-terminal on the offline
model, typed into as its first lines say, the screen saved as printed. Run: `python docs/console/capture.py`."""

from __future__ import annotations

import os
import re
import sys
import tempfile
from pathlib import Path

import pexpect

TOPIC = "Should we move to trunk-based development?"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")
HERE = Path(__file__).parent
# flow: (options, what the person typed, [(wait for this, then type that)])
SESSIONS = {
    "moderated": (["--rounds", "1"], '(the person typed "What about the release cadence?" once the first persona '
                  "was thinking)", [("is thinking", "What about the release cadence?")]),
    "council": (["--rounds", "1"], '(the person typed "What does this cost us?" once the first advisor was '
                "thinking, 1 at the vote, and /close to close the poll)",
                [("is thinking", "What does this cost us?"), ("Vote on", "1"), ("The poll stays open", "/close")]),
    "meeting": (["--rounds", "2"], '(a meeting runs 2 to 5 rounds: with `--rounds 1` it answers "Error: A meeting '
                'runs 2 to 5 rounds (proposals, deliberation, then the final vote)." The person typed 1, 2 and 3 at '
                "the three ranking prompts, then /close to close the ranking.)",
                [("Your #1 priority” \\(poll", "1"), ("Your #2 priority” \\(poll", "2"),
                 ("Your #3 priority” \\(poll", "3"), ("The poll stays open", "/close")]),
    "open": (["--rounds", "1"], "", []),
}


def capture(flow: str) -> str:
    options, said, typing = SESSIONS[flow]
    folder = Path(tempfile.mkdtemp())
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL"))}
    env |= {"DATABASE_URL": f"sqlite:///{folder / 'council.db'}", "COLUMNS": "110", "TERM": "xterm",
            "USER": "dana", "LOGNAME": "dana", "COUNCIL_OFFLINE_DELAY_S": "0"}
    args = ["-m", "bot", "console", TOPIC, "--flow", flow, *options]
    child = pexpect.spawn(sys.executable, args, cwd=str(folder), env=env, encoding="utf-8", timeout=120,
                          dimensions=(60, 110))
    seen = ""
    for wait, line in typing:
        child.expect(wait)
        seen += (child.before or "") + str(child.after)
        child.sendline(line)
    child.expect(pexpect.EOF)
    seen += child.before or ""
    head = f"$ python -m bot console \"{TOPIC}\" --flow {flow} {' '.join(options)}\n" + (f"{said}\n" if said else "")
    return head + "\n".join(line.rstrip() for line in ANSI.sub("", seen).splitlines()) + "\n"


if __name__ == "__main__":
    for name in sys.argv[1:] or list(SESSIONS):
        (HERE / f"{name}.txt").write_text(capture(name))
        print(f"wrote {HERE / name}.txt")
