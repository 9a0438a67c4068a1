"""Mutation testing of the rule modules with mutmut, one module at a time against the tests that exercise it.

    python -m tests.mutation                      # every rule module, then the table of scores
    python -m tests.mutation core/running/spending.py --children 1
    python -m tests.mutation --report             # the table again, from the last runs

Each module runs in its own scratch copy of the tree (mutmut mutates a copy under `mutants/`), so runs never
touch the working tree and a module's results stay until it runs again, with the commit they were measured on.
The score is the share of mutants the tests kill (a timeout counts as killed: the mutant hung the code); a mutant
that was not run (skipped, not checked, no tests) counts as not killed, and a run whose mutmut failed scores
nothing. Beside it, the logic-only score leaves out mutants that change nothing but a string's text (a message's
wording).
"""

from __future__ import annotations

import argparse
import ast
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
                                     "tests/core/deliberation/test_one_vocabulary.py",
                                     "tests/core/deliberation/test_vocabulary_edges.py"],
    "core/deliberation/choices.py": ["tests/core/deliberation/test_one_vocabulary.py",
                                     "tests/core/deliberation/test_vocabulary_edges.py"],
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
                               "tests/core/running/test_heartbeat_faults.py",
                               "tests/core/test_rules_that_broke.py"],
    # seats
    "core/deliberation/seats.py": ["tests/core/running/test_seats.py", "tests/core/deliberation/test_holders.py",
                                   "tests/core/deliberation/test_seat_rules.py"],
    "core/deliberation/seating.py": ["tests/core/running/test_seats.py", "tests/core/deliberation/test_council.py",
                                     "tests/core/deliberation/test_seating_rules.py"],
    "core/deliberation/holders.py": ["tests/core/deliberation/test_holders.py", "tests/core/running/test_seats.py",
                                     "tests/core/deliberation/test_holder_rules.py"],
    "core/running/seat_turns.py": ["tests/core/running/test_seats.py"],
    "core/storage/seat_waits.py": ["tests/core/running/test_seats.py"],
    # decision visibility
    "core/control/recall.py": ["tests/core/control/test_memory.py", "tests/adapters/slack/test_decisions.py"],
    "core/storage/decisions.py": ["tests/core/storage/test_decisions.py", "tests/core/control/test_memory.py",
                                  "tests/adapters/slack/test_decisions.py"],
    "core/deliberation/factcheck.py": ["tests/core/deliberation/test_factcheck.py",
                                       "tests/adapters/slack/test_check.py"],
    "core/deliberation/evidence.py": ["tests/core/deliberation/test_evidence.py"],
    # budgets and rate limits
    "core/running/budget.py": ["tests/core/running/test_budget.py"],
    "core/storage/rate_rows.py": ["tests/core/running/test_budget.py"],
    "core/storage/reservations.py": ["tests/core/control/test_spending.py", "tests/core/control/test_limits_race.py",
                                     "tests/core/control/test_spending_worst_case.py"],
    "core/running/admission.py": ["tests/core/running/test_admission.py"],
    "core/running/live.py": ["tests/core/running/test_live.py"],
    # encryption
    "core/storage/sealing.py": ["tests/adapters/slack/test_secrets_at_rest.py"],
    "adapters/slack/installs.py": ["tests/adapters/slack/test_secrets_at_rest.py",
                                   "tests/adapters/slack/test_installs_cache.py"],
    # time
    "core/when/timeparse.py": ["tests/core/when/test_timeparse.py"],
    "core/when/cron.py": ["tests/core/when/test_timeparse.py", "tests/core/control/test_digest_rules.py"],
    "core/control/schedules.py": ["tests/core/control/test_schedules.py", "tests/core/showing/test_digest_activity.py"],
    # the flows' rules
    "core/deliberation/engine.py": ["tests/core/deliberation/test_engine.py", "tests/core/deliberation/test_flows.py"],
    "core/deliberation/flows/meeting.py": ["tests/core/deliberation/test_meeting_and_floor.py",
                                           "tests/core/deliberation/test_honest_meetings.py"],
    "core/deliberation/flows/open_floor.py": ["tests/core/deliberation/test_open_floor.py",
                                              "tests/core/deliberation/test_meeting_and_floor.py"],
    "core/deliberation/closings.py": ["tests/core/deliberation/test_honest_meetings.py",
                                      "tests/core/deliberation/test_ballots.py"],
    # settings
    "core/control/commands.py": ["tests/core/control/test_control.py", "tests/adapters/slack/test_translate.py"],
    "core/control/defaults.py": ["tests/core/control/test_channel_defaults.py", "tests/adapters/slack/test_abuse.py",
                                 "tests/core/control/test_defaults_rules.py"],
    # Discord's permission refusals
    "adapters/discord/access.py": ["tests/adapters/discord/test_access.py",
                                   "tests/adapters/discord/test_permissions.py",
                                   "tests/adapters/discord/test_access_rules.py",
                                   "tests/adapters/discord/test_forums.py",
                                   "tests/adapters/discord/test_platform_rules.py"],
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
    # Some tests read what the project tells its users: copied beside the tree and into mutmut's own copy.
    read_by_tests = [name for name in ("README.md", "app-manifest.yml") if (ROOT / name).exists()]
    for name in read_by_tests:
        shutil.copy2(ROOT / name, work / name)
    tests = [t for t in MODULES[module] if (ROOT / t).exists()]
    pyproject = (ROOT / "pyproject.toml").read_text()
    pyproject += "\n[tool.mutmut]\n" + "\n".join([
        'source_paths = ["core", "bot", "adapters"]',
        f"also_copy = {json.dumps(read_by_tests)}",
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


KILLED = ("killed", "timeout")
RUN_FILE = "run.json"  # in a module's scratch copy: the commit measured and mutmut's exit status


def commit() -> str:
    """The commit the tree is at, marked `+changes` when the working tree differs from it."""
    head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=False).stdout.strip() or "unknown"
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True, check=False).stdout.strip()
    return f"{head}+changes" if dirty else head


def run(module: str, children: int) -> None:
    measured = commit()
    work = prepare(module)
    mutmut = str(Path(sys.executable).parent / "mutmut")
    names = [f"*{f}__mutmut_*" for f in ONLY_FUNCTIONS.get(module, [])]
    with (work / "mutmut.log").open("w") as log:  # its progress line, kept out of the terminal
        done = subprocess.run([mutmut, "run", "--max-children", str(children), *names], cwd=work, check=False,
                              stdout=log, stderr=subprocess.STDOUT)
    (work / RUN_FILE).write_text(json.dumps({"commit": measured, "exit": done.returncode}))


def run_facts(module: str) -> dict[str, object]:
    path = SCRATCH / slug(module) / RUN_FILE
    return json.loads(path.read_text()) if path.exists() else {}


# Methods whose string arguments steer the code (what is cut, split or recognised), not what people read.
_PARSING = {"startswith", "endswith", "removeprefix", "removesuffix", "partition", "rpartition", "split", "rsplit",
            "replace", "strip", "lstrip", "rstrip", "get", "pop", "setdefault", "index", "find", "count"}

_LOGGERS, _LEVELS = {"log", "logger", "logging"}, {"debug", "info", "warning", "error", "exception", "critical"}


def _blank_strings(node: ast.AST) -> str:
    """A function's code with the text of its messages left out: two that differ only in a message's wording
    compare equal. A string the code compares, looks up, indexes with or parses with stays: it is logic."""
    class Blank(ast.NodeTransformer):
        def visit_Constant(self, n: ast.Constant) -> ast.AST:
            return ast.Constant(value="") if isinstance(n.value, str | bytes) else n

        def visit_JoinedStr(self, n: ast.JoinedStr) -> ast.AST:
            return ast.Constant(value="")

        def visit_Compare(self, n: ast.Compare) -> ast.AST:
            return n  # `w == "tonight"`, `w in ("a", "b")`: the words decide a branch

        def visit_Subscript(self, n: ast.Subscript) -> ast.AST:
            n.value = self.visit(n.value)
            return n  # the key looked up stays

        def visit_Dict(self, n: ast.Dict) -> ast.AST:
            n.values = [self.visit(v) for v in n.values]
            return n  # the keys stay: something looks them up

        def visit_Call(self, n: ast.Call) -> ast.AST:
            if (isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)
                    and n.func.value.id in _LOGGERS and n.func.attr in _LEVELS):
                return ast.Call(func=n.func, args=[], keywords=[])  # a log line, all of it, is a message
            if isinstance(n.func, ast.Attribute) and n.func.attr in _PARSING:
                n.func = self.visit(n.func)
                return n  # its arguments stay
            return self.generic_visit(n)

    copy = Blank().visit(ast.parse(ast.unparse(node)))
    assert isinstance(copy, ast.Module)
    fn = copy.body[0]
    if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
        fn.name = ""
    return ast.dump(copy)


def string_only(module: str) -> set[str]:
    """The module's mutants that change nothing but the text of strings (read from mutmut's mutated copy)."""
    path = SCRATCH / slug(module) / "mutants" / module
    if not path.exists():
        return set()
    functions = {n.name: n for n in ast.walk(ast.parse(path.read_text()))
                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and "__mutmut_" in n.name}
    out = set()
    for name, fn in functions.items():
        base, _, n = name.rpartition("__mutmut_")
        orig = functions.get(f"{base}__mutmut_orig")
        if n.isdigit() and orig is not None and _blank_strings(fn) == _blank_strings(orig):
            out.add(name)
    return out


def has_functions(module: str) -> bool:
    """Whether the module defines any function or method: mutmut mutates nothing else."""
    tree = ast.parse((ROOT / module).read_text())
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


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


def score(found: dict[str, str]) -> tuple[int, int]:
    """Killed and all: a mutant that was not run (skipped, not checked, no tests) is one the tests did not kill."""
    return sum(s in KILLED for s in found.values()), len(found)


def report(show_survivors: bool = False, modules: list[str] | None = None) -> int:
    """The table: for each module, the commit measured, killed of all, the score and the logic-only score; 1
    when any module was not run, its mutmut failed, or a score is under the target."""
    rows, missed = [], False
    for module in modules or list(MODULES):
        found, facts = outcomes(module), run_facts(module)
        if facts and not found and not has_functions(module):  # declarations only (models): no rule to break
            rows.append((module, str(facts["commit"]), "0/0", "-", "-", "no functions to mutate"))
            continue
        if not found or not facts:
            missed = True
            rows.append((module, str(facts.get("commit", "-")), "-", "-", "-", "NOT RUN"))
            continue
        if facts.get("exit") != 0:
            missed = True
            rows.append((module, str(facts["commit"]), "-", "-", "-", f"MUTMUT FAILED (exit {facts.get('exit')})"))
            continue
        strings = {n.rpartition(".")[2] for n in found} & string_only(module)
        logic = {n: s for n, s in found.items() if n.rpartition(".")[2] not in strings}
        killed, total = score(found)
        logic_killed, logic_total = score(logic)
        share, logic_share = killed / total, (logic_killed / logic_total if logic_total else 1.0)
        meets = logic_share >= TARGET
        missed = missed or not meets
        rows.append((module, str(facts["commit"]), f"{killed}/{total}", f"{share:.0%}",
                     f"{logic_share:.0%} ({logic_killed}/{logic_total})", "meets" if meets else "MISSES"))
        if show_survivors:
            for name, status in sorted(found.items()):
                if status not in KILLED:
                    print(f"{module}: {name}: {status}"
                          + (" (strings only)" if name.rpartition(".")[2] in strings else ""))
    width = max(len(r[0]) for r in rows)
    print(f"{'module'.ljust(width)}  {'commit':<20}  killed     score  logic-only (target {TARGET:.0%})  verdict")
    for module, measured, ratio, whole, logic_only, verdict in rows:
        print(f"{module.ljust(width)}  {measured:<20}  {ratio:<9}  {whole:>5}  {logic_only:<24}  {verdict}")
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
    return report(args.survivors, args.modules or None)


if __name__ == "__main__":
    sys.exit(main())
