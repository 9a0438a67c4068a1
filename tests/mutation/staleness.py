"""Whether a row still measures HEAD: the git blobs of its module and of every file its tests are made of."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

from tests.mutation.rows import MODULES, ROOT
from tests.mutation.scoring import SCORES


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def commit() -> str:
    """The commit the tree is at, marked `+changes` when the working tree differs from it (the scores file aside:
    each run rewrites it)."""
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", f":!{SCORES.relative_to(ROOT)}")
    return f"{head}+changes" if dirty else head


def blob(module: str, measured: str) -> str:
    """The git blob of the module as measured: at the commit, or the working file's when it had changes."""
    if measured.endswith("+changes"):
        return git("hash-object", module)
    return git("rev-parse", f"{measured}:{module}")


def _imported_tests(path: Path) -> list[str]:
    """The files of the `tests` package a test file imports (`from tests.fakes.chat import …`, `from tests.fakes
    import chat`): helpers and fakes a test is made of."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                 if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
        for name in names:
            if name == "tests" or name.startswith("tests."):
                base = name.replace(".", "/")
                out += [f for f in (f"{base}.py", f"{base}/__init__.py") if (ROOT / f).is_file()]
    return out


def test_files(module: str) -> list[str]:
    """What a row's tests are made of: the test files it names, the conftest.py files above each (their fixtures),
    and the test modules they import, helpers and fakes, with what those import in turn. A weakened fixture or fake
    kills less as surely as a weakened test."""
    named = MODULES.get(module, [])
    todo = list(named)
    for test in named:
        folder = Path(test).parent
        while folder.parts:
            todo.append(str(folder / "conftest.py"))
            folder = folder.parent
    found: set[str] = set()
    while todo:
        path = todo.pop()
        if path in found or (path not in named and not (ROOT / path).is_file()):
            continue
        found.add(path)
        if (ROOT / path).is_file():
            todo += _imported_tests(ROOT / path)
    return sorted(found)


def test_blobs(module: str, measured: str) -> dict[str, str]:
    """The git blob of each file the module's tests are made of (`test_files`), as measured ("" for a test file the
    row names that does not exist)."""
    return {t: (blob(t, measured) if (ROOT / t).exists() else "") for t in test_files(module)}


def stale(module: str, row: dict[str, object]) -> str:
    """Why the row no longer measures what is at HEAD ("" when it does): the module changed, or what its tests are
    made of (`test_files`: a test, a fixture or a fake weakened since kills less; a test left out of the row), or
    the row never recorded its tests."""
    if not row.get("blob") or row["blob"] != git("rev-parse", f"HEAD:{module}"):
        return "the module changed since"
    tests = row.get("tests")
    if not isinstance(tests, dict) or not tests:
        return "its tests were not recorded"
    now = test_files(module)
    # A file measured then that the row's tests no longer use (a test left out of the row) changed as surely as
    # one edited: the score measured with it says nothing of the tests without it.
    changed = [t for t in sorted(set(tests) | set(now))
               if t not in now or tests.get(t) != ((git("rev-parse", f"HEAD:{t}") or "") if (ROOT / t).exists()
                                                   else "")]
    shown = ", ".join(changed[:4]) + (f" and {len(changed) - 4} more" if len(changed) > 4 else "")
    return f"its tests changed since: {shown}" if changed else ""
