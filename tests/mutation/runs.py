"""A row's run in its scratch copy (mutmut, then the warm runner), and the row recorded from what they found."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.mutation.mutants import decorated_mutants
from tests.mutation.rows import MODULES, ONLY_FUNCTIONS, ROOT, slug
from tests.mutation.scoring import SCORES, entry, function_of, functions_of, write_entry
from tests.mutation.staleness import blob, commit, test_blobs
from tests.mutation.strings import _blank_strings
from tests.mutation.warm import run_module_level

SCRATCH = Path("/tmp/council-mutation")
RUN_FILE = "run.json"  # in a module's scratch copy: the commit measured, the module's blob and mutmut's exit status


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


def run(module: str, children: int, scores: Path = SCORES) -> None:
    measured = commit()
    facts = {"commit": measured, "blob": blob(module, measured), "tests": test_blobs(module, measured)}
    work = prepare(module)
    mutmut = str(Path(sys.executable).parent / "mutmut")
    names = [f"*{f}__mutmut_*" for f in ONLY_FUNCTIONS.get(module, [])]
    with (work / "mutmut.log").open("w") as log:  # its progress line, kept out of the terminal
        done = subprocess.run([mutmut, "run", "--max-children", str(children), *names], cwd=work, check=False,
                              stdout=log, stderr=subprocess.STDOUT)
    covered = {function_of(n) for n in outcomes(module)} | {function_of(n) for n, _ in
                                                          decorated_mutants((work / module).read_text())}
    bare = [f for f in functions_of((work / module).read_text()) if f not in covered]
    top = run_module_level(module, work, children, emptied=bare)
    (work / RUN_FILE).write_text(json.dumps({**facts, "exit": done.returncode, "module_level": top}))
    record(module, scores)


def run_facts(module: str) -> dict[str, object]:
    path = SCRATCH / slug(module) / RUN_FILE
    return json.loads(path.read_text()) if path.exists() else {}


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


def has_functions(path: Path) -> bool:
    """Whether the module defines any function or method: mutmut mutates nothing else."""
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) for n in ast.walk(tree))


def record(module: str, scores: Path = SCORES) -> dict[str, object]:
    """The module's row from its scratch copy, written over its entry in the scores file."""
    facts, found = run_facts(module), outcomes(module)
    if facts and not facts.get("blob"):  # measured before blobs were kept: the commit names it
        facts["blob"] = blob(module, str(facts["commit"]))
    wording = string_only(module)
    strings = {n for n in found if n.rpartition(".")[2] in wording}
    top = facts.get("module_level")
    if found and isinstance(top, dict):
        found |= {str(n): str(s) for n, s in top.items()}
    copy = SCRATCH / slug(module) / module
    source = (copy if copy.exists() else ROOT / module).read_text()
    row = entry(module, facts, found, strings, has_functions(copy if copy.exists() else ROOT / module), source)
    write_entry(scores, module, row)
    return row
