"""`python -m bot web`: the discussion pages on their own (for Discord or console deployments)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner

from bot.__main__ import cli
from core.showing.pages import PageLinks
from tests.e2e.test_slack_process import wait_for
from tests.fakes.slack_signing import free_port

SECRET = "web-e2e-secret-not-a-secret-32-bytes+"


def test_bot_web_serves_signed_pages_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the server is given (a finished discussion, its id, the refusal without a secret) is made in process
    # (typer's runner); only the server itself is a process of its own.
    for name in list(os.environ):
        if name.startswith(("SLACK_", "COUNCIL_", "DATABASE_URL", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'council.db'}")
    monkeypatch.setenv("COUNCIL_LOG_LEVEL", "WARNING")
    monkeypatch.chdir(tmp_path)
    made = CliRunner().invoke(cli, ["console", "Should we adopt <b>bold</b> pages?", "--rounds", "1", "--no-input"])
    assert made.exit_code == 0, made.output
    listed = CliRunner().invoke(cli, ["list", "--format", "json"])
    assert listed.exit_code == 0, listed.output
    discussion_id = json.loads(listed.stdout)[0]["id"]

    port = free_port()
    monkeypatch.setenv("PORT", str(port))
    missing = CliRunner().invoke(cli, ["web"])
    assert missing.exit_code == 2 and "COUNCIL_WEB_SECRET" in missing.stderr, "no secret, no pages: said plainly"

    base = f"http://127.0.0.1:{port}"
    web_env = dict(os.environ) | {"COUNCIL_PUBLIC_URL": base, "COUNCIL_WEB_SECRET": SECRET}
    asyncio.run(_serve_and_read(tmp_path, web_env, base, discussion_id))


async def _serve_and_read(folder: Path, env: dict[str, str], base: str, discussion_id: str) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "web", cwd=folder, env=env,
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
            for unsigned in (f"{base}/d/{discussion_id}", link[:-1] + ("0" if link[-1] != "0" else "1")):
                async with http.get(unsigned) as resp:  # no signature, or one changed: nothing of the discussion
                    assert resp.status == 403 and "bold" not in await resp.text()
    finally:
        proc.terminate()
        await proc.wait()
