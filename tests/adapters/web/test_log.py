"""The decision log over HTTP, on SQLite and PostgreSQL: a channel's discussions with their verdicts, searched with
the records' full-text index; a private channel's log only through its own link; every other link refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.web.page import Pages, application
from core.models import Decision, Discussion, FlowOptions, Status
from core.showing.decision_log import LogLinks, Place
from core.showing.pages import PageLinks
from core.storage.store import Store
from tests.fakes.clock import FakeClock

LINKS = PageLinks("https://council.example.test", "web-secret-for-tests-at-least-32-bytes")
HOSTILE = 'Ship <script>alert("x")</script> now?'


async def discussion(store: Store, clock: FakeClock, did: str, topic: str, channel: str, *, private: bool = False,
                     decided: str = "", flow: str = "council") -> None:
    now = clock.now()
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id=did, topic=topic, platform="slack", workspace="T1", channel=channel,
                                           flow=flow, status=Status.DONE if decided else Status.RUNNING,
                                           options=FlowOptions(private=private), created_at=now, updated_at=now))
        if decided:
            await tx.add_decision(Decision(
                discussion_id=did, platform="slack", workspace="T1", channel=channel, topic=topic, flow=flow,
                decided=decided, verdict=f"CONSENSUS for {did}-yes (2 of 2)", decided_at=now, private=private,
                stances=[{"persona": "Ada", "label": f"{did}-yes", "stance": "for"},
                         {"persona": "Bo", "label": f"{did}-yes", "stance": "for"}],
                people={f"{did}-no": 3}))
    clock.advance(minutes=5)


@pytest.fixture
async def site(db_url: str) -> AsyncIterator[tuple[TestClient, LogLinks, FakeClock]]:
    from core.storage.db import make_engine, migrate

    engine = make_engine(db_url)
    await migrate(engine)
    store, clock = Store(engine), FakeClock()
    await discussion(store, clock, "d1", "Should we move to trunk-based development?", "C1",
                     decided="Trunk-based development, with a four-week trial.")
    await discussion(store, clock, "d2", "Which billing provider?", "C1", decided="Stay with the current one.")
    await discussion(store, clock, "d3", "Should we reorganise the platform team?", "G1", private=True,
                     decided="Reorganise the platform team into two squads.")
    await discussion(store, clock, "d4", HOSTILE, "C1")
    async with TestClient(TestServer(application(Pages(LINKS, clock, store)))) as client:
        yield client, LogLinks(LINKS), clock
    await store.close()


def path(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


async def read(client: TestClient, url: str, **more: str) -> str:
    resp = await client.get(path(url) + ("&" + urlencode(more) if more else ""))
    assert resp.status == 200, await resp.text()
    assert "form-action 'self'" in resp.headers["Content-Security-Policy"]
    return await resp.text()


async def test_a_channels_log_lists_its_discussions_with_verdicts_options_and_page_links(site: tuple) -> None:
    client, logs, clock = site
    html = await read(client, logs.url(Place("slack", "T1", "C1"), clock.now()))
    assert html.index("&lt;script&gt;") < html.index("Which billing") < html.index("trunk-based"), "newest first"
    assert "<script>" not in html
    assert "CONSENSUS for d1-yes (2 of 2)" in html and "d1-yes · 2 persona(s)" in html and "d1-no · 3 people" in html
    assert "Flow: <strong>council</strong>" in html and "running" in html and "done" in html
    assert "reorganise" not in html, "a private channel's discussions stay on its own log"
    pages = [u.replace("&amp;", "&") for u in html.split('href="')[1:] if u.startswith(LINKS.base_url + "/d/")]
    assert len(pages) == 3
    for u in pages:
        page = await client.get(path(u.split('"')[0]))
        assert page.status == 200 and "Council discussion" in await page.text()


async def test_a_private_channels_log_opens_with_its_own_link_only(site: tuple) -> None:
    client, logs, clock = site
    private = await read(client, logs.url(Place("slack", "T1", "G1"), clock.now()))
    assert "reorganise the platform team" in private and "billing" not in private
    workspace = await read(client, logs.url(Place("slack", "T1"), clock.now()))
    assert "billing" in workspace and "trunk-based" in workspace and "Channel C1" in workspace
    assert "reorganise" not in workspace, "the workspace's log is of public channels, admins' included"
    searched = await read(client, logs.url(Place("slack", "T1"), clock.now()), q="reorganise")
    assert "platform team" not in searched and "No decisions match" in searched


@pytest.mark.parametrize("words, shown, hidden", [
    ("trunk", ["trunk-based"], ["billing", "&lt;script"]),
    ("trials", ["trunk-based"], ["billing"]),  # the index stems: trial(s)
    ("provider billing", ["billing"], ["trunk-based"]),
    ('trunk" OR * NEAR( ) -- ; DROP', [], ["billing"]),  # no syntax reaches the index
])
async def test_the_log_is_searched_with_the_records_full_text_index(site: tuple, words: str, shown: list[str],
                                                                   hidden: list[str]) -> None:
    client, logs, clock = site
    html = await read(client, logs.url(Place("slack", "T1", "C1"), clock.now()), q=words)
    assert all(s in html for s in shown) and not any(h in html for h in hidden), words
    assert "best match first" in html


async def test_every_changed_or_expired_log_link_is_refused(site: tuple) -> None:
    client, logs, clock = site
    good = path(logs.url(Place("slack", "T1", "C1"), clock.now()))
    fields = dict(parse_qsl(urlsplit(good).query, keep_blank_values=True))
    page_sig = LINKS.signature("d3", int(fields["exp"]))
    forged = {
        "another channel": {**fields, "c": "G1"},
        "the workspace": {**fields, "c": ""},
        "another workspace": {**fields, "w": "T2"},
        "no signature": {k: v for k, v in fields.items() if k != "sig"},
        "a page's signature": {**fields, "sig": page_sig},
        "later expiry": {**fields, "exp": str(int(fields["exp"]) + 1)},
    }
    for why, query in forged.items():
        resp = await client.get(f"/log?{urlencode(query)}")
        assert resp.status == 403 and "billing" not in await resp.text(), why
    twice = await client.get(good + "&c=G1")
    assert twice.status == 403, "a link carries each field once"
    assert (await client.get(good)).status == 200
    clock.advance(delta=timedelta(days=1, seconds=1))
    assert (await client.get(good)).status == 403, "a log link lives a day"
