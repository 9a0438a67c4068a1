"""The benches' verdict: a figure past its target (or not measured) fails the run; and one real bench, run with a
target it cannot meet, exits non-zero."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.verdict import Figure, overrides, report

ROOT = Path(__file__).resolve().parents[2]


def test_a_figure_within_its_target_passes_and_one_past_it_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert report([Figure("ratio", 1.1, 1.15), Figure("rss", 250, 300, "MB")]) == 0
    assert report([Figure("ratio", 1.16, 1.15), Figure("rss", 250, 300, "MB")]) == 1
    assert report([Figure("ratio", 1.15, 1.15)]) == 0  # the target itself meets it
    assert report([Figure("speedup", 2.0, 3.0, at_most=False)]) == 1
    assert report([Figure("speedup", 3.0, 3.0, at_most=False)]) == 0
    assert report([Figure("ratio", math.nan, 1.15)]) == 1  # not measured is not a pass
    assert report([Figure("ratio", 1.0, 1.15)], ok=False) == 1  # the run itself failed
    out = capsys.readouterr().out
    assert "ratio: 1.160 (target <= 1.15) MISSES" in out and "verdict: MISSES ratio" in out


def test_a_target_can_be_overridden_but_only_for_a_figure_that_exists() -> None:
    assert report([Figure("ratio", 1.1, 1.15)], overrides(["ratio=1.0"])) == 1
    assert report([Figure("ratio", 1.1, 1.15)], overrides(["ratio=2"])) == 0
    assert report([Figure("ratio", 1.1, 1.15)], overrides(["typo=2"])) == 1
    with pytest.raises(SystemExit):
        overrides(["ratio"])


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
def test_a_real_bench_with_an_impossible_target_exits_non_zero(tmp_path: Path) -> None:
    """long_discussion counts tokens through the caching fake (no timing): a correctness run, kept short."""
    results = tmp_path / "figures.jsonl"
    cmd = [sys.executable, "bench/long_discussion.py", "--rounds", "4"]
    env = {"PATH": "/usr/bin:/bin", "BENCH_RESULTS": str(results)}
    impossible = subprocess.run([*cmd, "--target", "prompt_ratio=0"], cwd=ROOT, env=env, capture_output=True,
                                text=True, timeout=300)
    assert impossible.returncode == 1, impossible.stdout + impossible.stderr
    assert "prompt_ratio" in impossible.stdout and "MISSES" in impossible.stdout
    figures = [json.loads(line) for line in results.read_text().splitlines()]
    assert {f["name"] for f in figures} == {"prompt_ratio", "input_ratio"}
    assert not next(f for f in figures if f["name"] == "prompt_ratio")["meets"]


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
def test_python_m_bench_prints_one_table_and_fails_on_a_miss() -> None:
    """The runner over one bench in its quick mode: its table, and a figure past its target fails the run."""
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--only", "long_discussion", "--",
                           "--target", "prompt_ratio=0"], cwd=ROOT, env={"PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("bench "))
    rows = {r.split()[1]: r for r in lines[header + 2:]}
    assert set(rows) == {"prompt_ratio", "input_ratio"}, done.stdout
    assert rows["prompt_ratio"].endswith("MISSES") and rows["input_ratio"].endswith("meets"), done.stdout
    assert done.returncode == 1, done.stdout + done.stderr


def test_a_figure_the_run_cannot_judge_says_why_and_neither_passes_nor_fails_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    room = "the libraries alone need 9.0 s of one core, the target leaves 6.0 s"
    assert report([Figure("ratio", 4.0, 1.3, unjudged=room), Figure("rss", 250, 300, "MB")]) == 0
    assert report([Figure("ratio", 4.0, 1.3, unjudged=room), Figure("rss", 350, 300, "MB")]) == 1
    out = capsys.readouterr().out
    assert f"ratio: 4.000 (target <= 1.3) not judged: {room}" in out
    assert "verdict: all 1 judged figure(s) meet their targets" in out and "verdict: MISSES rss\n" in out
