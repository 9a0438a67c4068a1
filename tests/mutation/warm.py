"""The warm runner: one process imports a row's tests once, then forks a child per mutant mutmut does not make."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from importlib.machinery import ModuleSpec
from pathlib import Path
from typing import Any

from tests.mutation.mutants import decorated_mutants, emptied_mutants, module_level_mutants
from tests.mutation.rows import MODULES, ROOT


def run_module_level(module: str, work: Path, children: int = 1, tests: list[str] | None = None,
                     timeout_s: float = 600, emptied: list[str] | None = None) -> dict[str, str]:
    """Each module-level mutant, each mutant of a decorated function, and each `emptied` function emptied, run
    against the row's tests in the scratch copy: killed or survived. One warm process runs them all
    (`warm_runner`)."""
    original = (work / module).read_text()
    mutants = (module_level_mutants(original) + decorated_mutants(original)
               + emptied_mutants(original, emptied or []))
    if not mutants:
        return {}
    tests = tests if tests is not None else [t for t in MODULES[module] if (ROOT / t).exists()]
    spec = {"module": module, "tests": tests, "mutants": mutants, "children": children, "timeout_s": timeout_s}
    # Started by the path of the package's __main__.py, not with `-m`: from the scratch copy, `-m` would run the
    # scratch copy's own tests/mutation, which a tree made for a test may not have.
    main = Path(__file__).resolve().parent / "__main__.py"
    done = subprocess.run([sys.executable, str(main), "--warm-runner"], input=json.dumps(spec),
                          cwd=work, capture_output=True, text=True, check=False)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        raise RuntimeError(f"the module-level mutants could not be run: {done.stderr[-2000:]}")
    return {str(k): str(v) for k, v in json.loads(lines[-1]).items()}


OURS = ("core", "bot", "adapters", "tests")


def _forget_ours() -> None:
    """Forget the project's own modules (`OURS`): the next import of one loads it again, from sys.path."""
    for loaded in [m for m in sys.modules if m.split(".")[0] in OURS]:
        del sys.modules[loaded]


class _MutatedSource(importlib.abc.SourceLoader):
    """Serves one module's mutated source from memory, under the file's own name: parallel children each import
    their own mutant of the same file, and no bytecode is cached for it (no `path_stats`)."""

    def __init__(self, path: Path, source: str) -> None:
        self.path, self.source = path, source

    def get_filename(self, fullname: str) -> str:
        return str(self.path)

    def get_data(self, path: str) -> bytes:
        return self.source.encode() if path == str(self.path) else Path(path).read_bytes()


class _MutantFinder(importlib.abc.MetaPathFinder):
    """Finds the mutated module (and only it) ahead of the file on disk."""

    def __init__(self, name: str, loader: _MutatedSource) -> None:
        self.name, self.loader = name, loader

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.loader.path, loader=self.loader)


def warm_runner(spec: dict[str, Any]) -> dict[str, str]:
    """Run in the scratch copy: import the row's tests once, so the libraries they load are loaded (pytest, the
    SQL toolkit, the SDKs: most of a fresh process's start-up), forget the project's own modules, then fork a child
    per mutant that imports them again, the mutated one from memory, and runs the row's tests with pytest."""
    import pytest

    sys.path.insert(0, os.getcwd())  # the scratch copy first: started by its path, the checkout came first
    # This tool is a part of the checkout's `tests` package, loaded to run this: forgotten, or the `tests.…` imported
    # below would be the checkout's, not the scratch copy's.
    _forget_ours()
    tests, name = list(spec["tests"]), str(spec["module"]).removesuffix(".py").replace("/", ".")
    for test in tests:
        importlib.import_module(test.removesuffix(".py").replace("/", "."))
    _forget_ours()
    args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", *tests]
    found: dict[str, str] = {}
    waiting = list(spec["mutants"])
    running: dict[int, tuple[str, float]] = {}
    while waiting or running:
        while waiting and len(running) < max(1, int(spec["children"])):
            mutant, source = waiting.pop(0)
            pid = os.fork()
            if pid == 0:  # the child: its output goes nowhere, its exit status is pytest's
                try:
                    sys.dont_write_bytecode = True
                    sys.meta_path.insert(0, _MutantFinder(name, _MutatedSource(Path(spec["module"]).resolve(), source)))
                    quiet = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(quiet, 1)
                    os.dup2(quiet, 2)
                    code = int(pytest.main(args))
                except BaseException:  # an import that fails under the mutant kills it
                    code = 99
                os._exit(code)
            running[pid] = (mutant, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for child, (mutant, started) in list(running.items()):
                if time.monotonic() - started > float(spec["timeout_s"]):
                    os.kill(child, signal.SIGKILL)
                    os.waitpid(child, 0)
                    found[mutant] = "timeout"
                    del running[child]
            time.sleep(0.02)
            continue
        mutant, _ = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        # 5: no test ran, which kills nothing; any other failure (a test, an import, a crash) kills it.
        found[mutant] = {0: "survived", 5: "no tests"}.get(code, "killed")
    return found
