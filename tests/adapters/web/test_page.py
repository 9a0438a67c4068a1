"""The discussion page over HTTP: signed links, expiry on an injected clock, hostile text escaped, a real browser."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from adapters.web.page import Pages, application
from bot.settings import Settings
from bot.wiring import App, build_app, page_links
from core.control import commands as c
from core.control.permissions import Refused
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

PUBLIC = "https://council.example.test"
HOSTILE_TOPIC = 'Should we ship <script>alert("topic")</script> & "quotes"?'
HOSTILE_REPLY = "<img src=x onerror=alert('reply')> and </article> too"


@dataclass
class Site:
    app: App
    chat: RecordingChat
    clock: FakeClock
    pages: Pages
    client: TestClient
    discussion_id: str

    def path(self, url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.path}?{parts.query}"


@pytest.fixture
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        council_public_url=PUBLIC, council_web_secret="web-secret-for-tests-at-least-32-bytes",
                        council_web_link_days=7)
    chat, clock = RecordingChat("console"), FakeClock()
    app = await build_app(settings, {"console": chat}, llm=ScriptedLLM(), clock=clock)
    reply = await app.service.handle(c.StartDiscussion(topic=HOSTILE_TOPIC, platform="console", channel="C1",
                                                       user_id="U1", user_name="Dana <b>", rounds=None))
    await app.driver.idle()
    await app.service.handle(c.PostHumanMessage(in_channel="C1", discussion_id=reply.discussion_id, text=HOSTILE_REPLY,
                                                user_id="U2", user_name="Lee", event_id="e1"))
    await app.service.handle(c.Synthesize(in_channel="C1", discussion_id=reply.discussion_id, user_id="U1"))
    await app.driver.idle()
    pages = Pages(page_links(settings), clock, app.store)
    async with TestClient(TestServer(application(pages))) as client:
        yield Site(app, chat, clock, pages, client, reply.discussion_id)
    await app.close()


def header_url(site: Site) -> str:
    header = next(s.post for s in site.chat.sent if s.post.kind == "header")
    return header.page_url


async def test_the_header_and_the_final_synthesis_link_to_a_page_that_shows_it_all(site: Site) -> None:
    url = header_url(site)
    assert url.startswith(f"{PUBLIC}/d/{site.discussion_id}?exp=")
    final = [s.post for s in site.chat.sent if s.post.kind == "synthesis" and ":final:" in s.post.key]
    assert final and final[0].page_url.startswith(PUBLIC)
    resp = await site.client.get(site.path(url))
    assert resp.status == 200 and resp.headers["Cache-Control"] == "private, no-store"
    assert "default-src 'none'" in resp.headers["Content-Security-Policy"]
    html = await resp.text()
    async with site.app.store.tx() as tx:
        personas = await tx.personas(site.discussion_id)
        polls = await tx.polls(site.discussion_id)
    assert all(p.name in html for p in personas)
    assert "Round 1" in html and "Final synthesis" in html and "Flow: <strong>moderated</strong>" in html
    assert "Lee" in html and "Cost $" in html
    assert all(p.question.replace('"', "&#34;") in html or p.question in html for p in polls)
    assert html.count('class="bar"') == sum(len(p.options) for p in polls) > 0
    assert "<script" not in html and "<img" not in html, "people's and the model's text is never markup"
    assert "&lt;script&gt;alert(&#34;topic&#34;)&lt;/script&gt; &amp; &#34;quotes&#34;" in html
    assert "&lt;img src=x onerror=alert(" in html and "&lt;/article&gt;" in html
    assert "**" not in html, "the posts' Markdown is rendered, not shown"


async def test_a_changed_missing_or_expired_signature_shows_nothing(site: Site) -> None:
    path = site.path(header_url(site))
    good_sig = path.split("sig=")[1]
    other = await site.app.service.handle(c.StartDiscussion(topic="Another topic entirely", platform="console",
                                                            channel="C1", user_id="U1", confirm=True))
    await site.app.driver.idle()
    forged = {
        "changed": path.replace(good_sig, ("0" if good_sig[0] != "0" else "1") + good_sig[1:]),
        "missing": path.split("?")[0],
        "no signature": path.split("&sig=")[0],
        "later expiry": path.replace("exp=", "exp=9"),
        "another id": path.replace(site.discussion_id, other.discussion_id),
    }
    for why, bad in forged.items():
        resp = await site.client.get(bad)
        body = await resp.text()
        assert resp.status == 403, why
        assert "alert" not in body and "Another topic" not in body and "Contrarian" not in body, why
    assert (await site.client.get(path)).status == 200
    site.clock.advance(days=7, seconds=1)
    expired = await site.client.get(path)
    assert expired.status == 403 and "expired" in await expired.text()


async def test_a_signed_link_to_an_unknown_discussion_is_404(site: Site) -> None:
    url = site.pages.links.url("feedbeef", site.clock.now())
    resp = await site.client.get(site.path(url))
    assert resp.status == 404 and "feedbeef" not in await resp.text()


async def test_no_secret_means_no_links_and_no_pages(site: Site) -> None:
    bare = Pages(page_links(Settings(_env_file=None, council_public_url=PUBLIC)), site.clock, site.app.store)  # type: ignore[call-arg]
    assert bare.links.url(site.discussion_id, site.clock.now()) == ""
    signed = site.path(header_url(site))
    async with TestClient(TestServer(application(bare))) as client:
        assert (await client.get(signed)).status == 403


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_a_headless_browser_lays_the_page_out_on_a_phone(site: Site, tmp_path: Path) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI installs Debian's chromium (.ci/run): the render test is not optional there")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    runner = web.AppRunner(application(site.pages))
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = server._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    shot = tmp_path / "page.png"
    try:
        url = f"http://127.0.0.1:{port}{site.path(header_url(site))}"
        proc = await asyncio.create_subprocess_exec(
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}", "--window-size=412,1400", f"--screenshot={shot}", url,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await asyncio.wait_for(proc.wait(), 60)
    finally:
        await runner.cleanup()
    from matplotlib.image import imread

    pixels = imread(str(shot))
    assert pixels.shape[:2] == (1400, 412), "the phone-sized window was captured"
    gray = pixels[..., :3].mean(axis=2)
    inked = (gray < 0.6).mean()  # dark pixels: text, badges, borders
    assert 0.01 < inked < 0.5, f"the page has content and is not one block of colour ({inked:.3f} dark)"
    assert gray[:, :20].std() < gray.std(), "the margins are calmer than the content: it laid out, not overflowed"


async def test_a_digest_links_each_discussion_to_its_page(site: Site) -> None:
    app, clock = site.app, site.clock
    await app.service.handle(c.SetDigest(in_channel="C1", platform="console", channel="C1", cadence="cron",
                                         cron="0 * * * *"))
    clock.advance(hours=1)
    async with app.store.tx() as tx:
        s = await tx.find_schedule("digest", "console", "", "C1")
    assert s is not None and await app.service.schedules.fire(s.id)
    await app.driver.idle()
    [(_, _, _, post)] = site.chat.announced
    link = next(line for line in post.text.splitlines() if site.discussion_id in line and "[page](" in line)
    url = link.split("[page](")[1].rstrip(")")
    resp = await site.client.get(site.path(url))
    assert resp.status == 200 and "quotes" in await resp.text()


async def test_times_on_the_page_are_readable_and_name_their_zone(site: Site) -> None:
    """The fake clock stands at Monday 2 March 2026, 08:00 UTC: the start and every entry say so, in words, inside
    a machine-readable <time> element."""
    html = await (await site.client.get(site.path(header_url(site)))).text()
    stamp = '<time datetime="2026-03-02T08:00:00+00:00">Mon 2 Mar 2026, 08:00 UTC</time>'
    assert f"Started {stamp}" in html
    assert html.count(stamp) > 3, "each turn and message shows when it was written"
    assert "2026-03-02 08:00 UTC" not in html


async def test_revoking_links_closes_every_earlier_link_and_the_header_gets_a_fresh_one(site: Site) -> None:
    old = site.path(header_url(site))
    assert (await site.client.get(old)).status == 200
    did = site.discussion_id
    with pytest.raises(Refused, match="Only Dana <b> or a workspace admin can revoke the page links"):
        await site.app.service.handle(c.RevokeLinks(in_channel="C1", discussion_id=did, user_id="U2"))
    assert (await site.client.get(old)).status == 200, "a member who did not start it revokes nothing"
    site.clock.advance(seconds=1)  # a header redrawn in the same instant as the last is the same post
    await site.app.service.handle(c.RevokeLinks(in_channel="C1", discussion_id=did, user_id="U1", user_name="Dana"))
    await site.app.driver.idle()
    refused = await site.client.get(old)
    assert refused.status == 403 and "alert" not in await refused.text()
    assert (await site.client.get(old + "&v=1")).status == 403, "a version cannot be claimed without its signature"
    fresh = site.path(next(p for p in site.chat.posts(did) if p.kind == "header").page_url)  # as redrawn
    assert fresh != old and "v=1" in fresh and (await site.client.get(fresh)).status == 200
    notices = [s.post for s in site.chat.sent if s.post.kind == "notice" and "revoked the links" in s.post.text]
    assert len(notices) == 1
    await site.app.service.handle(c.RevokeLinks(in_channel="C1", discussion_id=did, user_id="A1", is_admin=True))
    await site.app.driver.idle()
    assert (await site.client.get(fresh)).status == 403, "an admin may revoke too"
