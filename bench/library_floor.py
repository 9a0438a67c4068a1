"""What one model call of bench/load.py costs in the libraries the app must use, with none of the app's own code:
the floor under its CPU figure on this machine.

A model call of the load brings, at the least, all on one event loop (uvloop, as the app's), as many calls at a
time as the load runs discussions (`--lanes`: 300 on SQLite, 100 on PostgreSQL, as the load's judged runs):
- one request to the Messages API through the anthropic SDK, as the app sends it, of the load's shape and size (a
  cached system block, a block a transcript turn, adaptive thinking; 28 KB of JSON on average, as a transcript grows
  over three rounds), answered after the load's latency at the load's pace (about 1,500 characters in
  12-character deltas, one every `--delta-gap` seconds): 11 of 13 turns streamed as text, read event by event;
  2 structured answers streamed and read the same way, their JSON then validated against the app's own schemas
  (core/deliberation/schemas.py: a question, a roster, a round's and a final synthesis, a speech);
- Slack's Web API through slack_sdk's AsyncWebClient on one aiohttp session, a fixed mix the design sets, not the
  app's count: one chat.postMessage a turn, and the live text's chat.update the rate budget allows, at most 1.7 a
  model call (sent while the turn streams), with blocks already built, of the load's sizes (about 0.55 KB a new
  message, 2.65 KB an edit);
- 12 SQL statements in 4 transactions of the app's shapes (a discussion row and a turn row with its text and JSON
  read by their keys, a row updated by its key, a small row inserted, all prebuilt), what bench/load.py allows the
  app, through the app's own engine and connection (core/storage: on SQLite its inline connection, taken in turn;
  on PostgreSQL, DATABASE_URL=postgresql://… on a fresh database there, its asyncpg pool).
With `--count-sql` the floor's SQL runs under the listeners bench/load.py --count-sql puts on the app's.

The fakes of both APIs run in a child process, so only the libraries' side is timed here (process CPU). Prints the
floor a model call (the median of `--repeats` runs) in milliseconds, and judges it as a share of the fixed loop of
plain Python another process times during the same run (bench/load.py's speedometer, this machine's speed): at most
MAX_SHARE of it on SQLite, MAX_SHARE_PG on PostgreSQL. No figure in milliseconds is judged: the same code measured
2-7x apart between sessions on machines of this kind. `--parts` also times each library alone on the same loop at
the same concurrency. Exits 1 when the floor exceeds its share: the floor then does more than a model call of the
load needs (or its libraries grew dearer), and every ratio the load judges against it flatters the app."""

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
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    DELTA_CHARS,
    DELTA_GAP_S,
    MODEL_LATENCY_S,
    REPLY_CHARS,
    SPEEDOMETER,
    message,
    pinned,
    prompt,
    timings,
)
from bench.platform_limits import drop_database, fresh_database  # noqa: E402
from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402

STREAMED = 11  # of every 13 model calls: the rest are structured answers
# The design's Slack mix: one new message a turn (its placeholder, or its post), and live text's edits only as the
# budget leaves calls for them, at most this many a model call.
POSTS_A_TURN, EDITS = 1, 1.7
# Calls at a time: the load's discussions, each with a call in flight (bench/load.py's judged runs).
LANES = {"sqlite": 300, "postgresql": 100}
PARTS = ("anthropic SDK", "slack_sdk", "SQLAlchemy")


def _schemas() -> list[Any]:
    """The app's structured answers, in turn: what the model's JSON is validated against."""
    from core.deliberation import schemas

    return [schemas.Question, schemas.RosterSpec, schemas.RoundSynthesis, schemas.Speech, schemas.FinalSynthesis]


async def _serve(latency_s: float, gap_s: float) -> None:
    """The child: both fakes, Slack's limits run so fast that none binds, the model at the load's pace."""
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.slack_api import FakeSlack

    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with FakeSlack(time_scale=1e6) as slack, FakeAnthropic(
            latency_s=latency_s, reply_chars=REPLY_CHARS, chunk_chars=DELTA_CHARS, delta_gap_s=gap_s) as model:
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
    """`one(i)` for each i below `count`, `lanes` at a time, as the load's discussions run at once; the CPU seconds
    this process used."""
    async def lane(first: int) -> None:
        for i in range(first, count, lanes):
            await one(i)

    began = time.process_time()
    await asyncio.gather(*(lane(k) for k in range(min(lanes, count))))
    return time.process_time() - began


def edits_of(i: int) -> int:
    """The live edits of the i-th model call: EDITS a call on average, all on the streamed turns' posts."""
    per_turn = EDITS * 13 / STREAMED
    k = (i // 13) * STREAMED + i % 13
    return 0 if i % 13 >= STREAMED else round(per_turn * (k + 1)) - round(per_turn * k)


@dataclass(frozen=True)
class Mix:
    """A model call's statements (bench/load.py judges the app at ≤ 12 in ≤ 4 transactions), and the most the floor
    may cost a model call on that database, as a share of the fixed loop timed in the same run."""

    selects: int
    updates: int
    inserts: int
    transactions: int
    max_share: float


# The floor's target, a share of the speedometer's fixed loop (1,000,000 additions in plain Python) timed in the same
# run, so that it travels between machines and sessions as milliseconds do not. Measured at the defaults (1,300
# calls, 300 lanes, SQLite), each the median of 3 runs on a shared, loaded machine of this kind: 16.26 ms against a
# loop of 92 ms (0.177; runs 0.175-0.186) in one session, 8.39 ms against 73 ms (0.116; runs 0.114-0.122) in
# another. The share moves less than the milliseconds did (2-7x) but still half as much again between hosts, so the
# target sits above the higher session with a fifth to spare for the drift between the two processes' timings
# (the loop's own timings spread 10% within a run): a floor that does a model call's work twice misses it on either.
MAX_SHARE = 0.22
# PostgreSQL: asyncpg's pool with a server on the same cores. No run at 100 lanes finished on the loaded machine (its
# pool of 20 waited past its 30 s timeout); the references this replaces put PostgreSQL's floor at 1.25x SQLite's
# (10 against 8 ms), and so does this target.
MAX_SHARE_PG = 0.275
# The statements the app may run a model call, in the app's proportions (about 2 reads, 5 updates and 5 inserts). A
# floor with more statements than the app is allowed would flatter the app's ratio to it.
SQLITE = Mix(selects=2, updates=5, inserts=5, transactions=4, max_share=MAX_SHARE)
POSTGRES = Mix(selects=2, updates=5, inserts=5, transactions=4, max_share=MAX_SHARE_PG)


def _statements(mix: Mix, calls: int) -> tuple[dict[str, Any], list[list[list[tuple[str, dict[str, Any]]]]]]:
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
        plan.append([[(kind, params[kind]) for kind in kinds[part::mix.transactions]]
                     for part in range(mix.transactions)])
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


_SQL: list[Counter[str]] = []


def _counted() -> Counter[str]:
    """The counts of bench/load.py --count-sql's listeners, put on every engine once in this process."""
    if not _SQL:
        from bench.sql_count import count_into

        _SQL.append(Counter())
        count_into(_SQL[0])
    return _SQL[0]


class Floor:
    """The three libraries' clients, open on one loop, and a model call's share of each."""

    def __init__(self, model_url: str, slack_url: str, database: str, calls: int, count_sql: bool) -> None:
        self.model_url, self.slack_url, self.database, self.calls = model_url, slack_url, database, calls
        self.count_sql = count_sql
        self.schemas = _schemas()
        self.channels = [f"C{k:04d}" for k in range(50)]

    async def __aenter__(self) -> Floor:
        import anthropic
        from slack_sdk.web.async_client import AsyncWebClient
        from sqlalchemy import insert

        from core.llm import _json_schema
        from core.storage import tables as t
        from core.storage.db import make_engine
        from core.storage.store import Store

        self.formats = [{"type": "json_schema", "schema": _json_schema(s)} for s in self.schemas]
        self.model = anthropic.AsyncAnthropic(api_key="sk-ant-floor-not-a-secret", base_url=self.model_url,
                                              http_client=anthropic.DefaultAioHttpClient())
        self.session = aiohttp.ClientSession()
        self.slack = AsyncWebClient(token="xoxb-test", base_url=self.slack_url, session=self.session)
        self.folder = tempfile.TemporaryDirectory()
        self.made: tuple[str, str] | None = None
        if self.database.startswith("postgres"):
            self.made = await fresh_database(self.database)
            url = self.made[0]
        else:
            url = f"sqlite:///{Path(self.folder.name) / 'floor.db'}"
        self.store = Store(make_engine(url))  # the app's engine, and its connection (SQLite's inline one)
        async with self.store.engine.begin() as conn:
            await conn.run_sync(t.metadata.create_all)
        async with self.store.tx() as tx:
            await tx.conn.execute(insert(t.discussions), _seed(datetime.now(UTC)))
            await tx.conn.execute(insert(t.turns), _seed_turns(datetime.now(UTC)))
        self.mix = POSTGRES if self.made else SQLITE
        self.statement, self.plan = _statements(self.mix, self.calls)
        self.sql = _counted() if self.count_sql else Counter[str]()
        # Untimed: first-use caches, and the channels the app has joined before the load.
        for channel in self.channels:
            await self.slack.conversations_join(channel=channel)
        await asyncio.gather(*(self.ask(i) for i in range(13)))  # at once: each waits out the model's pace
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.model.close()
        await self.session.close()
        await self.store.close()
        await self.store.engine.dispose()
        if self.made is not None:
            await drop_database(self.database, self.made[1])
        self.folder.cleanup()

    async def transactions(self, i: int) -> None:
        """The call's 4 transactions, 12 statements, through the app's Store."""
        for transaction in self.plan[i]:
            async with self.store.tx() as tx:
                for kind, params in transaction:
                    result = await tx.conn.execute(self.statement[kind], params)
                    if kind in ("read", "turn"):
                        result.first()

    async def ask(self, i: int, slack: bool = False) -> None:
        """The model call: a streamed turn (its post and live edits with `slack`), or a structured answer
        validated against the app's schema."""
        request = prompt(i)
        if i % 13 < STREAMED:
            channel, ts = self.channels[i % len(self.channels)], ""
            if slack:
                ts = (await self.slack.chat_postMessage(channel=channel, **message(i, edit=False)))["ts"]
            edits = edits_of(i) if slack else 0
            every = max(1, REPLY_CHARS // DELTA_CHARS // (edits + 1))
            deltas = 0
            async for event in await self.model.messages.create(**request, stream=True):
                if event.type == "content_block_delta":
                    deltas += 1
                    if edits and deltas % every == 0:  # live text, as the turn streams
                        edits -= 1
                        await self.slack.chat_update(channel=channel, ts=ts, **message(i, edit=True))
            for _ in range(edits):  # what the stream ended before
                await self.slack.chat_update(channel=channel, ts=ts, **message(i, edit=True))
            return
        kind = (i // 13 * 2 + i % 13 - STREAMED) % len(self.schemas)
        request["output_config"] = {**request["output_config"], "format": self.formats[kind]}
        parts = []
        async for event in await self.model.messages.create(**request, stream=True):
            if event.type == "content_block_delta" and event.delta.type == "text_delta":
                parts.append(event.delta.text)
        self.schemas[kind].model_validate_json("".join(parts))

    async def slack_alone(self, i: int) -> None:
        if i % 13 >= STREAMED:
            return
        channel = self.channels[i % len(self.channels)]
        ts = (await self.slack.chat_postMessage(channel=channel, **message(i, edit=False)))["ts"]
        for _ in range(edits_of(i)):
            await self.slack.chat_update(channel=channel, ts=ts, **message(i, edit=True))

    async def call(self, i: int) -> None:
        """All three, as a model call of the load brings them."""
        await self.transactions(i)
        await self.ask(i, slack=True)


def run(model_url: str, slack_url: str, database: str, calls: int, lanes: int, count_sql: bool,
        part: str = "") -> tuple[float, Counter[str]]:
    """CPU ms a model call of the floor (or of one `part` alone), and the SQL it counted."""
    async def go() -> float:
        async with Floor(model_url, slack_url, database, calls, count_sql) as floor:
            one = {"": floor.call, "anthropic SDK": floor.ask, "slack_sdk": floor.slack_alone,
                   "SQLAlchemy": floor.transactions}[part]
            floor.sql.clear()
            used = await _lanes(calls, lanes, one)
            counted.update(floor.sql)
            return used

    counted: Counter[str] = Counter()
    return _on_the_apps_loop(go()) * 1000 / calls, counted


def main(calls: int, repeats: int, lanes: int | None, targets: dict[str, float], pin: bool = False,
         latency_s: float = MODEL_LATENCY_S, gap_s: float = DELTA_GAP_S, count_sql: bool = False,
         parts: bool = False) -> int:
    database = os.environ.get("DATABASE_URL", "")
    postgres = database.startswith("postgres")
    mix = POSTGRES if postgres else SQLITE
    lanes = lanes or LANES["postgresql" if postgres else "sqlite"]
    # --pin: the libraries' client on core 0, the fakes on core 1, as bench/load.py pins the app and its fakes.
    fakes_core = pinned(1) if pin else []
    if fakes_core:
        os.sched_setaffinity(0, {0})
    child = subprocess.Popen([*fakes_core, sys.executable, __file__, "--serve", str(latency_s), str(gap_s)],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    speedometer = subprocess.Popen([sys.executable, "-c", SPEEDOMETER], stdout=subprocess.PIPE, text=True)
    runs: list[float] = []
    alone: dict[str, list[float]] = {name: [] for name in PARTS}
    sql: Counter[str] = Counter()
    try:
        assert child.stdout is not None
        slack_url, model_url = child.stdout.readline().split()
        for _ in range(repeats):
            ms, sql = run(model_url, slack_url, database, calls, lanes, count_sql)
            runs.append(ms)
            for name in PARTS if parts else ():
                alone[name].append(run(model_url, slack_url, database, calls, lanes, count_sql, name)[0])
    finally:
        child.send_signal(signal.SIGTERM)
        child.wait()
        speedometer.terminate()
        speeds = [ms for _, ms in timings(speedometer.communicate()[0])]
    print(f"{calls} model calls, {lanes} at a time on one loop, {repeats} times; database "
          f"{'PG' if postgres else 'SQLite'}: {mix.selects} reads, {mix.updates} updates, {mix.inserts} inserts in "
          f"{mix.transactions} transactions a model call")
    print(f"a model call: {STREAMED} of 13 streamed turns, the rest structured answers of the app's schemas; the "
          f"model after {latency_s:g} s at a delta every {gap_s:g} s; Slack "
          f"{POSTS_A_TURN * STREAMED / 13:.2f} chat.postMessage and {EDITS:.2f} chat.update a model call")
    if count_sql:
        print(f"SQL counted as the app's is: {sql['statements'] / calls:.2f} statements, "
              f"{sql['transactions'] / calls:.2f} transactions a model call")
    for name, values in alone.items():
        if values:
            print(f"{name} alone: {statistics.median(values):.2f} ms a model call (median; runs "
                  f"{', '.join(f'{v:.2f}' for v in values)})")
    total = statistics.median(runs)
    speed = statistics.median(speeds) if speeds else float("nan")
    print(f"libraries alone: {total:.2f} ms a model call (median; runs {', '.join(f'{v:.2f}' for v in runs)}); this "
          f"machine: a fixed loop of plain Python took {speed:.0f} ms (median of {len(speeds)} timings), so the "
          f"floor is {total / speed:.3f} of it")
    return report([Figure("library_floor_share", total / speed, mix.max_share)], targets)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        asyncio.run(_serve(float(sys.argv[2]), float(sys.argv[3])))
        raise SystemExit(0)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1300, help="model calls timed in each run")
    parser.add_argument("--repeats", type=int, default=3, help="runs of the floor; the median counts")
    parser.add_argument("--lanes", type=int, default=0,
                        help="calls at a time (default: the load's discussions, 300 on SQLite, 100 on PostgreSQL)")
    parser.add_argument("--latency", type=float, default=MODEL_LATENCY_S, help="seconds before a reply's first event")
    parser.add_argument("--delta-gap", type=float, default=DELTA_GAP_S, help="seconds between a reply's deltas")
    parser.add_argument("--pin", action="store_true", help="run on core 0 and the fakes on core 1 (taskset)")
    parser.add_argument("--count-sql", action="store_true", help="run the SQL under bench/load.py --count-sql's "
                        "listeners, as the app's then is")
    parser.add_argument("--parts", action="store_true", help="also time each library alone (informative)")
    add_target_flag(parser)
    args = parser.parse_args()
    raise SystemExit(main(args.calls, args.repeats, args.lanes or None, overrides(args.target), args.pin,
                          args.latency, args.delta_gap, args.count_sql, args.parts))
