"""Every package the app's code imports is declared in pyproject.toml, not borrowed from another's dependencies."""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
OURS = {"core", "adapters", "bot"}


def imported(package: str) -> set[str]:
    """The top-level modules a package's code imports, at the top or inside a function."""
    names: set[str] = set()
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {canonicalize_name(Requirement(line).name) for line in project["dependencies"]}


def test_every_imported_package_is_declared() -> None:
    modules = set().union(*(imported(p) for p in OURS)) - OURS - set(sys.stdlib_module_names)
    owners = packages_distributions()
    missing = {m: owners.get(m, ["(not installed)"]) for m in sorted(modules)
               if not {canonicalize_name(d) for d in owners.get(m, [])} & declared()}
    assert not missing, f"imported but not declared in pyproject.toml: {missing}"

