"""The page's security and what it may show: no framing, a long enough secret, 403 for every malformed link,
and an open poll with hidden results shows neither counts nor ballots (the operator's export shows them, marked)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient, TestServer
from pydantic import ValidationError
from typer.testing import CliRunner

from adapters.web.page import Pages, application
from bot.__main__ import cli
from bot.settings import Settings
from bot.wiring import App, build_app, page_links
from core.control import commands as c
from core.showing.export import export
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

PUBLIC = "https://council.example.test"
SECRET = "a-web-secret-for-tests-32-bytes-long!"


@pytest.fixture
async def hidden(tmp_path: Path) -> AsyncIterator[tuple[App, TestClient, str, FakeClock]]:
    """A discussion between rounds whose open poll hides its results, with two people's votes on it."""
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        council_public_url=PUBLIC, council_web_secret=SECRET)
    clock = FakeClock()
    app = await build_app(settings, {"console": RecordingChat("console")}, llm=ScriptedLLM(), clock=clock)
    did = (await app.service.handle(c.StartDiscussion(topic="Four-day week?", platform="console", channel="C1",
                                                      in_channel="C1", user_id="U1", hide_results=True))).discussion_id
    await app.driver.idle()
    async with app.store.tx() as tx:
        [poll] = [p for p in await tx.polls(did) if not p.closed]
    for user, choice in (("U2", 0), ("U3", 1)):
        await app.service.handle(c.CastBallot(poll_id=poll.id, choice=choice, user_id=user, user_name=f"Voter {user}",
                                              in_channel="C1"))
    await app.driver.idle()
    async with TestClient(TestServer(application(Pages(page_links(settings), clock, app.store)))) as client:
        yield app, client, did, clock
    await app.close()


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


async def test_an_open_hidden_poll_shows_no_counts_and_no_ballots_on_the_page(hidden: tuple) -> None:
    app, client, did, clock = hidden
    html = await (await client.get(path_of(app.driver.config.pages.url(did, clock.now())))).text()
    assert "Voter U2" not in html and "Voter U3" not in html
    assert "results hidden until the poll closes" in html
    assert "2 vote(s)" not in html and "people" not in html.split("results hidden")[1][:200]


async def test_an_export_from_chat_hides_an_open_hidden_polls_tally_and_ballots(hidden: tuple) -> None:
    app, _, did, _ = hidden
    doc = await export(app.store, did)
    assert doc is not None
    [poll] = [p for p in doc["polls"] if not p["closed"]]
    assert poll["tally"] is None and poll["ballots"] == [] and poll["results_hidden"] is True
    assert "Voter U2" not in str(doc)


async def test_the_operators_export_shows_a_hidden_polls_ballots_marked(hidden: tuple) -> None:
    app, _, did, _ = hidden
    doc = await export(app.store, did, operator=True)
    assert doc is not None
    [poll] = [p for p in doc["polls"] if not p["closed"]]
    assert poll["results_hidden"] is True and poll["tally"] == [1, 1, 0][:len(poll["options"])]
    assert {b["user"] for b in poll["ballots"] if not b["is_ai"]} == {"Voter U2", "Voter U3"}


async def test_a_closed_hidden_poll_shows_its_results(hidden: tuple) -> None:
    app, client, did, clock = hidden
    async with app.store.tx() as tx:
        [poll] = [p for p in await tx.polls(did) if not p.closed]
    await app.service.handle(c.ClosePoll(poll_id=poll.id, user_id="U1", in_channel="C1"))
    doc = await export(app.store, did)
    assert doc is not None
    [shown] = [p for p in doc["polls"] if p["id"] == poll.id]
    assert shown["closed"] and shown["tally"][:2] == [1, 1] and not shown["results_hidden"]
    html = await (await client.get(path_of(app.driver.config.pages.url(did, clock.now())))).text()
    assert "results hidden until the poll closes" not in html


async def test_the_page_may_not_be_framed(hidden: tuple) -> None:
    app, client, did, clock = hidden
    resp = await client.get(path_of(app.driver.config.pages.url(did, clock.now())))
    assert resp.status == 200 and "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
    refused = await client.get(f"/d/{did}?exp=1&sig=x")
    assert refused.status == 403 and "frame-ancestors 'none'" in refused.headers["Content-Security-Policy"]


@pytest.mark.parametrize("query", ["exp={exp}&sig=é{sig}", "exp={exp}&sig=%FF%FE", "exp=%C3%A9&sig={sig}",
                                   "exp=-5&sig={sig}", "exp=１２３&sig={sig}", "exp={exp}&sig={sig}&sig=x",
                                   "exp=99999999999999999999999999&sig={sig}", "exp=&sig=", "sig={sig}"])
async def test_every_malformed_link_answers_403(hidden: tuple, query: str) -> None:
    app, client, did, clock = hidden
    good = urlsplit(app.driver.config.pages.url(did, clock.now())).query
    exp, sig = (part.split("=")[1] for part in good.split("&"))
    resp = await client.get(f"/d/{did}?" + query.format(exp=exp, sig=sig))
    assert resp.status == 403, query
    assert "Four-day" not in await resp.text()


def test_a_short_web_secret_is_refused_at_start_with_a_clear_message(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="COUNCIL_WEB_SECRET must be at least 32 bytes"):
        Settings(_env_file=None, council_web_secret="too-short")  # type: ignore[call-arg]
    Settings(_env_file=None, council_web_secret=SECRET)  # type: ignore[call-arg]
    # Any command starts by reading the settings: the CLI in process (typer's runner), as its other refusals are.
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL", "SLACK_")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("COUNCIL_WEB_SECRET", "short")
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(cli, ["list"])
    assert done.exit_code == 2 and "COUNCIL_WEB_SECRET must be at least 32 bytes" in done.stderr
    assert isinstance(done.exception, SystemExit) and "Traceback" not in done.stderr
