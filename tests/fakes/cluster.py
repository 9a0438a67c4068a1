"""Two replica processes on one PostgreSQL database: schedules due in a window, a discussion in flight, and a
kill -9 of the replica that leads and drives. Shared by tests/core/running/test_replicas_pg.py and bench/replicas.py."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from core.models import Schedule, Status
from core.storage.db import make_engine, migrate
from core.storage.store import Store
from tests.fakes.replica import read_log

ROOT = Path(__file__).resolve().parents[2]


class Replica:
    """One `python -m tests.fakes.replica` process and the events it prints."""

    def __init__(self, owner: str, proc: asyncio.subprocess.Process) -> None:
        self.owner, self.proc = owner, proc
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, owner: str, log: Path, env: dict[str, str], workdir: Path, topic: str = "",
                    rounds: int = 3) -> Replica:
        args = [sys.executable, "-m", "tests.fakes.replica", owner, str(log)]
        args += ["--start", topic, "--rounds", str(rounds)] if topic else []
        stderr = (workdir / f"replica-{owner}.log").open("ab")
        proc = await asyncio.create_subprocess_exec(*args, cwd=ROOT, env=env, stdout=asyncio.subprocess.PIPE,
                                                    stderr=stderr)
        stderr.close()
        return cls(owner, proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for line in self.proc.stdout:
            self.events.append(json.loads(line))

    async def wait(self, event: str, within_s: float = 30.0) -> dict[str, Any]:
        await until(lambda: any(e["event"] == event for e in self.events), within_s, f"{self.owner}: {event}")
        return next(e for e in self.events if e["event"] == event)

    def kill(self) -> float:
        os.kill(self.proc.pid, signal.SIGKILL)
        return time.time()

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 20)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        self._reader.cancel()


async def until(condition: Any, within_s: float, what: str = "condition") -> None:
    deadline = time.monotonic() + within_s
    while not (await condition() if asyncio.iscoroutinefunction(condition) else condition()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@dataclass
class Outcome:
    duplicates: int  # posts (thread or channel) delivered more than once, counted beyond the first
    misses: int  # schedules whose slot never produced its digest
    leader_takeover_s: float  # kill -9 of the leader until the survivor leads
    driver_takeover_s: float  # kill -9 of the driver until the survivor posts in the discussion
    status: str  # the discussion's final status
    digest_rows: int
    posts_by_owner: dict[str, int] = field(default_factory=dict)
    turns: int = 0


def replica_env(url: str, lease_ttl: float | None) -> dict[str, str]:
    """`lease_ttl=None` keeps the shipped lease and sweep defaults (what an operator runs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COUNCIL_", "ANTHROPIC_", "DATABASE_URL"))}
    if lease_ttl is not None:
        env |= {"COUNCIL_LEASE_TTL_S": str(lease_ttl), "COUNCIL_SWEEP_INTERVAL_S": "0.5"}
    return env | {
        "DATABASE_URL": url, "COUNCIL_SCHEDULE_RELOAD_S": "1", "COUNCIL_LEADER_RETRY_S": "1",
        "COUNCIL_OFFLINE_DELAY_S": "0.5", "PYTHONPATH": str(ROOT),
    }


async def run(url: str, workdir: Path, *, schedules: int = 50, window_s: float = 6.0, lease_ttl: float | None = 3.0,
              within_s: float = 90.0, rounds: int = 3) -> Outcome:
    """A leads and drives; 50 one-shot digests fall due over the window; A is killed halfway; B finishes.

    `rounds`: the discussion's length; it must outlast the window, for A to be killed while it drives."""
    log = workdir / "posts.jsonl"
    env = replica_env(url, lease_ttl)
    engine = make_engine(url)
    await migrate(engine)
    store = Store(engine)
    a = b = None
    try:
        a = await Replica.start("A", log, env, workdir, topic="Should we move to trunk-based development?",
                                rounds=rounds)
        await a.wait("leader")
        did = (await a.wait("started"))["id"]

        async def a_drives() -> bool:
            async with store.tx() as tx:
                return (await tx.lease_owner(did))[0] == "A"

        await until(a_drives, 30, "A to drive the discussion")
        b = await Replica.start("B", log, env, workdir)
        await b.wait("ready")
        first = datetime.now(UTC) + timedelta(seconds=2)
        ids = []
        async with store.tx() as tx:
            for i in range(schedules):
                slot = first + timedelta(seconds=window_s * i / schedules)
                s = await tx.upsert_schedule(Schedule(kind="digest", target=f"bench-{i:02d}", trigger=f"at:{slot}",
                                                      next_run_at=slot), datetime.now(UTC))
                ids.append(s.id)

        def announced() -> Counter[str]:
            return Counter(r["key"].split(":")[1] for r in read_log(log) if r["op"] == "announce")

        def a_posts() -> int:
            return sum(1 for r in read_log(log) if r["op"] == "publish" and r["owner"] == "A" and r["where"] == did)

        await until(lambda: len(announced()) >= schedules // 2 and a_posts() >= 6, within_s, "half the digests")
        killed_at = a.kill()
        await a.proc.wait()

        async def finished() -> bool:
            async with store.tx() as tx:
                d = await tx.discussion(did)
                pending = await tx.pending_posts(did)
            return len(announced()) >= schedules and d is not None and d.status == Status.DONE and not pending

        try:
            await until(finished, within_s, "B to finish")
        except TimeoutError:
            pass  # reported as misses or a status other than done
        await b.stop()
        records = read_log(log)
        async with store.tx() as tx:
            d = await tx.discussion(did)
            digest_rows = [r for r in await tx.digests() if r["sent"]]
            turns = await tx.turns(did)
        posted = Counter((r["where"], r["key"]) for r in records if r["op"] in ("publish", "announce"))
        leader_at = next((e["t"] for e in b.events if e["event"] == "leader"), float("nan"))
        b_post = min((r["t"] for r in records if r["owner"] == "B" and r["where"] == did), default=float("nan"))
        return Outcome(
            duplicates=sum(n - 1 for n in posted.values()),
            misses=sum(1 for i in ids if str(i) not in announced()),
            leader_takeover_s=leader_at - killed_at,
            driver_takeover_s=b_post - killed_at,
            status=d.status.value if d else "missing",
            digest_rows=len(digest_rows),
            posts_by_owner=dict(Counter(r["owner"] for r in records if r["op"] == "publish" and r["where"] == did)),
            turns=len(turns),
        )
    finally:
        for replica in (a, b):
            if replica is not None:
                await replica.stop()
        await store.close()
