"""What one model call of bench/load.py costs in the libraries the app must use, with none of the app's own code:
the floor under its CPU figure on this machine.

A model call of the load (counted by `bench/load.py --count-sql`, which prints its requests' sizes beside these)
brings, at the least:
- one request to the Messages API through the anthropic SDK, as the app sends it, of the load's shape and size (a
  cached system block, a block a transcript turn, adaptive thinking; 28 KB of JSON on average, as a transcript grows
  over three rounds): 11 of 13 turns streamed as text of about 1,500 characters in 12-character deltas (the
  load's), read event by event; 2 structured answers streamed and read the same way, their JSON then validated by
  pydantic;
- about 2.75 calls to the Slack Web API through slack_sdk's AsyncWebClient on one aiohttp session (chat.postMessage
  1.24, chat.update 1.51), with blocks already built, of the load's sizes (about 0.55 KB a new message, 2.65 KB an
  edit);
- its SQL statements through SQLAlchemy Core on a database of the app's schema, of the app's shapes: a discussion
  row and a turn row with its text and JSON read by their keys (half of the reads each), a row updated by its key,
  a small row inserted, all prebuilt: 12 in 4 transactions, what bench/load.py allows the app. On SQLite (the
  default) on a file with the app's settings, through the sync engine: cheaper than the async one the app must
  use. With DATABASE_URL=postgresql://… on a fresh database there, through asyncpg.

The fakes of both APIs run in a child process, so only the libraries' side is timed here (process CPU, on uvloop as
the app), 20 calls at a time as the load's discussions run at once (`--lanes`). Prints each part per model call
(the median of `--repeats` runs), their sum against a reference of 5 ms on SQLite, 7 ms on PostgreSQL (the load
judges the app as a multiple of this sum, measured in the same run), and the
sum as a share of the fixed loop bench/load.py times as this machine's speed. Exits 1 when the libraries alone
exceed the target: then no change to the app's own code can meet it on this machine with these statement counts."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import DELTA_CHARS, REPLY_CHARS, SPEEDOMETER, message, pinned, prompt, timings  # noqa: E402
from bench.platform_limits import drop_database, fresh_database  # noqa: E402
from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402

# Per model call in bench/load.py -n 300 on SQLite (--count-sql, and its Slack calls line).
STREAMED = 11  # of every 13 model calls: the rest are structured answers, asked for whole
POSTS, EDITS = 1.24, 1.51
# Calls at a time: the load's discussions wait on their APIs together, so one wake-up of the loop serves several,
# as it does here; one at a time would pay a whole wake-up for each (measured: a floor a fifth higher).
# 20 is the app's PostgreSQL pool.
LANES = 20


async def _serve() -> None:
    """The child: both fakes, Slack's limits run so fast that none binds, the model with no latency."""
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.slack_api import FakeSlack

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with FakeSlack(time_scale=1e6) as slack, FakeAnthropic(reply_chars=REPLY_CHARS,
                                                                  chunk_chars=DELTA_CHARS) as model:
        print(slack.base_url, model.base_url, flush=True)
        await stop.wait()


def _on_the_apps_loop(work: Coroutine[Any, Any, float]) -> float:
    """Run on uvloop, as the app's servers do where it is installed."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(work)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(work)


async def _lanes(count: int, lanes: int, one: Callable[[int], Awaitable[None]]) -> float:
    """`one(i)` for each i below `count`, `lanes` at a time, as the load's discussions run at once (a wake-up of the
    loop then serves several of them); the CPU seconds this process used."""
    async def lane(first: int) -> None:
        for i in range(first, count, lanes):
            await one(i)

    began = time.process_time()
    await asyncio.gather(*(lane(k) for k in range(lanes)))
    return time.process_time() - began


def model_ms(base_url: str, calls: int, lanes: int) -> float:
    """Anthropic SDK CPU per model call: streamed turns read event by event, structured answers as the app reads
    them (streamed, their raw events' text joined, then validated)."""
    import anthropic
    from pydantic import BaseModel

    class Bid(BaseModel):  # a structured answer of the app's size: a few fields
        urgency: int
        point: str
        answers: str

    fmt = {"type": "json_schema", "schema": anthropic.transform_schema(Bid)}

    async def run() -> float:
        client = anthropic.AsyncAnthropic(api_key="sk-ant-floor-not-a-secret", base_url=base_url,
                                          http_client=anthropic.DefaultAioHttpClient())

        async def call(i: int) -> None:
            if i % 13 < STREAMED:
                stream = await client.messages.create(**prompt(i), stream=True)
                async for _ in stream:
                    pass
            else:
                request = prompt(i)
                request["output_config"]["format"] = fmt
                parts = []
                async for event in await client.messages.create(**request, stream=True):
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                Bid.model_validate_json("".join(parts))

        async with client:
            await client.messages.create(**prompt(0))  # untimed: first-use caches
            return await _lanes(calls, lanes, call)

    return _on_the_apps_loop(run()) * 1000 / calls


def slack_ms(base_url: str, calls: int, lanes: int) -> float:
    """slack_sdk CPU per model call: its share of new messages and edits, on one shared aiohttp session."""
    from slack_sdk.web.async_client import AsyncWebClient

    async def run() -> float:
        async with aiohttp.ClientSession() as session:
            client = AsyncWebClient(token="xoxb-test", base_url=base_url, session=session)
            channels = [f"C{k:04d}" for k in range(50)]
            for channel in channels:  # untimed: the app has joined its channels before the load
                await client.conversations_join(channel=channel)
            posts, edits = round(POSTS * calls), round(EDITS * calls)

            async def post(i: int) -> None:
                channel = channels[i % len(channels)]
                resp = await client.chat_postMessage(channel=channel, **message(i, edit=False))
                if i < edits:
                    await client.chat_update(channel=channel, ts=resp["ts"], **message(i, edit=True))

            return await _lanes(posts, lanes, post)

    return _on_the_apps_loop(run()) * 1000 / calls


@dataclass(frozen=True)
class Mix:
    """A model call's statements in bench/load.py (--count-sql), and the CPU target of that database."""

    selects: int
    updates: int
    inserts: int
    transactions: int
    target_ms: float


# The statements the app may run a model call (bench/load.py judges ≤ 12 in ≤ 4 transactions), in the app's
# proportions (tests/core/running/test_statements_per_call.py, SQLite: 11.7 a call, about 2 reads, 5 updates and 5
# inserts, in 3.6 transactions; PostgreSQL: 13.7 in 3.8). A floor with more statements than the app runs would
# flatter the app's ratio to it.
SQLITE = Mix(selects=2, updates=5, inserts=5, transactions=4, target_ms=5.0)
POSTGRES = Mix(selects=2, updates=5, inserts=5, transactions=4, target_ms=7.0)


def _statements(mix: Mix, calls: int) -> tuple[dict[str, Any], list[list[tuple[str, dict[str, Any]]]]]:
    """The statements, prebuilt with bind parameters as the app's hot ones are, and each model call's
    transactions: the statements spread over them, by key over 50 discussions. Half the reads are of a turn row with
    its text and JSON, as the app reads its turns."""
    from sqlalchemy import bindparam, insert, select, update

    from core.storage import tables as t

    d, turns, now = t.discussions.c, t.turns.c, datetime.now(UTC)
    statements = {"read": select(t.discussions).where(d.id == bindparam("id")),
                  "turn": select(t.turns).where(turns.key == bindparam("key")),
                  "write": update(t.discussions).where(d.id == bindparam("b_id")).values(updated_at=bindparam("b_now")),
                  "note": insert(t.usage)}
    kinds = (["read", "turn"] * mix.selects)[:mix.selects] + ["write"] * mix.updates + ["note"] * mix.inserts
    plan = []
    for i in range(calls):
        key = f"d{i % 50}"
        params: dict[str, dict[str, Any]] = {"read": {"id": key}, "turn": {"key": f"{key}:t{i % 20}"},
                  "write": {"b_id": key, "b_now": now},
                  "note": {"discussion_id": key, "turn_key": f"{key}:t{i}", "model": "m", "input_tokens": 1,
                           "output_tokens": 1, "cache_write_tokens": 0, "cache_read_tokens": 0, "cost_usd": 0.0,
                           "created_at": now}}
        plan += [[(kind, params[kind]) for kind in kinds[part::mix.transactions]] for part in range(mix.transactions)]
    return statements, plan


def _seed(now: datetime) -> list[dict[str, Any]]:
    return [{"id": f"d{i}", "platform": "slack", "workspace": "T1", "channel": f"C{i}", "topic": "Trunk?",
             "flow": "moderated", "status": "running", "created_by": "U1", "budget_usd": 1.0, "created_at": now,
             "updated_at": now} for i in range(50)]


def _seed_turns(now: datetime) -> list[dict[str, Any]]:
    """20 finished turns a discussion, each with a turn's text and the JSON the app keeps beside it."""
    text = ("A considered view on the question before the council, with its reasons and doubts. " * 20)[:REPLY_CHARS]
    data = {"stance": "for", "label": "for", "summary": text[:300], "builds_on_earlier": True,
            "open_question": "Who pays for it?", "listed": [{"id": f"O{k}", "label": f"Option {k}"} for k in range(4)]}
    return [{"key": f"d{i}:t{k}", "discussion_id": f"d{i}", "round": 1, "step": k, "phase": "statement",
             "persona_key": f"p{k % 4}", "status": "published", "text": text, "data": data, "created_at": now}
            for i in range(50) for k in range(20)]


def sqlite_ms(calls: int) -> float:
    """SQLAlchemy Core CPU per model call on a SQLite file of the app's schema and settings (WAL, synchronous
    NORMAL), through the sync engine: the cheapest way through SQLAlchemy."""
    from sqlalchemy import create_engine, event, insert

    from core.storage import tables as t

    with tempfile.TemporaryDirectory() as folder:
        engine = create_engine(f"sqlite:///{Path(folder) / 'floor.db'}")

        @event.listens_for(engine, "connect")
        def _as_the_app(dbapi_connection, _record):  # type: ignore[no-untyped-def]
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            dbapi_connection.execute("PRAGMA synchronous=NORMAL")

        t.metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(insert(t.discussions), _seed(datetime.now(UTC)))
            conn.execute(insert(t.turns), _seed_turns(datetime.now(UTC)))
        statement, plan = _statements(SQLITE, calls)
        began = time.process_time()
        for transaction in plan:
            with engine.begin() as conn:
                for kind, params in transaction:
                    result = conn.execute(statement[kind], params)
                    if kind in ("read", "turn"):
                        result.first()
        used = time.process_time() - began
        engine.dispose()
    return used * 1000 / calls


def postgres_ms(url: str, calls: int, lanes: int) -> float:
    """SQLAlchemy Core CPU per model call on PostgreSQL through asyncpg (the app's driver), on a fresh database of
    the app's schema; the server's CPU is not this process's."""
    from sqlalchemy import insert

    from core.storage import tables as t
    from core.storage.db import make_engine

    async def run() -> float:
        made, name = await fresh_database(url)
        engine = make_engine(made)  # the app's engine: its pool, its driver
        try:
            async with engine.begin() as conn:
                await conn.run_sync(t.metadata.create_all)
                await conn.execute(insert(t.discussions), _seed(datetime.now(UTC)))
                await conn.execute(insert(t.turns), _seed_turns(datetime.now(UTC)))
            statement, plan = _statements(POSTGRES, calls)

            async def transaction(i: int) -> None:
                async with engine.begin() as conn:
                    for kind, params in plan[i]:
                        result = await conn.execute(statement[kind], params)
                        if kind in ("read", "turn"):
                            result.first()

            return await _lanes(len(plan), lanes, transaction)
        finally:
            await engine.dispose()
            await drop_database(url, name)

    return _on_the_apps_loop(run()) * 1000 / calls


def main(calls: int, repeats: int, lanes: int, targets: dict[str, float], pin: bool = False) -> int:
    database = os.environ.get("DATABASE_URL", "")
    postgres = database.startswith("postgres")
    mix = POSTGRES if postgres else SQLITE
    # --pin: the libraries' client on core 0, the fakes on core 1, as bench/load.py pins the app and its fakes.
    fakes_core = pinned(1) if pin else []
    if fakes_core:
        os.sched_setaffinity(0, {0})
    child = subprocess.Popen([*fakes_core, sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True,
                             cwd=ROOT)
    speedometer = subprocess.Popen([sys.executable, "-c", SPEEDOMETER], stdout=subprocess.PIPE, text=True)
    runs: dict[str, list[float]] = {"anthropic SDK": [], "slack_sdk": [], "SQLAlchemy": []}
    try:
        assert child.stdout is not None
        slack_url, model_url = child.stdout.readline().split()
        for _ in range(repeats):
            runs["anthropic SDK"].append(model_ms(model_url, calls, lanes))
            runs["slack_sdk"].append(slack_ms(slack_url, calls, lanes))
            runs["SQLAlchemy"].append(postgres_ms(database, calls, lanes) if postgres else sqlite_ms(calls))
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait()
        speedometer.terminate()
        speeds = [ms for _, ms in timings(speedometer.communicate()[0])]
    print(f"{calls} model calls, {lanes} at a time, {repeats} times; database {'PG' if postgres else 'SQLite'}: "
          f"{mix.selects} reads, {mix.updates} updates, {mix.inserts} inserts in {mix.transactions} transactions a "
          "model call")
    parts = {name: statistics.median(values) for name, values in runs.items()}
    for name, values in runs.items():
        print(f"{name}: {parts[name]:.2f} ms a model call (median; runs {', '.join(f'{v:.2f}' for v in values)})")
    total = sum(parts.values())
    speed = statistics.median(speeds) if speeds else float("nan")
    print(f"libraries alone: {total:.2f} ms a model call; this machine: a fixed loop of plain Python took {speed:.0f} "
          f"ms (median of {len(speeds)} timings), so the floor is {total / speed:.3f} of it")
    return report([Figure("library_floor", total, mix.target_ms, "ms")], targets)


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        asyncio.run(_serve())
        raise SystemExit(0)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200, help="model calls timed in each run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each part; the median counts")
    parser.add_argument("--lanes", type=int, default=LANES, help="calls at a time (SQLite's statements run one by one)")
    parser.add_argument("--pin", action="store_true", help="run on core 0 and the fakes on core 1 (taskset)")
    add_target_flag(parser)
    args = parser.parse_args()
    raise SystemExit(main(args.calls, args.repeats, args.lanes, overrides(args.target), args.pin))
