"""`python -m bot slack` driven exactly as Slack drives it: signed HTTP, fake Web API, fake Anthropic API."""

from __future__ import annotations

import asyncio
import html
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlencode

import aiohttp

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signing import free_port, sign

SECRET = "e2e-signing-secret"
ROOT = Path(__file__).resolve().parents[2]
# Slack's limits ten times faster, in the fake and in the app alike: one post a second per channel would otherwise
# make this one discussion wait out most of half a minute.
TIME_SCALE = 10.0


def signed(body: str) -> dict[str, str]:
    return {**sign(body, SECRET), "Content-Type": "application/x-www-form-urlencoded"}


async def wait_for(check: Callable[[], Awaitable[bool]], within_s: float, what: str) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if await check():
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_council_in_slack_with_the_real_model_client(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with FakeSlack(tokens={"xoxb-e2e": "T0001"}, time_scale=TIME_SCALE) as slack, FakeAnthropic() as anthropic, \
            aiohttp.ClientSession() as http:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "COUNCIL_", "DATABASE_URL"))}
        env |= {"PORT": str(port), "DATABASE_URL": f"sqlite:///{tmp_path / 'council.db'}",
                "SLACK_API_URL": slack.base_url, "SLACK_BOT_TOKEN": "xoxb-e2e", "SLACK_SIGNING_SECRET": SECRET,
                "ANTHROPIC_API_KEY": "sk-ant-e2e-not-a-secret", "ANTHROPIC_BASE_URL": anthropic.base_url,
                "COUNCIL_LOG_LEVEL": "WARNING", "COUNCIL_PUBLIC_URL": base,
                "COUNCIL_WEB_SECRET": "e2e-web-secret-not-a-secret-32-bytes+", "SLACK_TIME_SCALE": str(TIME_SCALE)}
        log = (tmp_path / "app.log").open("wb")
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "slack", cwd=tmp_path, env=env,
                                                    stdout=log, stderr=log)
        try:
            async def healthy() -> bool:
                try:
                    async with http.get(f"{base}/healthz") as resp:
                        return resp.status == 200
                except aiohttp.ClientError:
                    return False

            await wait_for(healthy, 60, "/healthz")
            body = urlencode({"command": "/council", "text": "Should we adopt trunk-based development? --rounds 1",
                              "team_id": "T0001", "channel_id": "C0001", "user_id": "U0001", "user_name": "dana",
                              "trigger_id": "1.2.3", "response_url": f"http://{slack.host}:{slack.port}/response/e2e"})
            async with http.post(f"{base}/slack/events", data=body.encode(), headers=signed(body)) as resp:
                assert resp.status == 200  # how fast: bench/slack_ack.py

            forged = {**signed(body), "X-Slack-Signature": "v0=" + "0" * 64}
            async with http.post(f"{base}/slack/events", data=body.encode(), headers=forged) as resp:
                assert resp.status == 401

            def posts() -> list:  # type: ignore[type-arg]
                return [c.params for c in slack.called("chat.postMessage")]

            def edits() -> list:  # type: ignore[type-arg]
                return [c.params for c in slack.called("chat.update")]

            async def finished() -> bool:
                # Turns replace their "thinking" placeholder, so the synthesis arrives as an edit.
                return any("Final synthesis" in str(p.get("blocks", "")) for p in posts() + edits())

            try:
                await wait_for(finished, 120, "the final synthesis")
            except AssertionError:
                log.flush()
                raise AssertionError(
                    f"no final synthesis; posts: {[str(p.get('text'))[:80] for p in posts()]}\n"
                    f"log: {(tmp_path / 'app.log').read_text()[-3000:]}"
                ) from None
            # The header links to the discussion's page, served on the same port; a changed signature shows nothing.
            header = next(p for p in posts() + edits() if "Read the whole discussion" in str(p.get("blocks", "")))
            link = html.unescape(re.search(r"<(http[^|>]+)\|Read the whole", str(header["blocks"]))[1])
            assert link.startswith(f"{base}/d/")
            async with http.get(link) as resp:
                page = await resp.text()
                assert resp.status == 200 and "trunk-based development" in page and "Final synthesis" in page
            async with http.get(link[:-1] + ("0" if link[-1] != "0" else "1")) as resp:
                assert resp.status == 403 and "trunk-based" not in await resp.text()
        finally:
            proc.terminate()
            await proc.wait()
            log.close()
    app_log = (tmp_path / "app.log").read_text()
    assert "Traceback" not in app_log and "sk-ant-e2e" not in app_log and "xoxb-e2e" not in app_log
    top = [p for p in posts() if not p.get("thread_ts")]
    thread = [p for p in posts() if p.get("thread_ts")]
    assert len(top) == 1, "one header in the channel; everything else in its thread"
    assert len({p.get("username") for p in thread if p.get("username")}) >= 7, "each persona under its own name"
    keys = [(p["metadata"]["event_type"], str(p["metadata"]["event_payload"])) for p in posts() if "metadata" in p]
    assert len(keys) == len(set(keys)), "nothing posted twice"
    assert anthropic.stats()["request_count"] >= 14 and "offline model" not in str(posts())
