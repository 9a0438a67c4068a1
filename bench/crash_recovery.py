"""Kill -9 `python -m bot slack` (SQLite, fake Slack and Anthropic APIs) mid-step N times in one discussion;
prints each restart's readiness-to-next-post time and, last, the slowest of them in seconds (target <= 5)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.kills import run  # noqa: E402


async def main(kills: int, latency_s: float, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = await run(Path(folder), kills=kills, latency_s=latency_s, rounds=rounds)
    print(f"kills {kills} (in flight: {out.killed_in_flight}), model latency {latency_s:g} s, rounds {rounds}")
    print("ready -> next post per restart (s): " + " ".join(f"{s:.2f}" for s in out.resume_s))
    print(f"finished: {out.status}, unsent {out.unsent}, turns {len(out.turns)}, posted twice {len(out.duplicates)}")
    print(f"slowest resume after readiness (s): {max(out.resume_s):.2f}")
    return 0 if out.status == "done" and not out.duplicates else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5, help="fake model latency in seconds")
    parser.add_argument("--rounds", type=int, default=2,
                        help="two rounds: eight kills never outnumber the sequential steps (one round has about eight)")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.kills, args.latency, args.rounds)))
