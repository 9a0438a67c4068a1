"""bench/load.py --count-sql, run for real on two discussions with Slack's clock sped up: the statements it lists,
and a verdict that still judges the run it made (a figure past its target fails it); and the bench's readings of
other processes (the speedometer's line, an ended PostgreSQL backend's time). Here, not in tests/bench: each waits
on a real process (the bench, the speedometer, PostgreSQL reaping a backend), so on real time."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bench.common import SPEEDOMETER, timed_in, timings
from bench.load import cpu_s, postgres_s

ROOT = Path(__file__).resolve().parents[2]
# Not timed here; the statements' counts are judged on a real load, not on two discussions' set-up.
LOOSE = ["slowest_round_ratio=100", "healthz_p99=10000", "sql_statements_per_call=1000",
         "sql_transactions_per_call=1000", "last_round_cpu_ratio=100", "last_round_statements_ratio=100",
         "slack_calls_per_call=100", "charts_cpu_ratio=100"]
MISSED = "peak_rss=1"  # no Python process runs in a megabyte: the one figure past its target


def test_counting_sql_lists_the_statements_and_leaves_the_verdict_to_the_run() -> None:
    cmd = [sys.executable, "bench/load.py", "-n", "2", "--latency", "0.05", "--time-scale", "10", "--count-sql",
           "--floor-runs", "0", "--rounds", "2", "--delta-gap", "0.001"]
    for target in [*LOOSE, MISSED]:
        cmd += ["--target", target]
    done = subprocess.run(cmd, cwd=ROOT, env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=300)
    out = done.stdout
    assert "finished round 1: 2 of 2" in out, out + done.stderr
    # Judged over whole discussions: from the load's start until the last round's last post was out.
    whole = re.search(r"^SQL a model call over the 2 rounds, from the load's start until the last post was out: "
                      r"([\d.]+) statements, ([\d.]+) transactions \((\d+) calls\)$", out, re.M)
    assert whole is not None and int(whole.group(3)) > 0, out
    listed, opened = out.split(whole.group(0))[1].split("Slack calls a model call")[0].split(
        "the transactions, by their first statement:")
    # The twelve statements run most, and the transactions by the statement each opens with, each with how often a
    # model call runs it, most first.
    for lines, most in ((listed.splitlines()[1:], 12), (opened.splitlines()[1:], 6)):
        counts = [re.fullmatch(r"\s+(\d+\.\d\d)  (SELECT|INSERT|UPDATE|DELETE) .+", line) for line in lines]
        assert 0 < len(lines) <= most and all(counts), out
        per_call = [float(m.group(1)) for m in counts if m]
        assert per_call == sorted(per_call, reverse=True) and per_call[0] > 0, out
    assert len(listed.splitlines()[1:]) == 12, out
    # Every transaction opens with some statement: the openings add up to the transactions a call.
    assert sum(float(line.split()[0]) for line in opened.splitlines()[1:]) <= float(whole.group(2)) + 0.01, out
    # What the load sent, beside what the floor sends: the floor is fair only while the two are alike.
    assert re.search(r"^model requests during the load: [\d.]+ KB of JSON on average; Slack's new messages [\d.]+ KB, "
                     r"edits [\d.]+ KB; the floor sends [\d.]+ KB, [\d.]+ KB and [\d.]+ KB$", out, re.M), out
    # The run worked and every other figure meets its (loose) target: only the missed one fails it.
    assert "verdict: MISSES peak_rss\n" in out and done.returncode == 1, out + done.stderr
    # Whole discussions: the last round's calls are measured and set beside round 1's.
    assert re.search(r"^round 2 \(from the first discussion finishing round 1 until every one finished round 2\): "
                     r"[\d.]+ ms of CPU a model call \(\d+ calls\), [\d.]+x round 1's", out, re.M), out
    # The machine's busy time holds the app's own: the cores' total is read, not the idle time or one process.
    shares = re.search(r"the app used (\d+)% of a core.*cores were busy (\d+)% of a core in all", out)
    assert shares is not None, out
    app, machine = map(int, shares.groups())
    assert app <= machine + 1 <= 100 * (os.cpu_count() or 1) + 6, out
    # What the ratio target leaves to spend follows from the lone round and the calls the run made.
    lone = float(_grab(r"lone round 1: ([\d.]+) s", out)[0])
    calls = int(_grab(r"process CPU per model call in round 1: [\d.]+ ms \((\d+) calls", out)[0])
    within, per_call = map(float, _grab(r"at the ratio target \(1.3 × the lone round: ([\d.]+) s\), one process "
                                        r"has ([\d.]+) ms", out))
    assert abs(within - 1.3 * lone) <= 0.06, out
    assert abs(per_call - within * 1000 / calls) <= 0.06 + 50 / calls, out  # within is printed to ±0.05 s
    # With no floor measured, nothing says the machine leaves room for the round's ratio: it is shown, not judged.
    assert re.search(r"^slowest_round_ratio: [\d.]+ \(target <= 100\) not judged: no floor was measured", out,
                     re.M), out
    # Whole discussions judged: their CPU a call (the probes' taken off), their Slack calls, their charts' threads.
    assert re.search(r"^process CPU per model call over whole discussions \(2 round\(s\), closings and charts "
                     r"included, from the load's start until the last post was out\): [\d.]+ ms \((\d+) calls",
                     out, re.M), out
    slack = float(_grab(r"Slack calls a model call \(\d+ calls, all rounds\): ([\d.]+):", out)[0])
    judged = float(_grab(r"\nslack_calls_per_call: ([\d.]+) \(target <= 100\) meets", out)[0])
    assert abs(judged - slack) <= 0.006, out  # the figure judged is the one printed (to two places)
    assert re.search(r"^charts_cpu_ratio: [\d.]+ \(target <= 100\) meets", out, re.M), out


def test_the_machine_s_speed_is_read_in_each_window_on_the_clock_the_bench_keeps() -> None:
    # Round 1 and the last round are set apart by when each fixed loop was timed: the machine's speed can change
    # between them, and a ratio of the two rounds that moved with it is the machine's.
    before = time.monotonic()
    meter = subprocess.Popen([sys.executable, "-c", SPEEDOMETER], stdout=subprocess.PIPE, text=True)
    try:
        assert meter.stdout is not None
        line = meter.stdout.readline()
    finally:
        meter.kill()
        meter.wait()
    [(when, ms)] = timings(line)
    assert before <= when <= time.monotonic() and ms > 0
    timed = timings("10.0 65.0\n14.0 66.0\n18.5 120.0\n22.5 118.0\n")
    assert timed_in(timed, (9.0, 14.0)) == [65.0, 66.0]
    assert timed_in(timed, (18.0, float("inf"))) == [120.0, 118.0]
    assert timed_in(timed, None) == [] and timed_in(timed, (30.0, 40.0)) == []


def _grab(pattern: str, out: str) -> tuple[str, ...]:
    found = re.search(pattern, out)
    assert found is not None, out
    return found.groups()


async def test_postgres_time_holds_a_connection_that_ended_during_the_load(pg_url: str) -> None:
    """A connection's server process exits with it: the time it spent still counts, not only the live processes'."""
    before = postgres_s()
    engine = create_async_engine(pg_url, poolclass=NullPool)  # closing the connection ends its server process
    async with engine.connect() as conn:
        pid = (await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one()
        await conn.execute(text("SELECT count(*) FROM generate_series(1, 3000000)"))
        spent = cpu_s(pid)
    await engine.dispose()
    for _ in range(100):  # the server reaps it at once; its time then shows in the server's main process
        if _ended(pid):
            break
        await asyncio.sleep(0.05)
    assert _ended(pid)
    assert spent >= 0.1  # enough to be missed if the ended process were left out
    assert postgres_s() - before >= spent - 0.02


def _ended(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()
