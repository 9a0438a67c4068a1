"""The benches' verdict: a figure past its target (or not measured) fails the run; and one real bench, run with a
target it cannot meet, fails the runner's table."""

from __future__ import annotations

import math

import pytest

from bench.__main__ import main as bench_main
from bench.verdict import Figure, overrides, report


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
def test_python_m_bench_prints_one_table_and_fails_on_a_miss(capfd: pytest.CaptureFixture[str]) -> None:
    """The runner over one real bench in its quick mode (long_discussion counts tokens through the caching fake, no
    timing): the figures the bench wrote make its table, and a figure past its target fails the run."""
    code = bench_main(["--quick", "--only", "long_discussion", "--", "--target", "prompt_ratio=0"])
    out = capfd.readouterr().out
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("bench "))
    rows = {r.split()[1]: r for r in lines[header + 2:]}
    assert set(rows) == {"prompt_ratio", "input_ratio"}, out
    assert rows["prompt_ratio"].endswith("MISSES") and rows["input_ratio"].endswith("meets"), out
    assert code == 1, out


def test_a_figure_the_run_cannot_judge_says_why_and_neither_passes_nor_fails_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    room = "the libraries alone need 9.0 s of one core, the target leaves 6.0 s"
    assert report([Figure("ratio", 4.0, 1.3, unjudged=room), Figure("rss", 250, 300, "MB")]) == 0
    assert report([Figure("ratio", 4.0, 1.3, unjudged=room), Figure("rss", 350, 300, "MB")]) == 1
    out = capsys.readouterr().out
    assert f"ratio: 4.000 (target <= 1.3) not judged: {room}" in out
    assert "verdict: all 1 judged figure(s) meet their targets" in out and "verdict: MISSES rss\n" in out
