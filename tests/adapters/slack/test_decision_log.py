"""The decision log from Slack: `/council decisions` and the Home tab hand each person the logs of the channels
Slack says they are in (users.conversations), a private channel's to its members only, and the workspace's to
admins; each link opens that log on the same server, and nothing of a private channel shows elsewhere."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import aiohttp
import pytest

from adapters.slack.server import SlackServer
from bot.settings import Settings
from bot.wiring import App, build_app, web_pages
from core.ports import ChatPort
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.skipping import skipping_config
from tests.adapters.slack.test_home import open_home, text_of
from tests.databases import migrated_sqlite_url
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

PUBLIC = "https://council.example.test"
PRIVATE_TOPIC = "Should we reorganise the platform team?"
PUBLIC_TOPIC = "Should we move to trunk-based development?"


@pytest.fixture
async def server(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> AsyncIterator[SlackServer]:
    """The Slack process as `python -m bot slack` runs it with pages configured: the log on the same port."""
    s = Settings(_env_file=None, database_url=migrated_sqlite_url(tmp_path), council_public_url=PUBLIC,  # type: ignore[call-arg]
                 council_web_secret="web-secret-for-tests-at-least-32-bytes")
    pages = web_pages(s)

    async def build(chats: Mapping[str, ChatPort]) -> App:
        app = await build_app(s, chats, llm=llm)
        pages.attach(app.store)
        return app

    srv = SlackServer(skipping_config(fake), build, routes=pages.routes())
    await srv.start()
    yield srv
    await srv.stop()


def logs_in(text: str) -> dict[str, str]:
    """The log links in a Slack message or view, by what they are (their label, or the channel beside them)."""
    out = {}
    for channel, url, label in re.findall(r"(?:<#(\w+)> )?<(https://council\.example\.test/log\?[^|>]+)\|([^>]+)>",
                                          text):
        out[channel or label] = html.unescape(url)
    return out


async def opened(server: SlackServer, url: str) -> str:
    local = url.replace(PUBLIC, f"http://127.0.0.1:{server.port}")
    async with aiohttp.ClientSession() as http, http.get(local) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.text()


async def test_each_person_gets_the_logs_slack_says_they_may_read(slack: Slack, server: SlackServer,
                                                                   fake: FakeSlack) -> None:
    fake.add_channel("G0001", private=True, member=True, people=["U0001", "UBOT"])
    fake.join("G0001", "U0001")
    fake.join("C0001", "U0001", "U0002", "U0003")
    await slack.command(f"{PRIVATE_TOPIC} --rounds 1", channel="G0001")
    await server.idle()
    await slack.command(f"{PUBLIC_TOPIC} --rounds 1", channel="C0001")
    await server.idle()

    await slack.command("decisions", user="U0001", channel="G0001")
    await server.idle()
    member = logs_in(fake.ephemerals[-1]["text"])
    assert list(member) == ["Browse this channel's decision log"]
    private_log = await opened(server, member["Browse this channel's decision log"])
    assert PRIVATE_TOPIC in private_log and PUBLIC_TOPIC not in private_log

    await slack.command("decisions", user="U0002", channel="C0001")
    await server.idle()
    other = logs_in(fake.ephemerals[-1]["text"])
    assert list(other) == ["Browse this channel's decision log"], "no workspace log for a member"
    public_log = await opened(server, other["Browse this channel's decision log"])
    assert PUBLIC_TOPIC in public_log and PRIVATE_TOPIC not in public_log

    await slack.command("decisions", user="U0003", channel="C0001")  # an admin, not in the private channel
    await server.idle()
    admin = logs_in(fake.ephemerals[-1]["text"])
    assert sorted(admin) == ["Browse the workspace's decision log", "Browse this channel's decision log"]
    workspace = await opened(server, admin["Browse the workspace's decision log"])
    assert PUBLIC_TOPIC in workspace and PRIVATE_TOPIC not in workspace
    searched = await opened(server, admin["Browse the workspace's decision log"] + "&q=reorganise")
    assert "platform team" not in searched

    home = logs_in(text_of(await open_home(slack, server, "U0001")))
    assert sorted(home) == ["C0001", "G0001"], "the Home links the logs of the channels Slack says they are in"
    assert PRIVATE_TOPIC in await opened(server, home["G0001"])
    assert sorted(logs_in(text_of(await open_home(slack, server, "U0002")))) == ["C0001"]
    assert "the whole workspace's log" in logs_in(text_of(await open_home(slack, server, "U0003")))
