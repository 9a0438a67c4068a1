"""Whether replicas add capacity: bench/load.py on PostgreSQL with one replica and N discussions, then with
`--replicas R` and R × N discussions (the same load a replica), in the same run, and the two set side by side.

Each workspace holds `--per-workspace` discussions (3 by default), spread over the replicas in turn as a load
balancer spreads a workspace's requests: with R = 3 every workspace is served by three replicas at once, so its
Slack budget is shared and any row every replica writes a call shows, in statements and in CPU.
Judged: CPU a model call over whole discussions (round 1 where the machine let not every discussion finish the
rest), all replicas' summed ÷ all calls, ≤ 1.2× the lone replica's;
statements and transactions a model call ≤ 1.05× the lone replica's (the same work, give or take a few rows a
discussion); 0 429s across the replicas. The load's own verdicts (its floor, its round ratio, where the machine leaves
room for it) are printed as each run gives them. Needs DATABASE_URL=postgresql://…; each run makes a fresh database."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402

MAX_CPU, MAX_SQL = 1.2, 1.05
# Over whole discussions where every discussion of both runs finished them (a loaded machine may not let them), else
# over round 1 for both: load.py prints round 1's figures always.
CPU = {"whole": r"process CPU per model call over whole discussions .*?: ([\d.]+) ms \((\d+) calls",
       "round 1": r"process CPU per model call in round 1: ([\d.]+) ms"}
SQL = {"whole": r"SQL a model call over the \d+ rounds, from the load's start until the last post was out: "
                r"([\d.]+) statements, ([\d.]+) transactions",
       "round 1": r"SQL a model call in round 1: ([\d.]+) statements, ([\d.]+) transactions"}
REFUSED = r"Slack answered 429 (\d+) times during the load"
# The statements load.py lists a model call (its most run, over what it judged): the shared budget's row statements
# among them are what replicas that share a workspace add; under the list's last line when none is listed.
LISTED = r"^\s+([\d.]+)  (\S.*)$"
HOT, UPDATE = "rate_budget", "UPDATE rate_budget"


def one(replicas: int, n: int, extra: list[str]) -> dict[str, float]:
    """One run of bench/load.py: its figures, and its output printed as it came."""
    cmd = [sys.executable, str(ROOT / "bench" / "load.py"), "-n", str(n), "--replicas", str(replicas), "--count-sql",
           *extra]
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    print(done.stdout, done.stderr, sep="\n", flush=True)
    figures: dict[str, float] = {}
    for basis in ("whole", "round 1"):
        cpu, sql = re.search(CPU[basis], done.stdout), re.search(SQL[basis], done.stdout)
        if cpu is not None and sql is not None:
            figures[f"{basis}:cpu"] = float(cpu.group(1))
            figures[f"{basis}:sql"], figures[f"{basis}:transactions"] = float(sql.group(1)), float(sql.group(2))
    refused = re.search(REFUSED, done.stdout)
    if refused is None or "round 1:sql" not in figures:
        raise SystemExit(f"bench/load.py --replicas {replicas} printed no figures")
    figures["refused"] = float(refused.group(1))
    judged = done.stdout[done.stdout.rfind("SQL a model call"):].split("the transactions, by their first statement")[0]
    listed = [(float(m.group(1)), m.group(2)) for m in re.finditer(LISTED, judged, re.M)]
    figures["hot"] = sum(k for k, shape in listed if HOT in shape)
    figures["hot_update"] = sum(k for k, shape in listed if shape.startswith(UPDATE))
    figures["hot_under"] = 0.0 if figures["hot"] or not listed else min(k for k, _ in listed)
    return figures


def hot(figures: dict[str, float]) -> str:
    if figures["hot_under"]:
        return f"under {figures['hot_under']:.2f} (none among the statements listed)"
    return f"{figures['hot']:.2f} ({UPDATE}: {figures['hot_update']:.2f})"


def main(n: int, replicas: int, extra: list[str], targets: dict[str, float]) -> int:
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        print("set DATABASE_URL=postgresql://… (the replicas share one database)", file=sys.stderr)
        return 2
    lone, many = one(1, n, extra), one(replicas, n * replicas, extra)
    basis = "whole" if "whole:cpu" in lone and "whole:cpu" in many else "round 1"
    over = "whole discussions" if basis == "whole" else "round 1 (not every discussion finished the rest)"
    print(f"over {over}:")
    print(f"one replica, {n} discussions: {lone[basis + ':cpu']:.1f} ms of CPU, {lone[basis + ':sql']:.2f} "
          f"statements, {lone[basis + ':transactions']:.2f} transactions a model call; statements on {HOT} a model "
          f"call: {hot(lone)}")
    print(f"{replicas} replicas, {n * replicas} discussions: {many[basis + ':cpu']:.1f} ms of CPU (summed over them), "
          f"{many[basis + ':sql']:.2f} statements, {many[basis + ':transactions']:.2f} transactions a model call; "
          f"{many['refused']:.0f} 429s; statements on {HOT} a model call: {hot(many)}")
    return report([Figure("replica_cpu_ratio", many[basis + ":cpu"] / lone[basis + ":cpu"], MAX_CPU),
                   Figure("replica_statements_ratio", many[basis + ":sql"] / max(lone[basis + ":sql"], 1e-9), MAX_SQL),
                   Figure("replica_transactions_ratio",
                          many[basis + ":transactions"] / max(lone[basis + ":transactions"], 1e-9), MAX_SQL),
                   Figure("replica_429s", many["refused"], 0)], targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-n", type=int, default=100, help="discussions a replica")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--per-workspace", type=int, default=3, help="discussions in each workspace")
    parser.add_argument("--load", default="", help="more options for bench/load.py, as one string")
    add_target_flag(parser)
    args = parser.parse_args()
    raise SystemExit(main(args.n, args.replicas, ["--per-workspace", str(args.per_workspace), *args.load.split()],
                          overrides(args.target)))
