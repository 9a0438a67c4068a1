"""bench/library_floor.py, run for real on a few calls: the three libraries on one loop, the SQL counted as the
app's is (12 statements in 4 transactions through the app's Store), and the verdict its figure (one run, in this
process, with a target no machine meets)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bench.common import prompt
from bench.library_floor import EDITS, MAX_SHARE, POSTS_A_TURN, SQLITE, STREAMED, _schemas, edits_of, main
from bench.load import MAX_SLACK_CALLS, MAX_STATEMENTS, MAX_TRANSACTIONS
from bench.verdict import overrides
from core.deliberation import schemas
from core.llm import AnthropicLLM, LLMConfig
from core.models import Phase
from core.ports import Block, Prompt, Purpose
from tests.fakes.anthropic_server import FakeAnthropic

ROOT = Path(__file__).resolve().parents[2]


def floor(capsys: pytest.CaptureFixture[str], *target: str) -> tuple[int, str]:
    """The bench's own run, in this process (its fakes in a child of their own, as always)."""
    code = main(calls=26, repeats=1, lanes=4, targets=overrides(list(target)), latency_s=0.0, gap_s=0.0,
                count_sql=True)
    return code, capsys.readouterr().out


def judged(out: str) -> tuple[float, float, str]:
    """The floor's figure as the verdict printed it: the share, its target, and meets or MISSES."""
    line = re.search(r"^library_floor_share: ([\d.]+) \(target <= ([\d.e+-]+)\) (meets|MISSES)$", out, re.M)
    assert line is not None, out  # a share, no unit: a figure in milliseconds would not match
    return float(line.group(1)), float(line.group(2)), line.group(3)


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
def test_the_floor_runs_the_three_libraries_on_one_loop_and_is_judged_against_its_target(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = floor(capsys, "library_floor_share=0.0001")  # no machine runs the libraries in 100 additions
    total = float(re.search(r"^libraries alone: ([\d.]+) ms a model call", out, re.M).group(1))  # type: ignore[union-attr]
    assert total > 0, out
    # SQLite without DATABASE_URL, with as many statements and transactions as the load allows the app, no more,
    # counted by the load's own listeners as they ran through the app's engine and connection.
    mix = re.search(r"database SQLite: (\d+) reads, (\d+) updates, (\d+) inserts in (\d+) transactions", out)
    assert mix is not None, out
    reads, updates, inserts, transactions = map(int, mix.groups())
    assert (reads + updates + inserts, transactions) == (MAX_STATEMENTS, MAX_TRANSACTIONS), out
    assert reads >= 1, out  # a turn row read with its JSON is part of every floor
    assert (f"SQL counted as the app's is: {MAX_STATEMENTS:.2f} statements, {MAX_TRANSACTIONS:.2f} transactions a "
            "model call") in out, out
    # The machine's speed is the speedometer's timings of its fixed loop, each about what the same loop costs here.
    began, count = time.process_time(), 0
    for i in range(1_000_000):
        count += i
    here_ms = (time.process_time() - began) * 1000
    speed = re.search(r"a fixed loop of plain Python took (\d+) ms \(median of (\d+) timings\), so the floor is "
                      r"([\d.]+) of it", out)
    assert speed is not None and int(speed.group(2)) >= 1, out
    assert here_ms / 5 <= int(speed.group(1)) <= here_ms * 5, (here_ms, out)
    # What is judged is that share, measured in the same run, never the milliseconds.
    share, target, verdict = judged(out)
    assert abs(share - total / int(speed.group(1))) < 0.002 + share * 0.01, out
    assert abs(float(speed.group(3)) - share) < 0.0006, out
    assert (target, verdict) == (0.0001, "MISSES"), out
    assert "verdict: MISSES library_floor_share\n" in out and code == 1, out  # the run worked; only the figure missed


@pytest.mark.slow
def test_the_floor_s_own_target_is_a_share_of_the_fixed_loop_and_a_share_within_it_meets(
        capsys: pytest.CaptureFixture[str]) -> None:
    code, out = floor(capsys)
    share, target, verdict = judged(out)
    assert target == SQLITE.max_share == MAX_SHARE and 0 < MAX_SHARE < 1, out  # no override: the bench's own
    assert verdict == ("meets" if share <= target else "MISSES") and code == (share > target), out
    # A target the measured share is within meets, in the same way: the verdict follows the share, not the ms.
    code, out = floor(capsys, f"library_floor_share={share * 10:.6f}")
    again, _, verdict = judged(out)
    assert again < share * 10 and verdict == "meets" and code == 0, out


def test_the_floor_s_slack_mix_is_the_design_s_a_post_a_turn_and_at_most_1_7_edits_a_call() -> None:
    calls = 13 * 100
    edits = sum(edits_of(i) for i in range(calls))
    assert abs(edits / calls - EDITS) <= 0.01 and EDITS <= 1.7
    assert all(edits_of(i) == 0 for i in range(calls) if i % 13 >= STREAMED)  # a structured answer has no post
    assert POSTS_A_TURN * STREAMED / 13 + edits / calls <= MAX_SLACK_CALLS  # what the load allows the app


def test_the_floor_validates_structured_answers_against_the_app_s_own_schemas() -> None:
    found = _schemas()
    assert len(found) >= 3 and all(issubclass(s, BaseModel) and getattr(schemas, s.__name__) is s for s in found)


def shape(value: Any) -> Any:
    """A JSON value's structure: its keys, its values' kinds, the distinct shapes a list holds; no text."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return sorted({repr(shape(item)) for item in value})
    return type(value).__name__


async def test_the_floor_asks_the_model_as_the_app_does() -> None:
    """The floor's request has the app's shape (a cached system block, transcript blocks with a breakpoint, the
    instruction last, adaptive thinking, an effort): a key the app adds or drops shows here before it skews the
    floor."""
    async with FakeAnthropic() as fake:
        llm = AnthropicLLM(LLMConfig(api_key="sk-ant-floor-test-not-a-secret", base_url=fake.base_url))
        try:
            await llm.complete(Prompt(system=[Block(text="Rules. " * 50, cache=True)],
                                      shared=[Block(text="Ada: trunk. " * 50), Block(text="Lin: branches. " * 50,
                                                                                       cache=True)],
                                      instruction="Your turn, briefly.", purpose=Purpose(phase=Phase.STATEMENT)))
        finally:
            await llm.aclose()
    [app] = fake.requests
    floor = prompt(5) | {"stream": True}  # streamed, as 11 of 13 of the floor's calls are
    assert shape(floor) == shape(app)
    assert floor["thinking"] == app["thinking"] and floor["output_config"].keys() == app["output_config"].keys()
    last = floor["messages"][0]["content"]
    assert "cache_control" in last[-2] and "cache_control" not in last[-1]  # the breakpoint before the instruction
