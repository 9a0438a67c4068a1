"""Kill -9 `python -m bot slack` (SQLite, fake Slack and Anthropic APIs) mid-step N times in one discussion;
prints each restart's readiness-to-next-post time; the slowest of them is the figure (target <= 5 s), and a post
sent twice or an unfinished discussion fails the run."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from tests.fakes.kills import run  # noqa: E402


async def main(kills: int, latency_s: float, rounds: int, targets: dict[str, float]) -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = await run(Path(folder), kills=kills, latency_s=latency_s, rounds=rounds)
    print(f"kills {kills} (in flight: {out.killed_in_flight}), model latency {latency_s:g} s, rounds {rounds}")
    print("ready -> next post per restart (s): " + " ".join(f"{s:.2f}" for s in out.resume_s))
    print(f"finished: {out.status}, unsent {out.unsent}, turns {len(out.turns)}, posted twice {len(out.duplicates)}")
    figures = [Figure("slowest_resume", max(out.resume_s) if out.resume_s else float("nan"), 5.0, "s"),
               Figure("posted_twice", len(out.duplicates), 0)]
    return report(figures, targets, ok=out.status == "done")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.5, help="fake model latency in seconds")
    parser.add_argument("--rounds", type=int, default=2,
                        help="two rounds: eight kills never outnumber the sequential steps (one round has about eight)")
    add_target_flag(parser)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.kills, args.latency, args.rounds, overrides(args.target))))
