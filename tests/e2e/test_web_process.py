"""`python -m bot web`: the discussion pages on their own (for Discord or console deployments)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from core.showing.pages import PageLinks
from tests.e2e.test_slack_process import wait_for
from tests.fakes.slack_signing import free_port

SECRET = "web-e2e-secret-not-a-secret-32-bytes+"


async def test_bot_web_serves_signed_pages_only(tmp_path: Path) -> None:
    db = tmp_path / "council.db"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "COUNCIL_", "DATABASE_URL",
                                                                         "ANTHROPIC_"))}
    env = base_env | {"DATABASE_URL": f"sqlite:///{db}", "COUNCIL_LOG_LEVEL": "WARNING"}
    console = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "console", "Should we adopt <b>bold</b> pages?", "--rounds", "1",
        "--no-input", cwd=tmp_path, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(console.wait(), 120) == 0
    listed = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "list", "--format", "json",
                                                  cwd=tmp_path, env=env, stdout=asyncio.subprocess.PIPE,
                                                  stderr=asyncio.subprocess.DEVNULL)
    out, _ = await listed.communicate()
    discussion_id = json.loads(out)[0]["id"]

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    missing = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "web", cwd=tmp_path,
                                                   env=env | {"PORT": str(port)}, stdout=asyncio.subprocess.DEVNULL,
                                                   stderr=asyncio.subprocess.PIPE)
    _, err = await missing.communicate()
    assert missing.returncode == 2 and b"COUNCIL_WEB_SECRET" in err, "no secret, no pages: said plainly"

    web_env = env | {"PORT": str(port), "COUNCIL_PUBLIC_URL": base, "COUNCIL_WEB_SECRET": SECRET}
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "web", cwd=tmp_path, env=web_env,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        async with aiohttp.ClientSession() as http:
            async def healthy() -> bool:
                try:
                    async with http.get(f"{base}/healthz") as resp:
                        return resp.status == 200
                except aiohttp.ClientError:
                    return False

            await wait_for(healthy, 60, "/healthz")
            link = PageLinks(base, SECRET).url(discussion_id, datetime.now(UTC))
            async with http.get(link) as resp:
                page = await resp.text()
                assert resp.status == 200 and "&lt;b&gt;bold&lt;/b&gt;" in page and "<b>bold" not in page
            async with http.get(f"{base}/d/{discussion_id}") as resp:
                assert resp.status == 403 and "bold" not in await resp.text()
    finally:
        proc.terminate()
        await proc.wait()
