"""A bench's figures against their targets: one line each, the verdict, and the exit status (1 on any miss)."""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

RESULTS_ENV = "BENCH_RESULTS"  # a file each figure is appended to as JSON (python -m bench reads it)


@dataclass(frozen=True)
class Figure:
    name: str
    value: float
    target: float
    unit: str = ""
    at_most: bool = True  # the figure must not exceed its target (False: must reach it)
    unjudged: str = ""  # why this run cannot judge the figure (printed beside it; it neither meets nor misses)

    @property
    def meets(self) -> bool:
        """A figure that could not be measured (NaN) misses, like one past its target."""
        if math.isnan(self.value):
            return False
        return self.value <= self.target if self.at_most else self.value >= self.target

    def line(self) -> str:
        sign = "<=" if self.at_most else ">="
        unit = f" {self.unit}" if self.unit else ""
        verdict = f"not judged: {self.unjudged}" if self.unjudged else "meets" if self.meets else "MISSES"
        return f"{self.name}: {self.value:.3f}{unit} (target {sign} {self.target:g}{unit}) {verdict}"


def add_target_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", action="append", default=[], metavar="NAME=VALUE",
                        help="replace a figure's target (to check a miss fails the run: --target 'ratio=0')")


def overrides(pairs: Sequence[str]) -> dict[str, float]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.rpartition("=")
        if not sep or not name:
            raise SystemExit(f"--target wants NAME=VALUE, not {pair!r}")
        out[name.strip()] = float(value)
    return out


def report(figures: Sequence[Figure], targets: dict[str, float] | None = None, *, ok: bool = True) -> int:
    """Print every figure with its verdict; 0 when all meet their targets (and `ok`: the run itself worked),
    else 1. An override naming no figure is a mistake, not a pass."""
    targets = dict(targets or {})
    unknown = set(targets) - {f.name for f in figures}
    if unknown:
        print(f"--target names no figure of this bench: {', '.join(sorted(unknown))}")
        return 1
    figures = [replace(f, target=targets.get(f.name, f.target)) for f in figures]
    for f in figures:
        print(f.line())
    results = os.environ.get(RESULTS_ENV)
    if results:
        with open(results, "a", encoding="utf-8") as out:
            for f in figures:
                out.write(json.dumps({"name": f.name, "value": f.value, "target": f.target, "unit": f.unit,
                                      "at_most": f.at_most, "meets": f.meets, "unjudged": f.unjudged}) + "\n")
    missed = [f.name for f in figures if not f.meets and not f.unjudged]
    if not ok:
        print("verdict: the run itself failed (see above)")
        return 1
    judged = [f for f in figures if not f.unjudged]
    met = f"all {len(judged)} judged figure(s) meet their targets"
    print("verdict: " + (f"MISSES {', '.join(missed)}" if missed else met))
    return 1 if missed else 0
