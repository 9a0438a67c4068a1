"""What an open page costs the server while it follows a discussion: a poll that finds nothing new (304) against
the page rendered again, CPU of this process in the same run, and the SQL statements of one such poll.

    python bench/live_page.py [--polls 300] [--pages 60] [--target NAME=VALUE]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import event

from adapters.web.page import Pages, application
from bench.verdict import Figure, add_target_flag, overrides, report
from bot.settings import Settings
from bot.wiring import build_app, page_links
from core.control import commands as c
from core.ports import SystemClock
from core.showing.pages import PageLinks


async def measure(polls: int, pages_n: int, folder: Path) -> list[Figure]:
    from tests.fakes.chat import RecordingChat
    from tests.fakes.llm import ScriptedLLM

    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{folder / 'council.db'}",  # type: ignore[call-arg]
                        council_public_url="https://council.example.test",
                        council_web_secret="web-secret-for-the-bench-at-least-32-bytes")
    app = await build_app(settings, {"console": RecordingChat("console")}, llm=ScriptedLLM())
    try:
        did = (await app.service.handle(c.StartDiscussion(topic="Move to a monorepo?", platform="console",
                                                          channel="C1", user_id="U1"))).discussion_id
        await app.driver.idle()  # a whole round: every turn, its synthesis and its poll on the page
        links: PageLinks = page_links(settings)
        parts = urlsplit(links.url(did, SystemClock().now()))
        live = f"{parts.path}/live?{parts.query}"
        statements = 0

        def count(*_: Any) -> None:
            nonlocal statements
            statements += 1

        async with TestClient(TestServer(application(Pages(links, SystemClock(), app.store)))) as client:
            first = await client.get(live)
            etag, size = first.headers["ETag"], len(await first.read())
            for _ in range(20):  # warm both paths
                await client.get(live, headers={"If-None-Match": etag})
                await client.get(live)
            started = time.process_time()
            for _ in range(polls):
                resp = await client.get(live, headers={"If-None-Match": etag})
                assert resp.status == 304
            unchanged = (time.process_time() - started) / polls
            started = time.process_time()
            for _ in range(pages_n):
                resp = await client.get(live)
                assert resp.status == 200
                await resp.read()
            full = (time.process_time() - started) / pages_n
            event.listen(app.store.engine.sync_engine, "before_cursor_execute", count)
            await client.get(live, headers={"If-None-Match": etag})
            event.remove(app.store.engine.sync_engine, "before_cursor_execute", count)
    finally:
        await app.close()
    print(f"page: {size / 1000:.1f} KB; CPU a poll with nothing new {unchanged * 1000:.2f} ms, "
          f"a page rendered again {full * 1000:.2f} ms (this process, client included)")
    return [Figure("unchanged poll / page rendered again (CPU)", unchanged / full, 0.25),
            Figure("SQL statements of a poll with nothing new", statements, 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--polls", type=int, default=300)
    parser.add_argument("--pages", type=int, default=60)
    add_target_flag(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        figures = asyncio.run(measure(args.polls, args.pages, Path(folder)))
    return report(figures, overrides(args.target))


if __name__ == "__main__":
    raise SystemExit(main())
