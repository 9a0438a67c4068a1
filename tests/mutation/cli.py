"""The table of scores (`--report`) and the command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from tests.mutation.rows import MODULES, ON_POSTGRES
from tests.mutation.runs import run
from tests.mutation.scoring import MEETS, NOTHING, SCORES, TARGET, TARGETS, read_scores
from tests.mutation.staleness import stale
from tests.mutation.warm import warm_runner


def _listed(row: dict[str, object], key: str) -> list[str]:
    value = row.get(key)
    return [str(v) for v in value] if isinstance(value, list) else []


def report(show_survivors: bool = False, modules: list[str] | None = None, scores: Path = SCORES) -> int:
    """The table, from the scores file: for each module, the commit measured, killed of all, the score (its
    verdict) and the logic-only score beside it; 1 when any module was not run, its mutmut failed, its score is
    under its target, its mutants miss one of its functions, or its row is stale."""
    table, rows, missed = read_scores(scores), [], False
    for module in modules or list(MODULES):
        row = table.get(module)
        if row is None:
            missed = True
            rows.append((module, "-", "-", "-", "-", "NOT RUN"))
            continue
        verdict = str(row["verdict"])
        if "mutants" in row and verdict in (MEETS, "MISSES"):  # judged again by today's rule, not the run's
            total = int(str(row["mutants"]))
            share = int(str(row["killed"])) / total if total else 1.0
            verdict = MEETS if share >= TARGETS.get(module, TARGET) and not row.get("functions_missed") else "MISSES"
        why = stale(module, row)
        if why:
            verdict += f", STALE ({why})"
        missed_functions = row.get("functions_missed") or []
        if missed_functions and isinstance(missed_functions, list):
            covered = row.get("functions")
            verdict += (f", covers {len(covered) if isinstance(covered, list) else 0} functions, not "
                        f"{', '.join(map(str, missed_functions))}")
        missed = missed or verdict not in (MEETS, NOTHING)
        target = TARGETS.get(module, TARGET)
        if "mutants" not in row:
            rows.append((module, str(row["commit"]), "-", "-", "-", verdict))
            continue
        killed, total = int(str(row["killed"])), int(str(row["mutants"]))
        logic_killed, logic_total = int(str(row["logic_killed"])), int(str(row["logic_mutants"]))
        logic_share = logic_killed / logic_total if logic_total else 1.0
        rows.append((module, str(row["commit"]), f"{killed}/{total}", f"{killed / total:.0%}",
                     f"{logic_share:.0%} ({logic_killed}/{logic_total})"
                     + ("" if target == TARGET else f" of {target:.0%}"), verdict))
        if show_survivors:
            for line in _listed(row, "survivors"):
                print(f"{module}: {line}")
            for line in _listed(row, "equivalent"):
                print(f"{module}: {line} (equivalent, not counted)")
    width = max(len(r[0]) for r in rows)
    print(f"{'module'.ljust(width)}  {'commit':<20}  killed     score  logic-only                verdict (score >= "
          f"{TARGET:.0%})")
    for module, measured, ratio, whole, logic_only, verdict in rows:
        print(f"{module.ljust(width)}  {measured:<20}  {ratio:<9}  {whole:>5}  {logic_only:<24}  {verdict}")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation",
                                     description=sys.modules[__package__].__doc__,  # the package's, on the tool
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="rule modules to mutate (default: all)")
    parser.add_argument("--children", type=int, default=1, help="parallel mutant runs (the machine is shared)")
    parser.add_argument("--warm-runner", action="store_true", help=argparse.SUPPRESS)  # run_module_level's
    parser.add_argument("--report", action="store_true", help="only print the table of the last runs")
    parser.add_argument("--survivors", action="store_true", help="list the mutants no test killed")
    parser.add_argument("--scores", type=Path, default=SCORES, help="the scores file to write and read "
                        "(default tests/mutation_scores.json)")
    args = parser.parse_args(argv)
    if args.warm_runner:
        print(json.dumps(warm_runner(json.load(sys.stdin))))
        return 0
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a rule module: {', '.join(unknown)} (one of: {', '.join(MODULES)})")
    unserved = [m for m in args.modules or list(MODULES) if m in ON_POSTGRES]
    if not args.report and unserved and not os.environ.get("TEST_DATABASE_URL"):
        parser.error(f"{', '.join(unserved)}: set TEST_DATABASE_URL (a PostgreSQL server): their PostgreSQL tests "
                     "would be skipped, and a skipped test kills no mutant")
    if not args.report:
        for module in args.modules or list(MODULES):
            run(module, args.children, args.scores)
    return report(args.survivors, args.modules or None, args.scores)
