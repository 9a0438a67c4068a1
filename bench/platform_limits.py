"""K discussions at once in one Slack workspace through the strict fake Web API (Slack's documented rate limits,
sped up `--scale` times in the fake and in the app alike), with a slow model so live text wants many edits.

Prints how many finished, how many were ever blocked, the 429s Slack answered per method ÷ the calls made, and the
share of the chat.update budget left after final work that live edits used. Targets: all finish, 0 blocked,
429s ≤ 1% of calls, live edits ≥ 70% of the leftover budget; exits 1 on a miss. `--replicas N` runs N processes
on PostgreSQL (DATABASE_URL: a fresh database is made on that server and dropped afterwards)."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import create_async_engine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.streaming import long_reply  # noqa: E402
from core.storage.db import normalize_url  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import FakeSlack  # noqa: E402
from tests.fakes.slack_signing import free_port, sign  # noqa: E402

SECRET = "platform-limits-signing-secret"
TIER3_PER_MINUTE = 50  # chat.update, per app and workspace
TOPICS = ["adopt trunk-based development", "move to a four-day week", "standardise on one cloud",
          "sunset the legacy mobile app", "hire a platform team", "rewrite the billing service in Rust"]


async def fresh_database(url: str) -> tuple[str, str]:
    """A new database on the server DATABASE_URL names (never the shared one itself); (its URL, its name)."""
    admin_url = normalize_url(url)
    name = f"council_bench_{secrets.token_hex(5)}"
    admin = create_async_engine(admin_url, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    await admin.dispose()
    return make_url(admin_url).set(database=name).render_as_string(hide_password=False), name


async def drop_database(url: str, name: str) -> None:
    admin = create_async_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    await admin.dispose()


QUERY = "SELECT id, status FROM discussions"


def read_sqlite(path: str) -> dict[str, str]:
    """Read-only, beside the app that writes the file (a quick read; the app waits on nothing)."""
    if not Path(path).exists():
        return {}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5) as conn:
        try:
            return {i: s for i, s in conn.execute(QUERY)}
        except sqlite3.OperationalError:  # not migrated yet
            return {}


class Statuses:
    """The discussions' statuses, read from the database the replicas share."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = None if url.startswith("sqlite") else create_async_engine(normalize_url(url))

    async def read(self) -> dict[str, str]:
        if self.engine is None:
            return read_sqlite(make_url(self.url).database or "")
        async with self.engine.connect() as conn:
            return {i: s for i, s in (await conn.execute(text(QUERY))).all()}

    async def close(self) -> None:
        if self.engine is not None:
            await self.engine.dispose()


async def healthy(http: aiohttp.ClientSession, base: str, proc: asyncio.subprocess.Process) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            raise RuntimeError(f"the app at {base} exited with {proc.returncode}")
        try:
            async with http.get(f"{base}/healthz") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the app at {base} did not become healthy within 90 s")


def live_edit(params: dict[str, Any]) -> bool:
    """A chat.update of live text: a placeholder (its metadata) growing with the words written so far."""
    meta = params.get("metadata") or {}
    return meta.get("event_type") == "council_thinking" and "is writing" in str(params.get("text", ""))


async def run(k: int, replicas: int, scale: float, within_s: float, gap_s: float, chars: int) -> int:
    database = os.environ.get("DATABASE_URL", "")
    if replicas > 1 and not database.startswith("postgres"):
        print("--replicas needs DATABASE_URL=postgresql://… (the replicas share one database)", file=sys.stderr)
        return 2
    made: tuple[str, str] | None = None
    folder = tempfile.TemporaryDirectory()
    if database.startswith("postgres"):
        made = await fresh_database(database)
        url = made[0]
    else:
        url = f"sqlite:///{Path(folder.name) / 'council.db'}"
    statuses = Statuses(url)
    procs: list[asyncio.subprocess.Process] = []
    logs = []
    try:
        async with FakeSlack(tokens={"xoxb-bench": "T0001"}, time_scale=scale) as slack, \
                FakeAnthropic(latency_s=0.3, delta_gap_s=gap_s, chunk_chars=24, reply=long_reply(chars)) as model, \
                aiohttp.ClientSession() as http:
            channels = [f"C{i:04d}" for i in range(k)]
            for i, channel in enumerate(channels):
                slack.add_channel(channel, member=True)
                slack.add_user(f"U{i:04d}", f"Starter {i}")
            env = {key: v for key, v in os.environ.items() if not key.startswith(("SLACK_", "COUNCIL_", "ANTHROPIC_"))}
            env |= {"DATABASE_URL": url, "SLACK_API_URL": slack.base_url, "SLACK_BOT_TOKEN": "xoxb-bench",
                    "SLACK_SIGNING_SECRET": SECRET, "SLACK_TIME_SCALE": str(scale),
                    "ANTHROPIC_API_KEY": "sk-ant-bench-not-a-secret", "ANTHROPIC_BASE_URL": model.base_url,
                    "COUNCIL_LOG_LEVEL": "WARNING", "COUNCIL_BUDGET_USD": "1000",
                    "COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY": "0", "COUNCIL_STARTS_PER_USER_PER_HOUR": "0"}
            bases = []
            for r in range(replicas):
                port = free_port()
                log = (Path(folder.name) / f"replica-{r}.log").open("wb")
                logs.append(log)
                procs.append(await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "bot", "slack", cwd=str(ROOT), env={**env, "PORT": str(port)},
                    stdout=log, stderr=log))
                bases.append(f"http://127.0.0.1:{port}")
                await healthy(http, bases[-1], procs[-1])  # one at a time: they migrate under a lock anyway

            began = time.monotonic()
            for i, channel in enumerate(channels):
                body = urlencode({"command": "/council", "text": f"Should we {TOPICS[i % len(TOPICS)]}? --rounds 1",
                                  "team_id": "T0001", "channel_id": channel, "user_id": f"U{i:04d}",
                                  "user_name": f"starter-{i}", "trigger_id": slack.trigger(),
                                  "response_url": f"http://127.0.0.1:{slack.port}/response/{i}"})
                headers = {**sign(body, SECRET), "Content-Type": "application/x-www-form-urlencoded"}
                async with http.post(f"{bases[i % replicas]}/slack/events", data=body.encode(),
                                     headers=headers) as resp:
                    assert resp.status == 200, resp.status
            seen: dict[str, str] = {}
            while time.monotonic() - began < within_s:
                seen = await statuses.read()
                if len(seen) == k and all(s in ("done", "stopped") for s in seen.values()):
                    break
                await asyncio.sleep(1.0)
            wall = time.monotonic() - began
            await asyncio.sleep(0.5)  # the last edits land
            for proc in procs:
                proc.terminate()
            await asyncio.gather(*(proc.wait() for proc in procs))
            calls = list(slack.calls)
            answered = dict(slack.answered_429)
            dms = [m for m in slack.messages if m.channel.startswith("D")]
            blocked_notices = {m.channel for m in slack.messages if '"fail:retry"' in str(m.blocks).replace("'", '"')}
    finally:
        for log in logs:
            log.close()
        seen = await statuses.read()
        await statuses.close()
        if made is not None:
            await drop_database(database, made[1])

    finished = sum(1 for s in seen.values() if s == "done")
    blocked = len({*blocked_notices, *(i for i, s in seen.items() if s == "blocked")}) + len(dms)
    by_method: dict[str, int] = {}
    for c in calls:
        by_method[c.method] = by_method.get(c.method, 0) + 1
    updates = [c for c in calls if c.method == "chat.update"]
    live = [c for c in updates if live_edit(c.params) and not c.limited]  # edits Slack took
    worst = 0.0
    print(f"{k} discussions in one workspace, {replicas} replica(s) on {'PostgreSQL' if made else 'SQLite'}, "
          f"Slack's limits {scale:g}× faster; {wall:.0f} s ({wall * scale / 60:.1f} Slack minutes)")
    print(f"finished: {finished} of {k}")
    print(f"discussions blocked: {blocked}")
    print("429s answered / calls made, per method:")
    for method in sorted(by_method):
        share = answered.get(method, 0) / by_method[method]
        worst = max(worst, share)
        print(f"  {method:32s} {answered.get(method, 0):4d} / {by_method[method]:5d} = {share:.2%}")
    share_used = 0.0
    if live:
        start, end = min(c.at for c in live), max(c.at for c in live)
        minutes = (end - start) * scale / 60
        finals = sum(1 for c in updates if not live_edit(c.params) and not c.limited and start <= c.at <= end)
        budget = TIER3_PER_MINUTE * minutes
        leftover = max(budget - finals, 1.0)
        share_used = len(live) / leftover
        print(f"chat.update while live text ran ({minutes:.1f} Slack minutes): budget {budget:.0f}, final work "
              f"{finals}, leftover {leftover:.0f}, live edits {len(live)}")
    print(f"share of the leftover chat.update budget used by live edits: {share_used:.0%}")
    misses = [name for name, bad in (("not all finished", finished < k), ("some blocked", blocked > 0),
                                     ("429s above 1% of calls", worst > 0.01),
                                     ("live edits below 70% of the leftover", share_used < 0.70)) if bad]
    print("targets met" if not misses else "missed: " + ", ".join(misses))
    folder.cleanup()
    return 1 if misses else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", type=int, default=6, help="discussions at once")
    parser.add_argument("--replicas", type=int, default=1, help="app processes (more than 1 needs PostgreSQL)")
    parser.add_argument("--scale", type=float, default=10.0, help="Slack's rate limits run this much faster")
    parser.add_argument("--within", type=float, default=300.0, help="give up after this many seconds")
    parser.add_argument("--gap", type=float, default=0.04, help="seconds between the model's streamed chunks")
    parser.add_argument("--chars", type=int, default=1500, help="characters of each persona turn")
    args = parser.parse_args()
    raise SystemExit(asyncio.run(run(args.k, args.replicas, args.scale, args.within, args.gap, args.chars)))
