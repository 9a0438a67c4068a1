"""A meeting's page shows the people's ranking beside the owners', as a table read through its DOM text: each
option by label and id, the owners' place and the people's tally; hidden while the ranking hides its results."""

from __future__ import annotations

from collections.abc import AsyncIterator
from html.parser import HTMLParser

import pytest

from adapters.web.page import render
from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.deliberation.tally import MISSING_RANK
from core.showing.export import export
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

C1 = {"in_channel": "C1"}


class Tables(HTMLParser):
    """Each <table>'s caption, the scope of its header cells, and its rows as cell texts, as a reader's tool sees
    them (the text of a cell, tags and all, with whitespace collapsed)."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict[str, list]] = []
        self.cell: list[str] | None = None
        self.scopes: list[str] = []
        self.caption: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append({"rows": [], "caption": [], "scopes": []})
        elif tag == "caption":
            self.caption = []
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th") and self.tables:
            self.cell = []
            self.tables[-1]["scopes"].append(dict(attrs).get("scope") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1]["rows"][-1].append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "caption" and self.caption is not None:
            self.tables[-1]["caption"].append(" ".join("".join(self.caption).split()))
            self.caption = None

    def handle_data(self, data: str) -> None:
        for sink in (self.cell, self.caption):
            if sink is not None:
                sink.append(data)


def tables(html: str) -> list[dict[str, list]]:
    parser = Tables()
    parser.feed(html)
    return parser.tables


@pytest.fixture
async def app(sqlite_url: str) -> AsyncIterator[App]:
    settings = Settings(_env_file=None, database_url=sqlite_url)  # type: ignore[call-arg]
    application = await build_app(settings, {"console": RecordingChat("console")}, llm=ScriptedLLM())
    yield application
    await application.close()


async def meeting(app: App, hide: bool = False) -> tuple[str, list]:
    did = (await app.service.handle(c.StartDiscussion(**C1, topic="Billing rewrite or mobile app first?",  # type: ignore[arg-type]
                                                      platform="console", channel="C1", user_id="U1",
                                                      user_name="Dana", flow="meeting", rounds=2,
                                                      hide_results=hide))).discussion_id
    await app.driver.idle()
    async with app.store.tx() as tx:
        polls = await tx.polls(did)
    first, second = polls[:2]
    # Both people put the second option first; one of them puts the first option second.
    for poll, choice, user_id, name in [(first, 1, "U2", "Sam"), (second, 0, "U2", "Sam"), (first, 1, "U3", "Lee")]:
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=choice, user_id=user_id, user_name=name))
    await app.driver.idle()
    return did, [first, second]


def ranking_table(html: str) -> dict[str, list]:
    found = [t for t in tables(html) if t["caption"] and "people's tally" in t["caption"][0]]
    assert len(found) <= 1, "the ranking is shown once"
    return found[0] if found else {}


async def test_a_meeting_page_shows_the_people_s_ranking_beside_the_owners(app: App) -> None:
    did, (first, _) = await meeting(app)
    await app.service.handle(c.ClosePoll(**C1, poll_id=first.id, user_id="U1", user_name="Dana"))
    await app.driver.idle()
    doc = await export(app.store, did)
    assert doc is not None
    html = render(doc)
    table = ranking_table(html)
    assert table, "the page has the ranking's table"
    head, *rows = table["rows"]
    assert head == ["#", "Option", "Owners: average rank", "Owners' #1", "People: average rank", "People's #1"]
    assert {"col", "row"} <= set(table["scopes"]), "header cells say what they head, for screen readers"
    picked = next(r for r in rows if r[1] == f"{first.options[1]} [{first.option_ids[1]}]")
    assert picked[4:] == ["1.0", "2"], "both people put it first"
    other = next(r for r in rows if r[1] == f"{first.options[0]} [{first.option_ids[0]}]")
    # Sam put it second; Lee left it out, which counts as just below a top five.
    assert other[4:] == [f"{(2 + MISSING_RANK) / 2:.1f}", "0"]
    owners = {x["id"]: x for x in doc["closing"]["ranking"]["items"]}
    for r in rows:  # the owners' places as the record counted them, each option once
        item = owners[r[1].rpartition("[")[2].rstrip("]")]
        assert r[2:4] == [f"{item['owners_average']:.1f}", str(item["owners_firsts"])]
    assert len(rows) == len(owners)
    assert "2 people ranked, 4 owners." in " ".join(html.split())


async def test_an_open_hidden_ranking_shows_no_people_s_tally_on_the_page(app: App) -> None:
    did, _ = await meeting(app, hide=True)
    doc = await export(app.store, did)
    assert doc is not None
    html = render(doc)
    assert not ranking_table(html)
    assert "The people's ranking is hidden until it closes." in html and "(the ranking is still open)" in html


async def test_a_discussion_without_a_ranking_shows_none(app: App) -> None:
    did = (await app.service.handle(c.StartDiscussion(**C1, topic="Four-day week?", platform="console",  # type: ignore[arg-type]
                                                      channel="C1", user_id="U1", rounds=1))).discussion_id
    await app.driver.idle()
    doc = await export(app.store, did)
    assert doc is not None
    assert "people's ranking" not in render(doc) and not ranking_table(render(doc))
