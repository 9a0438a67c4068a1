"""Kill -9 `python -m bot slack` mid-step again and again on one SQLite file (fake Web API, fake Messages API with a
latency), restart it each time, and measure how soon after readiness the discussion moves again.

Shared by tests/e2e/test_slack_kills.py and bench/crash_recovery.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signing import free_port, sign

# A turn's status read from the database file as the store reads it: a done turn whose post went out is published.
POSTED = ("CASE WHEN status = 'done' AND EXISTS (SELECT 1 FROM outbox WHERE outbox.turn_key = turns.key AND "
          "outbox.sent) THEN 'published' ELSE status END")

SECRET = "kills-signing-secret"
POSTS = ("chat.postMessage", "chat.update")


@dataclass
class Outcome:
    resume_s: list[float] = field(default_factory=list)  # per restart: readiness until the next post or edit
    killed_in_flight: int = 0  # kills that landed while a model call was in flight
    status: str = ""
    unsent: int = -1
    turns: list[tuple[str, str]] = field(default_factory=list)  # (key, status)
    duplicates: list[str] = field(default_factory=list)  # post keys delivered as more than one message
    half_written: list[str] = field(default_factory=list)  # texts of messages left "thinking…" or "writing…"
    log_tail: str = ""
    term_s: float = -1.0  # SIGTERM mid-step until the process exited (stop_once)
    lease_after_term: str | None = "not stopped"  # the discussion's lease owner once it exited


async def _until(check: object, within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while not await check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


async def _finish_here(env: dict[str, str], finished: Callable[[], Awaitable[bool]]) -> None:
    """`python -m bot slack`'s app, built from the same environment in this process, until `finished`."""
    from adapters.slack.server import SlackServer
    from bot.runtime import slack_config
    from bot.settings import Settings
    from bot.wiring import build_app

    # The settings the processes read from the same environment (a port of its own: the last process's is closing).
    given = {k.lower(): v for k, v in env.items() if k.lower() in Settings.model_fields}
    settings = Settings(_env_file=None, **given | {"port": free_port()})  # type: ignore[arg-type]
    server = SlackServer(slack_config(settings), lambda chats: build_app(settings, chats, scheduler=True))
    await server.start()
    try:
        await _until(finished, 180, "the discussion to finish")
    finally:
        await server.stop()


async def run(folder: Path, *, kills: int, latency_s: float = 0.5, rounds: int = 1, stop_once: bool = False,
              time_scale: float = 1.0) -> Outcome:
    """`time_scale`: Slack's rate limits run this many times faster in the fake and in the app alike (a test spends
    its seconds on restarts, not on the one-post-a-second pacing a real channel would impose)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    db = folder / "council.db"
    out = Outcome()
    # Each takeover reads the thread once (the dead driver's thinking placeholders): the app is a workspace's own, the
    # shipped default, whose reads Slack does not limit to one a minute (in the fake as in the app).
    async with FakeSlack(tokens={"xoxb-kills": "T0001"}, time_scale=time_scale) as slack, \
            FakeAnthropic(latency_s=latency_s) as model, aiohttp.ClientSession() as http:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLACK_", "COUNCIL_", "DATABASE_URL", "ANTHROPIC_"))}
        env |= {"PORT": str(port), "DATABASE_URL": f"sqlite:///{db}", "SLACK_API_URL": slack.base_url,
                "SLACK_BOT_TOKEN": "xoxb-kills", "SLACK_SIGNING_SECRET": SECRET,
                "ANTHROPIC_API_KEY": "sk-ant-kills-not-a-secret", "ANTHROPIC_BASE_URL": model.base_url,
                "COUNCIL_LOG_LEVEL": "WARNING", "SLACK_TIME_SCALE": str(time_scale)}
        log_path = folder / "app.log"

        async def start() -> tuple[asyncio.subprocess.Process, float]:
            with log_path.open("ab") as log:
                proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "slack", cwd=folder, env=env,
                                                            stdout=log, stderr=log)

            async def healthy() -> bool:
                try:
                    async with http.get(f"{base}/healthz") as resp:
                        return resp.status == 200
                except aiohttp.ClientError:
                    return False

            await _until(healthy, 60, "/healthz")
            return proc, time.monotonic()

        def posted() -> int:
            return sum(len(slack.called(m)) for m in POSTS)

        def in_flight() -> bool:
            return model.request_count > model.completed_count

        proc, _ = await start()
        try:
            topic = f"Should we adopt trunk-based development? --rounds {rounds}"
            body = urlencode({"command": "/council", "text": topic,
                              "team_id": "T0001", "channel_id": "C0001", "user_id": "U0001", "user_name": "dana",
                              "trigger_id": "1.2.3", "response_url": f"http://{slack.host}:{slack.port}/response/k"})
            headers = {**sign(body, SECRET), "Content-Type": "application/x-www-form-urlencoded"}
            async with http.post(f"{base}/slack/events", data=body.encode(), headers=headers) as resp:
                assert resp.status == 200

            for _ in range(kills):
                requests_before = model.request_count

                async def mid_step(since: int = requests_before) -> bool:
                    return model.request_count > since and in_flight()

                await _until(mid_step, 60, "a model call in flight")
                out.killed_in_flight += in_flight()
                os.kill(proc.pid, signal.SIGKILL)
                await proc.wait()
                seen = posted()
                proc, ready_at = await start()

                async def moved(seen: int = seen) -> bool:
                    return posted() > seen

                await _until(moved, 60, "a post after the restart")
                first = sorted(c.at for m in POSTS for c in slack.called(m))[seen]
                out.resume_s.append(max(0.0, first - ready_at))

            async def finished() -> bool:
                with sqlite3.connect(db, timeout=5) as conn:
                    row = conn.execute("SELECT status FROM discussions").fetchone()
                    unsent = conn.execute("SELECT count(*) FROM outbox WHERE NOT sent").fetchone()[0]
                return bool(row) and row[0] == "done" and unsent == 0

            if stop_once:  # a graceful stop mid-step: the process gives its lease back before it exits
                requests_before = model.request_count

                async def mid_step_again(since: int = requests_before) -> bool:
                    return model.request_count > since and in_flight()

                await _until(mid_step_again, 60, "a model call in flight")
                stopped_at = time.monotonic()
                proc.terminate()
                await proc.wait()
                out.term_s = time.monotonic() - stopped_at
                with sqlite3.connect(db, timeout=5) as conn:
                    out.lease_after_term = conn.execute("SELECT lease_owner FROM discussions").fetchone()[0]
                # The same app, started in this process, finishes the discussion: each process restart is measured
                # above, and one more would only pay an interpreter's imports again.
                await _finish_here(env, finished)
            else:
                await _until(finished, 180, "the discussion to finish")
        finally:
            if proc.returncode is None:  # the last one may have been stopped already
                proc.terminate()
            await proc.wait()
        with sqlite3.connect(db) as conn:
            out.status = conn.execute("SELECT status FROM discussions").fetchone()[0]
            out.unsent = conn.execute("SELECT count(*) FROM outbox WHERE NOT sent").fetchone()[0]
            out.turns = conn.execute(f"SELECT key, {POSTED} FROM turns").fetchall()
        # Every message in the channel carries the key of the post it shows; a key on two messages is a duplicate.
        keys: Counter[str] = Counter(
            json.dumps(msg.metadata, sort_keys=True) for msg in slack.messages if msg.metadata
        )
        out.duplicates = [k for k, n in keys.items() if n > 1]
        out.half_written = [m.text for m in slack.messages if m.text.endswith(("is thinking…", "is writing…"))]
        out.log_tail = log_path.read_text(errors="replace")[-3000:]
    return out
