"""N discussions at once in one Slack workspace, one channel each, through the strict fake Web API (Slack's
documented rate limits, sped up `--scale` times in the fake and in the app alike), with a model that writes
slowly so live text wants many edits (a turn of 1,500 characters in about 2.5 s: 10 Slack seconds at `--scale 4`).

Prints how many finished, how many were ever blocked, the 429s Slack answered per method ÷ the calls made, the
share of the app's chat.update budget over the round left after final work that live edits used, and the time
Slack's published limits allow for the posts the round needs: the messages left in the channels (new messages:
one a second per channel, and POSTS_PER_MINUTE a minute per workspace, an assumption: Slack says "several hundred")
and the edits of posts (chat.update: 50 a minute per workspace; a placeholder's edit into its post is not needed,
since a new message would do, nor live text). Round 1, from the first command to the last post or edit of a
post, is judged against that bound (which counts no model time: it means something where Slack's limits, not the
model, make the round's time, as with 100 discussions). Targets: all finish, 0 blocked, 429s ≤ 1% of any method's
calls, live edits ≥ 70% of the leftover budget (judged only where final work leaves at least LEFTOVER_MIN of it: a
workspace whose edits of posts take it all has none for live text, by design), round 1 ≤ 1.3× the bound, and no 429
at all; exits 1 on a miss. `--replicas N` runs N processes on PostgreSQL (DATABASE_URL: a fresh database is made
on that server and dropped afterwards)."""

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
from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from core.running.budget import SHARE  # noqa: E402
from core.storage.db import normalize_url  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tests.fakes.slack_api import Call, FakeSlack, Msg  # noqa: E402
from tests.fakes.slack_limits import POSTS_PER_MINUTE, POSTS_PER_S, TIER  # noqa: E402
from tests.fakes.slack_signing import free_port, sign  # noqa: E402

SECRET = "platform-limits-signing-secret"
TIER3_PER_MINUTE = TIER[3]  # chat.update, per app and workspace
THINKING = "council_thinking"  # a placeholder's metadata: a turn being written
LEFTOVER_MIN = 0.1  # of the app's chat.update budget over the round: less leaves live text nothing to judge
QUIET_S = 3.0  # after every discussion is done, the round's last posts have landed once Slack hears none for this
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
    return meta.get("event_type") == THINKING and "is writing" in str(params.get("text", ""))


def needed_edit(call: Call, by_ts: dict[str, Msg]) -> bool:
    """An edit the round needs: of a post (a header redrawn, a poll closed), not of a placeholder (its edit into
    its post could have been a new message) nor of one since removed."""
    m = by_ts.get(str(call.params.get("ts") or ""))
    return m is not None and (m.posted_metadata or {}).get("event_type") != THINKING


def bound_s(messages: list[Msg], edits: int) -> tuple[float, dict[str, float]]:
    """Slack seconds its published limits allow for these messages (one new message each) and edits of posts:
    the slowest of the busiest channel's pace, the workspace's allowance of new messages, and chat.update's."""
    per_channel: dict[str, int] = {}
    for m in messages:
        per_channel[m.channel] = per_channel.get(m.channel, 0) + 1
    parts = {"busiest channel": max(per_channel.values(), default=0) / POSTS_PER_S,
             "new messages in the workspace": len(messages) * 60 / POSTS_PER_MINUTE,
             "chat.update in the workspace": edits * 60 / TIER3_PER_MINUTE}
    return max(parts.values()), parts


async def run(k: int, replicas: int, scale: float, within_s: float, gap_s: float, chars: int,
              targets: dict[str, float]) -> int:
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
                    "COUNCIL_WORKSPACE_BUDGET_USD_PER_DAY": "0", "COUNCIL_PROCESS_DAILY_USD": "0",
                    "COUNCIL_STARTS_PER_USER_PER_HOUR": "0"}
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
            done_at = time.monotonic()
            while time.monotonic() - began < within_s:  # the posts still going out after the last step
                quiet = time.monotonic() - (slack.calls[-1].at if slack.calls else 0.0)
                if quiet >= QUIET_S:
                    break
                await asyncio.sleep(QUIET_S - quiet)
            for proc in procs:
                proc.terminate()
            await asyncio.gather(*(proc.wait() for proc in procs))
            calls = list(slack.calls)
            answered = dict(slack.answered_429)
            shown = [m for m in slack.messages if m.channel in channels]
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
    landed = [c.at for c in calls if c.method in ("chat.postMessage", "chat.update") and not c.limited
              and not live_edit(c.params) and c.params.get("channel") in channels]
    round_s = (max([done_at, *landed]) - began) * scale  # Slack seconds
    by_ts = {m.ts: m for m in shown}
    edits = sum(1 for c in updates if not c.limited and needed_edit(c, by_ts))
    bound, parts = bound_s(shown, edits)
    worst = 0.0
    print(f"{k} discussions in one workspace, {replicas} replica(s) on {'PostgreSQL' if made else 'SQLite'}, "
          f"Slack's limits {scale:g}× faster")
    print(f"finished: {finished} of {k}")
    print(f"discussions blocked: {blocked}")
    print("429s answered / calls made, per method:")
    for method in sorted(by_method):
        share = answered.get(method, 0) / by_method[method]
        worst = max(worst, share)
        print(f"  {method:32s} {answered.get(method, 0):4d} / {by_method[method]:5d} = {share:.2%}")
    # Over the round: the chat.update calls the app allows itself (its share of Slack's limit), and what final work
    # (edits of posts and placeholders) left of them for live text.
    minutes = round_s / 60
    finals = sum(1 for c in updates if not live_edit(c.params) and not c.limited)
    budget = SHARE * TIER3_PER_MINUTE * minutes
    leftover = max(budget - finals, 1.0)
    share_used = len(live) / leftover
    print(f"chat.update over round 1 ({minutes:.1f} Slack minutes): the app's budget {budget:.0f}, final work "
          f"{finals}, leftover {leftover:.0f}, live edits {len(live)}")
    judge_live = leftover >= LEFTOVER_MIN * budget
    if not judge_live:
        print(f"live text not judged: final work took all but {leftover / budget:.0%} of the app's chat.update "
              f"budget (under {LEFTOVER_MIN:.0%}), so none was left for it")
    print(f"the round's posts: {len(shown)} messages in {len({m.channel for m in shown})} channels, {edits} edits of "
          f"posts; Slack's limits allow them in {bound:.0f} Slack seconds ("
          + ", ".join(f"{name}: {value:.0f} s" for name, value in parts.items())
          + f"; new messages assumed {POSTS_PER_MINUTE} a minute per workspace)")
    print(f"round 1: {round_s:.0f} Slack seconds ({round_s / scale:.1f} s here)")
    folder.cleanup()
    return report([
        Figure("unfinished", k - finished, 0),
        Figure("blocked", blocked, 0),
        Figure("share_429", worst, 0.01),
        Figure("slack_429s", sum(answered.values()), 0),  # Slack's limits are kept, not found by hitting them
        *([Figure("live_share", share_used, 0.70, at_most=False)] if judge_live else []),
        Figure("round_vs_bound", round_s / bound if bound else float("nan"), 1.3),
    ], targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--discussions", "-k", type=int, default=100, dest="k", help="discussions at once")
    parser.add_argument("--replicas", type=int, default=1, help="app processes (more than 1 needs PostgreSQL)")
    parser.add_argument("--scale", type=float, default=4.0, help="Slack's rate limits run this much faster")
    parser.add_argument("--within", type=float, default=300.0, help="give up after this many seconds")
    parser.add_argument("--gap", type=float, default=0.04, help="seconds between the model's streamed chunks")
    parser.add_argument("--chars", type=int, default=1500, help="characters of each persona turn")
    add_target_flag(parser)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(run(args.k, args.replicas, args.scale, args.within, args.gap, args.chars,
                                     overrides(args.target))))
