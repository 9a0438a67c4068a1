"""/d/{id}/live without a browser: the page again only when something on it changed (ETag, 304), the same
signature and revocation as the page, a script allowed by its hash alone, and words being written read back from
the database (any replica serves them)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.web.page import LIVE_SCRIPT, Pages, application, render
from bot.settings import Settings
from bot.wiring import App, build_app, page_links
from core.control import commands as c
from core.models import NextAction
from core.ports import Completion, Prompt, TextSink
from core.showing.export import export
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM


@pytest.fixture
async def waiting(tmp_path: Path) -> AsyncIterator[tuple[App, TestClient, str, str, FakeClock]]:
    """A discussion between rounds (round 1 done, its poll open), and the path of its page's link."""
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        council_public_url="https://council.example.test",
                        council_web_secret="web-secret-for-tests-at-least-32-bytes")
    clock = FakeClock()
    app = await build_app(settings, {"console": RecordingChat("console")}, llm=ScriptedLLM(), clock=clock)
    did = (await app.service.handle(c.StartDiscussion(topic="Move to a monorepo?", platform="console", channel="C1",
                                                      in_channel="C1", user_id="U1", experts=2))).discussion_id
    await app.driver.idle()
    parts = urlsplit(app.driver.config.pages.url(did, clock.now()))
    replica = Store(make_engine(settings.database_url))  # the page served by another process on the same database
    async with TestClient(TestServer(application(Pages(page_links(settings), clock, replica)))) as client:
        yield app, client, did, f"{parts.path}/live?{parts.query}", clock
    await replica.close()
    await app.close()


async def test_an_unchanged_page_answers_304_and_a_vote_changes_it(waiting: tuple) -> None:
    app, client, did, live, _ = waiting
    first = await client.get(live)
    assert first.status == 200 and "Round 1" in await first.text()
    etag = first.headers["ETag"]
    again = await client.get(live, headers={"If-None-Match": etag})
    assert again.status == 304 and await again.read() == b""
    async with app.store.tx() as tx:
        [poll] = [p for p in await tx.polls(did) if not p.closed]
    await app.service.handle(c.CastBallot(poll_id=poll.id, choice=1, user_id="U9", user_name="Robin", in_channel="C1"))
    await app.driver.idle()
    changed = await client.get(live, headers={"If-None-Match": etag})
    assert changed.status == 200 and changed.headers["ETag"] != etag
    assert f'data-mark="{changed.headers["ETag"].strip(chr(34))}"' in await changed.text()


@pytest.mark.parametrize("change", ["human message", "round", "live text"])
async def test_each_thing_the_page_shows_changes_its_mark(waiting: tuple, change: str) -> None:
    app, client, did, live, clock = waiting
    etag = (await client.get(live)).headers["ETag"]
    if change == "human message":
        await app.service.handle(c.PostHumanMessage(in_channel="C1", discussion_id=did, text="What about CI?",
                                                    user_id="U2", user_name="Lee", event_id="e1"))
    elif change == "round":
        await app.service.handle(c.ChooseNextAction(in_channel="C1", discussion_id=did, user_id="U1",
                                                     action=NextAction.ANOTHER_ROUND))
        await app.driver.idle()
    else:
        async with app.store.tx() as tx:
            key = (await tx.turns(did))[0].key
            await tx.live_text_shown(did, key, "So far", clock.now())
    assert (await client.get(live, headers={"If-None-Match": etag})).status == 200, change


async def test_words_being_written_come_from_the_database(waiting: tuple) -> None:
    app, client, did, live, clock = waiting
    async with app.store.tx() as tx:
        turn = next(t for t in await tx.turns(did) if t.persona_key != "moderator")
        turn.status = turn.status.RUNNING
        await tx.save_turn(turn)
        await tx.live_text_shown(did, turn.key, "Half a <b>thought</b>", clock.now())
    html = await (await client.get(live)).text()
    assert "Being written" in html and "Half a &lt;b&gt;thought&lt;/b&gt;" in html
    async with app.store.tx() as tx:
        await tx.forget_live_texts(did)
    assert "Half a" not in await (await client.get(live)).text()


async def test_the_live_link_is_checked_like_the_page_and_revoking_closes_it(waiting: tuple) -> None:
    app, client, did, live, clock = waiting
    sig = live.split("sig=")[1][:32]
    forged = live.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
    assert (await client.get(forged)).status == 403
    assert (await client.get(live.split("?")[0])).status == 403
    etag = (await client.get(live)).headers["ETag"]
    clock.advance(seconds=1)
    await app.service.handle(c.RevokeLinks(in_channel="C1", discussion_id=did, user_id="U1"))
    await app.driver.idle()
    assert (await client.get(live, headers={"If-None-Match": etag})).status == 403, "no 304 for a revoked link"
    clock.advance(days=91)
    assert (await client.get(live)).status == 403


async def test_the_served_page_runs_only_its_own_script_and_an_export_runs_none(waiting: tuple) -> None:
    app, client, did, live, _ = waiting
    page = await client.get(live.replace("/live", ""))
    html = await page.text()
    csp = page.headers["Content-Security-Policy"]
    digest = base64.b64encode(hashlib.sha256(LIVE_SCRIPT.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp and "connect-src 'self'" in csp and "'unsafe-inline'" not in \
        csp.split("script-src")[1].split(";")[0]
    [script] = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert script == LIVE_SCRIPT, "the script served is the one its hash allows"
    assert "<noscript>" in html and 'data-live="on"' in html
    doc = await export(app.store, did)
    assert doc is not None and "<script" not in render(doc), "a saved copy runs nothing"


async def test_a_finished_discussion_s_page_asks_for_nothing(waiting: tuple) -> None:
    app, client, did, live, _ = waiting
    await app.service.handle(c.Synthesize(in_channel="C1", discussion_id=did, user_id="U1"))
    await app.driver.idle()
    html = await (await client.get(live.replace("/live", ""))).text()
    assert "<script" not in html and 'data-live="off"' in html and "Finished" in html


class Halting(ScriptedLLM):
    """A persona's turn writes its first words, then waits for `go`."""

    def __init__(self) -> None:
        super().__init__()
        self.go, self.writing = asyncio.Event(), asyncio.Event()

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        if on_text is not None and not self.go.is_set():
            on_text(["Weighing", " the costs"])
            self.writing.set()
            await self.go.wait()
        return await super().complete(prompt, on_text)


@pytest.mark.parametrize("pages", [True, False])
async def test_the_driver_keeps_words_so_far_for_the_page_and_lets_them_go_at_the_end(
        tmp_path: Path, pages: bool) -> None:
    web = {"council_public_url": "https://council.example.test",
           "council_web_secret": "web-secret-for-tests-at-least-32-bytes"} if pages else {}
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}", **web)  # type: ignore[call-arg]
    llm = Halting()
    app = await build_app(settings, {"console": RecordingChat("console")}, llm=llm, clock=FakeClock())
    try:
        did = (await app.service.handle(c.StartDiscussion(topic="Move to a monorepo?", platform="console",
                                                          channel="C1", user_id="U1", experts=2))).discussion_id
        await asyncio.wait_for(llm.writing.wait(), 30)
        async with app.store.tx() as tx:
            during = await tx.live_texts(did)
        llm.go.set()
        await app.driver.idle()
        await app.service.handle(c.Synthesize(in_channel="C1", discussion_id=did, user_id="U1"))
        await app.driver.idle()
        async with app.store.tx() as tx:
            after = await tx.live_texts(did)
    finally:
        await app.close()
    assert set(during.values()) == ({"Weighing the costs"} if pages else set()), "no page: nothing kept"
    assert after == {}, "the discussion's end lets them go"
