"""A replica process for multi-process tests and the bench: the real app on a shared database, offline model,
and a chat that appends every post to one JSON-lines file all replicas share (and finds posts in it again).

Run: python -m tests.fakes.replica OWNER LOG_PATH [--start TOPIC] — settings come from the environment
(DATABASE_URL, COUNCIL_LEASE_TTL_S, ...). Events (ready, leader, started) go to stdout as JSON lines.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from core.models import Discussion, Persona, Post


class LoggedChat:
    """A ChatPort whose posts are appended, one write() each, to a file shared by every replica."""

    def __init__(self, path: Path, owner: str) -> None:
        self.path, self.owner = path, owner
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._count = 0

    def _write(self, **record: Any) -> str:
        self._count += 1
        ref = f"{self.owner}:{self._count}"
        line = json.dumps({"owner": self.owner, "ref": ref, "t": time.time(), **record}) + "\n"
        os.write(self._fd, line.encode())  # O_APPEND: a whole line lands at the end, even across processes
        return ref

    def _find(self, op: str, where: str, key: str) -> str | None:
        for record in read_log(self.path):
            if record["op"] == op and record["where"] == where and record["key"] == key:
                return str(record["ref"])
        return None

    async def publish(self, discussion: Discussion, post: Post) -> str:
        return self._write(op="publish", where=discussion.id, key=post.key, kind=post.kind)

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        self._write(op="update", where=discussion.id, key=post.key, kind=post.kind, target=ref)

    async def find(self, discussion: Discussion, key: str) -> str | None:
        return self._find("publish", discussion.id, key)

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        return None

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        return None  # the log records what was posted; live text is not a post

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        return self._write(op="announce", where=channel, key=post.key, kind=post.kind, text=post.text)

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        return self._find("announce", channel, key)

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        self._write(op="tell", where=user_id, key=post.key, kind=post.kind, text=post.text)

    async def link(self, discussion: Discussion) -> str:
        return f"https://chat.invalid/{discussion.id}"


def read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def emit(event: str, **data: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, "t": time.time(), **data}) + "\n")
    sys.stdout.flush()


async def serve(owner: str, log_path: Path, topic: str, rounds: int) -> None:
    from bot.settings import Settings
    from bot.wiring import build_app
    from core.control import commands as c

    settings = Settings()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s {owner} %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.WARNING)
    app = await build_app(settings, {"console": LoggedChat(log_path, owner)}, owner=owner, scheduler=True)
    assert app.scheduler is not None
    stopping = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, stopping.set)
    emit("ready", owner=owner, pid=os.getpid())
    if topic:
        reply = await app.service.handle(c.StartDiscussion(topic=topic, channel="C-main", user_id="U1",
                                                           user_name="Dana", rounds=rounds))
        emit("started", id=reply.discussion_id)

    async def watch_leadership() -> None:
        leading = False
        while True:
            if app.scheduler is not None and app.scheduler.is_leader != leading:
                leading = not leading
                emit("leader" if leading else "follower", owner=owner)
            await asyncio.sleep(0.05)

    async def sweep() -> None:
        while True:
            with contextlib.suppress(Exception):
                await app.driver.sweep()
            await asyncio.sleep(settings.sweep_interval_s)

    tasks = [asyncio.create_task(watch_leadership()), asyncio.create_task(sweep())]
    await stopping.wait()
    for task in tasks:
        task.cancel()
    await app.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("owner")
    parser.add_argument("log", type=Path)
    parser.add_argument("--start", default="", help="start a discussion on this topic (this replica drives it)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(serve(args.owner, args.log, args.start, args.rounds))


if __name__ == "__main__":
    main()
