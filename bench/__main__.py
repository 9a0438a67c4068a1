"""`python -m bench`: run every bench script, one after another, and print one table of their figures; exits 1
when any figure misses its target or a bench fails to run (a bench that needs TEST_DATABASE_URL is skipped
without it, and says so)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.verdict import RESULTS_ENV

HERE = Path(__file__).resolve().parent
# In order of cost: the quick, deterministic ones first.
SCRIPTS = ["token_cost", "transactions", "library_floor", "long_discussion", "round_critical_path", "streaming",
           "slack_ack", "crash_recovery", "replicas", "load"]
NEEDS_POSTGRES = {"replicas"}
# --quick: tiny sizes, enough to see a bench run and judge its figures (the tests' way), not to measure anything.
QUICK = {"long_discussion": ["--rounds", "4"], "transactions": ["--transactions", "20", "--repeats", "1"],
         "library_floor": ["--calls", "13", "--repeats", "1"],
         "load": ["-n", "2", "--latency", "0.05", "--time-scale", "4"]}


def run(name: str, results: Path, args: list[str] | None = None) -> tuple[int, list[dict[str, object]]]:
    results.write_text("")
    done = subprocess.run([sys.executable, str(HERE / f"{name}.py"), *(args or [])],
                          env={**os.environ, RESULTS_ENV: str(results)}, cwd=HERE.parent)
    return done.returncode, [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def verdict(figure: dict[str, object]) -> str:
    if figure.get("unjudged"):
        return f"not judged: {figure['unjudged']}"
    return "meets" if figure["meets"] else "MISSES"


def table(rows: list[tuple[str, str, str, str, str]]) -> str:
    head = ("bench", "figure", "value", "target", "verdict")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    line = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *map(line, rows)])  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", default="", help="comma-separated bench names (default: all)")
    parser.add_argument("--skip", default="", help="comma-separated bench names to leave out")
    parser.add_argument("--quick", action="store_true", help="tiny sizes where a bench has them: a run, no measure")
    parser.add_argument("bench_args", nargs="*", metavar="-- ARG",
                        help="given to each chosen bench, e.g. -- --target prompt_ratio=1.2")
    args = parser.parse_args(argv)
    chosen = [s for s in SCRIPTS if (not args.only or s in args.only.split(",")) and s not in args.skip.split(",")]
    rows: list[tuple[str, str, str, str, str]] = []
    failed = False
    with tempfile.TemporaryDirectory() as folder:
        for name in chosen:
            if name in NEEDS_POSTGRES and not os.environ.get("TEST_DATABASE_URL"):
                rows.append((name, "-", "-", "-", "skipped: set TEST_DATABASE_URL"))
                continue
            print(f"== {name}", flush=True)
            extra = (QUICK.get(name, []) if args.quick else []) + args.bench_args
            code, figures = run(name, Path(folder) / f"{name}.jsonl", extra)
            for f in figures:
                unit = f" {f['unit']}" if f["unit"] else ""
                sign = "<=" if f["at_most"] else ">="
                rows.append((name, str(f["name"]), f"{float(f['value']):.3f}{unit}",  # type: ignore[arg-type]
                             f"{sign} {f['target']}{unit}", verdict(f)))
            if code != 0 and all(f["meets"] or f.get("unjudged") for f in figures):
                rows.append((name, "-", "-", "-", f"FAILED (exit {code})"))
            failed = failed or code != 0
    print(table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
