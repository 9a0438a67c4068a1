"""The page follows along in a real browser: headless Chromium opens a discussion's page, the discussion writes
(words so far, two turns, a vote, the verdict) and the page shows each without a reload, at a phone's width and a
desktop's. Marked e2e: the browser is another process, so the test waits on real time for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from adapters.web.page import Pages, application
from bot.settings import Settings
from bot.wiring import App, build_app, page_links
from core.control import commands as c
from core.models import Phase, TurnStatus
from core.ports import Completion, Prompt, TextSink
from tests.adapters.web.browser import Tab, browser
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]
PARTIAL = "Weighing the costs first, then"


class Halting(ScriptedLLM):
    """While `go` is an unset event, a persona's turn writes its first words and waits for it."""

    def __init__(self) -> None:
        super().__init__()
        self.go: asyncio.Event | None = None
        self.writing = asyncio.Event()

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        if self.go is not None and on_text is not None:
            on_text([PARTIAL, " the rest"])
            self.writing.set()
            await self.go.wait()
        return await super().complete(prompt, on_text)


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[App, Halting, Pages, str]]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        council_public_url="https://council.example.test",
                        council_web_secret="web-secret-for-tests-at-least-32-bytes")
    llm, clock = Halting(), FakeClock()
    app = await build_app(settings, {"console": RecordingChat("console")}, llm=llm, clock=clock)
    pages = Pages(page_links(settings), clock, app.store, every_s=1.0)
    runner = web.AppRunner(application(pages))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield app, llm, pages, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await app.close()


async def shows(tab: Tab, *texts: str) -> None:
    async def check() -> bool:
        body = await tab.text()
        return all(t in body for t in texts)

    await tab.until(check, f"the page to show {texts}")


async def test_the_page_shows_turns_a_vote_and_the_verdict_as_they_happen_without_a_reload(
        served: tuple[App, Halting, Pages, str], tmp_path: Path) -> None:
    app, llm, pages, base = served
    started = await app.service.handle(c.StartDiscussion(topic="Adopt a four-day week?", platform="console",
                                                         channel="C1", in_channel="C1", user_id="U1", experts=2,
                                                         confirm=True))
    did = started.discussion_id
    await app.driver.idle()
    url = pages.links.url(did, pages.clock.now())
    path = url.split("council.example.test", 1)[1]
    async with browser(tmp_path / "profile") as tab:
        await tab.open(base + path, 1280)
        await tab.js("window.sameDocument = true")  # gone if the page were loaded again
        assert "nobody right now" in await tab.text()

        llm.go = asyncio.Event()
        await app.service.handle(c.ConfirmRoster(discussion_id=did, in_channel="C1", user_id="U1"))
        await asyncio.wait_for(llm.writing.wait(), 60)
        async with app.store.tx() as tx:
            writing = [t for t in await tx.turns(did) if t.status == TurnStatus.RUNNING]
            names = {p.key: p.name for p in await tx.personas(did)}
        assert writing
        await shows(tab, "Being written", PARTIAL, names[writing[0].persona_key])
        writing_shot = await tab.screenshot(tmp_path / "page-writing-1280.png")

        llm.go.set()
        await app.driver.idle()
        async with app.store.tx() as tx:
            statements = [t for t in await tx.turns(did) if t.phase == Phase.STATEMENT and t.text]
            [poll] = [p for p in await tx.polls(did) if not p.closed]
            ballots = len(await tx.ballots(poll.id))
        assert len(statements) == 2
        firsts = [t.text.replace("*", "").split("\n")[0].strip("# ")[:30] for t in statements]  # as rendered
        await shows(tab, "Round 1", *(names[t.persona_key] for t in statements), *firsts)
        await shows(tab, f"{ballots} vote(s)")
        assert "Being written" not in await tab.text()

        await app.service.handle(c.CastBallot(poll_id=poll.id, choice=0, user_id="U7", user_name="Sam",
                                              in_channel="C1"))
        await app.driver.idle()
        await shows(tab, f"{ballots + 1} vote(s)")

        await app.service.handle(c.Synthesize(in_channel="C1", discussion_id=did, user_id="U1"))
        await app.driver.idle()
        await shows(tab, "Final synthesis", "Finished", "Verdict")
        assert await tab.js("window.sameDocument === true"), "every change came in without a reload"
        assert await tab.js("performance.getEntriesByType('navigation').length") == 1
        await tab.until(lambda: _stopped(tab), "the page to stop asking once the discussion is over")

        desktop = await tab.screenshot(tmp_path / "page-1280.png")
        await tab.send("Emulation.setDeviceMetricsOverride",
                       {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        assert await tab.js("document.documentElement.scrollWidth") <= 390, "nothing overflows a phone's width"
        phone = await tab.screenshot(tmp_path / "page-390.png")
    assert all(p.stat().st_size > 0 for p in (writing_shot, desktop, phone))
    print(f"screenshots: {writing_shot} {desktop} {phone}")


async def _stopped(tab: Tab) -> bool:
    return bool(await tab.js("document.querySelector('main').getAttribute('data-live') === 'off'"))
