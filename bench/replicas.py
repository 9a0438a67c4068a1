"""Two replicas on PostgreSQL (TEST_DATABASE_URL): 50 schedules due in a window, kill -9 of the replica that
leads and drives; prints duplicates, misses (targets 0 and 0) and the driver takeover time (target <= 15 s);
exits 1 on a miss."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from tests.conftest import drop_pg_database, fresh_pg_database  # noqa: E402
from tests.fakes.cluster import run  # noqa: E402


async def main(schedules: int, window_s: float, lease_ttl: float | None, targets: dict[str, float]) -> int:
    if not os.environ.get("TEST_DATABASE_URL"):
        print("set TEST_DATABASE_URL (e.g. postgresql+asyncpg://postgres@127.0.0.1:5432/test)", file=sys.stderr)
        return 2
    url = await fresh_pg_database()
    try:
        with tempfile.TemporaryDirectory() as folder:
            outcome = await run(url, Path(folder), schedules=schedules, window_s=window_s, lease_ttl=lease_ttl)
    finally:
        await drop_pg_database(url)
    leases = "shipped defaults (10 s lease, 3 s sweep)" if lease_ttl is None else f"{lease_ttl:g} s, sweep 0.5 s"
    print(f"schedules {schedules} over {window_s:g} s, lease ttl {leases}, leader retry 1 s")
    print(f"discussion {outcome.status}, posts by replica {outcome.posts_by_owner}, turns {outcome.turns}")
    print(f"digests sent {outcome.digest_rows}")
    print(f"leader_takeover_s {outcome.leader_takeover_s:.2f}")
    figures = [Figure("duplicates", outcome.duplicates, 0), Figure("misses", outcome.misses, 0),
               Figure("driver_takeover", outcome.driver_takeover_s, 15.0, "s")]
    return report(figures, targets, ok=outcome.status == "done")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--schedules", type=int, default=50)
    parser.add_argument("--window", type=float, default=6.0, help="seconds over which the schedules fall due")
    parser.add_argument("--lease-ttl", type=float, default=3.0, help="COUNCIL_LEASE_TTL_S for both replicas")
    parser.add_argument("--shipped-leases", action="store_true",
                        help="leave lease and sweep settings at their PostgreSQL defaults")
    add_target_flag(parser)
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.schedules, args.window, None if args.shipped_leases else args.lease_ttl,
                              overrides(args.target))))
