"""Headless Chromium driven over the DevTools protocol (a websocket, aiohttp's client): open a page at a window
width, read its DOM, take a screenshot. The page's own script runs as in anyone's browser."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import os
import re
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest


def chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs Debian's chromium (.ci/run): the browser tests are not optional there")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return browser


class Tab:
    """One page target of the browser, attached with a flat session."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws, self.session = ws, ""
        self._ids = itertools.count(1)
        self._answers: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = msg.json()
            if "id" in data and data["id"] in self._answers:
                self._answers.pop(data["id"]).set_result(data)
            elif "method" in data:
                self.events.append(data)

    async def send(self, method: str, params: dict[str, Any] | None = None, *, browser: bool = False
                   ) -> dict[str, Any]:
        n = next(self._ids)
        message: dict[str, Any] = {"id": n, "method": method, "params": params or {}}
        if self.session and not browser:
            message["sessionId"] = self.session
        self._answers[n] = asyncio.get_running_loop().create_future()
        await self.ws.send_json(message)
        answer = await asyncio.wait_for(self._answers[n], 30)
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return dict(answer.get("result") or {})

    async def open(self, url: str, width: int, height: int = 900) -> None:
        await self.send("Emulation.setDeviceMetricsOverride",
                        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})
        await self.send("Page.enable")
        self.events.clear()
        await self.send("Page.navigate", {"url": url})
        await self.until(lambda: self._loaded(), "the page loaded")

    async def _loaded(self) -> bool:
        return any(e["method"] == "Page.loadEventFired" for e in self.events)

    async def js(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        return result.get("result", {}).get("value")

    async def text(self) -> str:
        return str(await self.js("document.body.innerText"))

    async def until(self, check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 45) -> None:
        """Wait for the browser (real time: it is another process) until `check` holds."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not await check():
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            await asyncio.sleep(0.1)

    async def screenshot(self, path: Path) -> Path:
        shot = await self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        await asyncio.to_thread(path.write_bytes, base64.b64decode(shot["data"]))
        return path


@contextlib.asynccontextmanager
async def browser(profile: Path) -> AsyncIterator[Tab]:
    """A headless Chromium with one blank tab, closed after."""
    proc = await asyncio.create_subprocess_exec(
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
        "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    try:
        assert proc.stderr is not None
        endpoint = ""
        while not endpoint:
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            if not line:
                raise RuntimeError("chromium exited before it listened")
            found = re.search(r"DevTools listening on (ws://\S+)", line)
            endpoint = found[1] if found else ""
        drain = asyncio.create_task(proc.stderr.read())  # chromium's later chatter must not fill the pipe
        async with aiohttp.ClientSession() as http, http.ws_connect(endpoint, max_msg_size=0) as ws:
            tab = Tab(ws)
            target = await tab.send("Target.createTarget", {"url": "about:blank"}, browser=True)
            attached = await tab.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True},
                                      browser=True)
            tab.session = attached["sessionId"]
            try:
                yield tab
            finally:
                tab._reader.cancel()
                drain.cancel()
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
