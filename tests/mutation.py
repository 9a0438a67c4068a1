"""Mutation testing of the rule modules with mutmut, one module at a time against the tests that exercise it.

    python -m tests.mutation                      # every rule module, then the table of scores
    python -m tests.mutation core/running/spending.py --children 1
    python -m tests.mutation --report             # the table again, from the last runs

Each module runs in its own scratch copy of the tree (mutmut mutates a copy under `mutants/`), so runs never
touch the working tree and a module's results stay until it runs again. The score is the share of mutants the
tests kill (a timeout counts as killed: the mutant hung the code); "survived" lists what no test noticed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = Path("/tmp/council-mutation")
TARGET = 0.90

# Each rule module, and the tests that pin it (mutmut runs, per mutant, those of them that reach its function).
MODULES: dict[str, list[str]] = {
    "core/control/permissions.py": ["tests/core/control/test_permission_rules.py",
                                    "tests/core/control/test_permissions.py", "tests/core/control/test_digest_rules.py",
                                    "tests/core/control/test_channel_config.py", "tests/core/test_rules_that_broke.py"],
    "core/control/guard.py": ["tests/core/control/test_spending.py", "tests/core/control/test_limits_race.py",
                              "tests/core/control/test_reads_after_checks.py", "tests/core/control/test_permissions.py",
                              "tests/core/control/test_guard.py", "tests/core/test_rules_that_broke.py"],
    "core/running/spending.py": ["tests/core/running/test_spending_rules.py", "tests/core/control/test_spending.py",
                                 "tests/core/test_rules_that_broke.py"],
    "core/deliberation/stances.py": ["tests/core/deliberation/test_stances.py", "tests/core/test_rules_that_broke.py",
                                     "tests/core/deliberation/test_stance_rules.py",
                                     "tests/core/deliberation/test_verdicts.py",
                                     "tests/core/deliberation/test_one_vocabulary.py"],
    "core/deliberation/choices.py": ["tests/core/deliberation/test_one_vocabulary.py"],
    "core/deliberation/tally.py": ["tests/core/deliberation/test_tally.py", "tests/core/deliberation/test_verdicts.py"],
    "core/deliberation/quoting.py": ["tests/core/deliberation/test_hostile_prompts.py",
                                     "tests/core/deliberation/test_quoting.py"],
    "core/showing/pages.py": ["tests/core/showing/test_pages.py", "tests/adapters/web/test_page_rules.py"],
    "core/deliberation/context.py": ["tests/core/deliberation/test_context.py"],
    "core/storage/activity.py": ["tests/core/storage/test_activity.py", "tests/core/showing/test_digest_activity.py",
                                 "tests/core/control/test_limits_race.py", "tests/core/control/test_spending.py"],
    "core/storage/channel_rows.py": ["tests/core/storage/test_channel_rows.py",
                                     "tests/core/showing/test_digest_activity.py",
                                     "tests/core/test_rules_that_broke.py"],
    "core/running/driver.py": ["tests/core/running/test_fencing.py", "tests/core/running/test_posting.py",
                               "tests/core/test_rules_that_broke.py"],
}
# The driver's fences: the functions of driver.py that check or hold the lease (mutmut's names for them).
ONLY_FUNCTIONS = {"core/running/driver.py": ["fenced", "_drain", "_claim", "_heartbeat", "_renew_soon"]}


def slug(module: str) -> str:
    return module.removesuffix(".py").replace("/", ".")


def prepare(module: str) -> Path:
    work = SCRATCH / slug(module)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    for name in ("core", "bot", "adapters", "tests", "bench"):
        shutil.copytree(ROOT / name, work / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    tests = [t for t in MODULES[module] if (ROOT / t).exists()]
    pyproject = (ROOT / "pyproject.toml").read_text()
    pyproject += "\n[tool.mutmut]\n" + "\n".join([
        'source_paths = ["core", "bot", "adapters"]',
        f"only_mutate = [{json.dumps(module)}]",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]',
        "use_git_change_detection = false",
        # Each mutant in a fresh fork of a process that never ran the suite: forked from the one that collected
        # the stats, some mutants of async code ran as if unchanged and were counted as survivors.
        'process_isolation = "forkserver"',
    ]) + "\n"
    (work / "pyproject.toml").write_text(pyproject)
    return work


def run(module: str, children: int) -> None:
    work = prepare(module)
    mutmut = str(Path(sys.executable).parent / "mutmut")
    names = [f"*{f}__mutmut_*" for f in ONLY_FUNCTIONS.get(module, [])]
    with (work / "mutmut.log").open("w") as log:  # its progress line, kept out of the terminal
        subprocess.run([mutmut, "run", "--max-children", str(children), *names], cwd=work, check=False, stdout=log,
                       stderr=subprocess.STDOUT)


def outcomes(module: str) -> dict[str, str]:
    """Each mutant of the module (of its listed functions only, where given) and what became of it."""
    work = SCRATCH / slug(module)
    if not (work / "mutants").exists():
        return {}
    done = subprocess.run([str(Path(sys.executable).parent / "mutmut"), "results", "--all", "true"], cwd=work,
                          capture_output=True, text=True, check=False)
    out = {}
    for line in done.stdout.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep:
            out[name] = status
    only = ONLY_FUNCTIONS.get(module)
    return {n: s for n, s in out.items() if only is None or any(f"{f}__mutmut_" in n for f in only)}


def report(show_survivors: bool = False) -> int:
    rows, missed = [], False
    for module in MODULES:
        found = outcomes(module)
        counted = {n: s for n, s in found.items() if s not in ("skipped", "not checked")}
        if not counted:
            rows.append((module, "-", "-", "not run"))
            continue
        killed = sum(s in ("killed", "timeout") for s in counted.values())
        share = killed / len(counted)
        missed = missed or share < TARGET
        rows.append((module, f"{killed}/{len(counted)}", f"{share:.0%}", "meets" if share >= TARGET else "MISSES"))
        if show_survivors:
            for name, status in sorted(counted.items()):
                if status not in ("killed", "timeout"):
                    print(f"{module}: {name}: {status}")
    width = max(len(r[0]) for r in rows)
    print(f"{'module'.ljust(width)}  killed     score  (target {TARGET:.0%})")
    for module, ratio, share, verdict in rows:
        print(f"{module.ljust(width)}  {ratio:<9}  {share:>5}  {verdict}")
    return 1 if missed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help="rule modules to mutate (default: all)")
    parser.add_argument("--children", type=int, default=1, help="parallel mutant runs (the machine is shared)")
    parser.add_argument("--report", action="store_true", help="only print the table of the last runs")
    parser.add_argument("--survivors", action="store_true", help="list the mutants no test killed")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a rule module: {', '.join(unknown)} (one of: {', '.join(MODULES)})")
    if not args.report:
        for module in args.modules or list(MODULES):
            run(module, args.children)
    return report(args.survivors)


if __name__ == "__main__":
    sys.exit(main())
