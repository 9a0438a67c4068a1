"""A poll's results as CSV behind the page's signed link, and polls.csv in the exports: counts per option with the
people's names, no names for an anonymous poll, nothing of a hidden poll until it closes; a forged link refused."""

from __future__ import annotations

import csv
import io
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from aiohttp.test_utils import TestClient, TestServer

from adapters.web.page import Pages, application
from bot.settings import Settings
from bot.wiring import App, build_app, page_links
from core.control import commands as c
from core.models import Poll
from core.showing import filing
from core.showing.export import export
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

PUBLIC = "https://council.example.test"
Made = tuple[App, TestClient, str, Poll, int, str]  # app, client, discussion, its final poll, its number, page path


@pytest.fixture
async def made(tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[Made]]]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        council_public_url=PUBLIC, council_web_secret="web-secret-for-tests-at-least-32-bytes")
    chat, clock = RecordingChat("console"), FakeClock()
    app = await build_app(settings, {"console": chat}, llm=ScriptedLLM(), clock=clock)
    async with TestClient(TestServer(application(Pages(page_links(settings), clock, app.store)))) as client:

        async def council(**flags: bool) -> Made:
            reply = await app.service.handle(c.StartDiscussion(
                topic="Postgres or MySQL for the new service?", flow="council", rounds=1, platform="console",
                channel="C1", user_id="U1", user_name="Dana", **flags))
            await app.driver.idle()
            did = reply.discussion_id
            async with app.store.tx() as tx:
                polls = await tx.polls(did)
            number, poll = next((n, p) for n, p in enumerate(polls, start=1) if p.final)
            for user, name, choice in (("U2", "Sam", 0), ("U3", "Ria", 1), ("U4", "Lee", 1)):
                await app.service.handle(c.CastBallot(in_channel="C1", poll_id=poll.id, choice=choice,
                                                      user_id=user, user_name=name))
            await app.driver.idle()
            header = next(s.post for s in chat.sent if s.post.kind == "header" and s.post.page_url
                          and f"/d/{did}?" in s.post.page_url)
            parts = urlsplit(header.page_url)
            return app, client, did, poll, number, f"{parts.path}?{parts.query}"

        yield council
    await app.close()


def read(body: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body)))


def csv_path(page: str, number: int) -> str:
    path, query = page.split("?")
    return f"{path}/poll/{number}.csv?{query}"


async def test_the_page_links_each_poll_to_its_results_as_csv_with_counts_and_names(
        made: Callable[..., Awaitable[Made]]) -> None:
    _, client, did, poll, number, page = await made()
    html = await (await client.get(page)).text()
    assert f"/d/{did}/poll/{number}.csv?" in html
    resp = await client.get(csv_path(page, number))
    assert resp.status == 200 and resp.content_type == "text/csv"
    assert f'filename="{did}-poll-{number}.csv"' in resp.headers["Content-Disposition"]
    rows = read(await resp.text())
    assert [r["option"] for r in rows] == poll.options and {r["question"] for r in rows} == {poll.question}
    assert [int(r["people"]) for r in rows[:2]] == [1, 2] and rows[0]["voters"] == "Sam"
    assert sorted(rows[1]["voters"].split("; ")) == ["Lee", "Ria"] and {r["status"] for r in rows} == {"open"}


async def test_a_forged_or_foreign_link_is_refused_and_a_missing_poll_is_not_found(
        made: Callable[..., Awaitable[Made]]) -> None:
    _, client, did, _, number, page = await made()
    _, _, other, _, _, other_page = await made()
    forged = csv_path(page, number).replace("sig=", "sig=0")
    assert (await client.get(forged)).status == 403
    assert (await client.get(csv_path(page, number).split("?")[0])).status == 403  # no signature at all
    foreign = csv_path(other_page, number).replace(f"/d/{other}/", f"/d/{did}/")  # another page's signature
    assert (await client.get(foreign)).status == 403
    assert (await client.get(csv_path(page, 99))).status == 404


async def test_an_anonymous_poll_gives_counts_without_names(made: Callable[..., Awaitable[Made]]) -> None:
    _, client, _, _, number, page = await made(anonymous=True)
    body = await (await client.get(csv_path(page, number))).text()
    rows = read(body)
    assert [int(r["people"]) for r in rows[:2]] == [1, 2]
    assert all(r["voters"] == "" for r in rows) and not any(n in body for n in ("Sam", "Ria", "Lee"))


async def test_a_hidden_poll_gives_nothing_until_it_closes(made: Callable[..., Awaitable[Made]]) -> None:
    app, client, did, poll, number, page = await made(hide_results=True)
    assert read(await (await client.get(csv_path(page, number))).text()) == []
    doc = await export(app.store, did)
    assert doc is not None and poll.question not in filing.folder(doc)["artifacts/polls.csv"]
    await app.service.handle(c.ClosePoll(in_channel="C1", poll_id=poll.id, user_id="U1", user_name="Dana"))
    await app.driver.idle()
    rows = read(await (await client.get(csv_path(page, number))).text())
    assert [int(r["people"]) for r in rows[:2]] == [1, 2] and {r["status"] for r in rows} == {"closed"}


async def test_the_exports_carry_every_poll_as_csv(made: Callable[..., Awaitable[Made]]) -> None:
    app, _, did, poll, number, _ = await made()
    doc = await export(app.store, did)
    assert doc is not None
    for files, name in ((filing.folder(doc), "artifacts/polls.csv"), (filing.flat(doc), "polls.csv")):
        text = files[name]
        assert isinstance(text, str)
        rows = [r for r in read(text) if r["poll"] == str(number)]
        assert [r["option"] for r in rows] == poll.options and rows[0]["voters"] == "Sam"
        assert {r["poll"] for r in read(text)} == {str(n) for n in range(1, len(doc["polls"]) + 1)}
