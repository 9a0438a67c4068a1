"""A multi-workspace install reads its workspace's token from the database once a while, not once per Web API
call, and asks Slack who it is (auth.test) once per token, not once per request; an uninstall is seen at once by
the process that handles it and within the cache's lifetime by the others."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest
from cryptography.fernet import Fernet
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from sqlalchemy import event

from adapters.slack.installs import ExpiringInstallations, SealedInstallations
from adapters.slack.server import SlackServer
from core.storage.db import make_engine, migrate
from core.storage.sealing import Sealer
from tests.adapters.slack.conftest import Slack, fixture
from tests.adapters.slack.test_secrets_at_rest import CLIENT, bot, install, oauth_server  # noqa: F401 (a fixture)
from tests.fakes.slack_api import FakeSlack


async def test_posts_read_the_workspace_token_once_and_requests_ask_slack_who_the_app_is_once(
    oauth_server: SlackServer, fake: FakeSlack  # noqa: F811
) -> None:
    assert oauth_server.core is not None
    reads: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "slack_bots" in statement or "slack_installations" in statement:
            reads.append(statement)

    event.listen(oauth_server.core.store.engine.sync_engine, "before_cursor_execute", count)
    async with aiohttp.ClientSession() as session:
        await install(oauth_server, session)
        reads.clear()  # the install itself writes and reads the rows
        slack = Slack(f"http://127.0.0.1:{oauth_server.port}/slack/events", session, fake)
        first: list[str] = []
        asked: list[int] = []  # auth.test calls after each discussion
        for topic in ("Open a Lisbon office?", "Move the standup to 10:00?"):
            form = fixture("slash_command") | {"team_id": "T0002", "text": f"{topic} --rounds 1"}
            assert (await slack.post(urlencode(form), "application/x-www-form-urlencoded"))[0] == 200
            await oauth_server.idle()
            first = first or list(reads)
            asked.append(len(fake.called("auth.test")))
    posts = fake.called("chat.postMessage") + fake.called("chat.update")
    assert len(posts) >= 20 and {p.token for p in posts} == {"xoxb-installed"}
    # The first discussion looks each row up once (the bot, the workspace's installation, the person's); the
    # second, with as many posts again, reads nothing more.
    assert 0 < len(first) <= 3 and len(reads) == len(first), f"{len(reads)} reads for {len(posts)} posts"
    assert asked[0] == asked[1]


class Counting(AsyncInstallationStore):
    """An installation store that counts its reads: one workspace, T0002."""

    def __init__(self) -> None:
        self.bot: Bot | None = Bot(team_id="T0002", bot_token="xoxb-one", bot_id="B1", bot_user_id="UB1",
                                   installed_at=1.0)
        self.reads = 0
        self.people = 0  # reads of a person's installation (nobody here has one)

    async def async_save(self, installation: Installation) -> None:
        self.bot = installation.to_bot()

    async def async_find_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                      user_id: str | None = None, is_enterprise_install: bool | None = False
                                      ) -> Installation | None:
        self.people += 1
        return None

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        self.reads += 1
        return self.bot if self.bot is not None and team_id == self.bot.team_id else None

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self.bot = None


@pytest.fixture
def clock() -> list[float]:
    return [100.0]


@pytest.fixture
def store(clock: list[float]) -> tuple[Counting, ExpiringInstallations]:
    inner = Counting()
    return inner, ExpiringInstallations(inner, ttl_s=60.0, monotonic=lambda: clock[0])


async def test_a_token_is_read_again_once_the_cache_has_lived_its_time(
    store: tuple[Counting, ExpiringInstallations], clock: list[float]
) -> None:
    inner, cached = store
    for _ in range(5):
        assert (bot := await cached.async_find_bot(enterprise_id=None, team_id="T0002")) and bot.bot_token == "xoxb-one"
    assert inner.reads == 1
    clock[0] += 59.0
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")
    assert inner.reads == 1
    inner.bot = None  # another replica handled the uninstall
    clock[0] += 1.0
    assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is None
    assert inner.reads == 2


async def test_an_uninstall_handled_here_is_seen_at_once(store: tuple[Counting, ExpiringInstallations]) -> None:
    inner, cached = store
    assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is not None
    await cached.async_delete_bot(enterprise_id=None, team_id="T0002")
    assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is None
    assert inner.reads == 2


async def test_once_its_time_is_up_the_cache_keeps_its_tokens_while_the_stored_installations_read_the_same(
    store: tuple[Counting, ExpiringInstallations], clock: list[float]
) -> None:
    """A process serving hundreds of workspaces read and decrypted every token again each minute; one look at what
    is stored now tells whether any changed."""
    inner, _ = store
    version = [1]
    looks: list[float] = []

    async def stored() -> int:
        looks.append(clock[0])
        return version[0]

    cached = ExpiringInstallations(inner, ttl_s=60.0, monotonic=lambda: clock[0], version=stored)
    assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is not None
    for _ in range(3):  # minutes in which nothing was installed, refreshed or removed anywhere
        clock[0] += 60.0
        for _ in range(5):
            assert (bot := await cached.async_find_bot(enterprise_id=None, team_id="T0002"))
            assert bot.bot_token == "xoxb-one"
            assert await cached.async_find_installation(enterprise_id=None, team_id="T0002", user_id="U1") is None
    # Read again once: the first look knows nothing to compare with.
    assert (inner.reads, inner.people, len(looks)) == (2, 1, 3)
    inner.bot = Bot(team_id="T0002", bot_token="xoxb-two", bot_id="B1", bot_user_id="UB1", installed_at=1.0)
    version[0] = 2  # another replica refreshed the token
    clock[0] += 59.0
    assert (bot := await cached.async_find_bot(enterprise_id=None, team_id="T0002")) and bot.bot_token == "xoxb-one"
    clock[0] += 1.0
    assert (bot := await cached.async_find_bot(enterprise_id=None, team_id="T0002")) and bot.bot_token == "xoxb-two"
    inner.bot = None
    version[0] = 3  # and another uninstalled the app
    clock[0] += 60.0
    assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is None
    assert len(looks) == 5


async def test_the_stored_installations_read_otherwise_after_any_install_refresh_or_removal_by_any_process(
        tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    await migrate(engine)
    key = Fernet.generate_key().decode()
    here, there = (SealedInstallations(Sealer.from_keys(key), client_id=CLIENT, engine=engine) for _ in range(2))
    await here.create_tables()
    seen = [await here.async_version()]

    async def changed() -> bool:
        seen.append(await here.async_version())
        return seen[-1] != seen[-2]

    await there.async_save_bot(bot("xoxb-first"))
    assert await changed()
    assert not await changed(), "nothing stored changed"
    await there.async_save_bot(bot("xoxb-refreshed"))  # the same installation's row, its token refreshed in place
    assert await changed()
    await there.async_save(Installation(app_id="A1", enterprise_id=None, team_id="T0009", user_id="U1",
                                        user_token="xoxp-person", installed_at=1_700_000_001.0))
    assert await changed()
    await there.async_delete_installation(enterprise_id=None, team_id="T0009", user_id="U1")
    assert await changed()
    await there.async_delete_bot(enterprise_id=None, team_id="T0009")
    assert await changed()
    assert not await changed()
    await engine.dispose()


class Rows(AsyncInstallationStore):
    """Bots by workspace; while `gate` is closed a find holds what it read (an answer on its way)."""

    def __init__(self) -> None:
        self.bots: dict[str, Bot] = {}
        self.gate = asyncio.Event()
        self.gate.set()

    async def async_save(self, installation: Installation) -> None:
        raise NotImplementedError

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        found = self.bots.get(team_id or "")
        await self.gate.wait()
        return found


def token(team: str, value: str) -> Bot:
    return Bot(team_id=team, bot_token=value, bot_id="B1", bot_user_id="UB1", installed_at=1.0)


async def test_a_token_read_before_the_cache_was_emptied_is_read_again_at_the_next_check(clock: list[float]) -> None:
    """A find on its way while the cache is emptied puts back what it read before: the rows may have changed
    since, so the next check empties the cache even though the rows have not changed again."""
    rows, version = Rows(), [1]

    async def stored() -> int:
        return version[0]

    cached = ExpiringInstallations(rows, ttl_s=60.0, monotonic=lambda: clock[0], version=stored)
    rows.bots["T0002"] = token("T0002", "xoxb-two")
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")
    clock[0] += 60.0
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")  # the first check: version 1 from now on
    rows.bots["T0003"] = token("T0003", "xoxb-three-old")
    rows.gate.clear()
    on_its_way = asyncio.create_task(cached.async_find_bot(enterprise_id=None, team_id="T0003"))
    await asyncio.sleep(0)
    rows.bots["T0003"], version[0] = token("T0003", "xoxb-three-new"), 2  # another replica refreshed it
    clock[0] += 60.0
    rows.gate.set()
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")  # the check: version 2, the cache emptied
    assert (late := await on_its_way) is not None and late.bot_token == "xoxb-three-old"  # read before the change
    clock[0] += 60.0  # nothing changed since: version 2 again
    assert (bot := await cached.async_find_bot(enterprise_id=None, team_id="T0003"))
    assert bot.bot_token == "xoxb-three-new"


async def test_a_look_that_fails_empties_the_cache_and_the_find_reads_its_row_instead(
    store: tuple[Counting, ExpiringInstallations], clock: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    """The look is a shortcut: when it fails (the database hiccups), the token is read as it would be without it,
    and the Web API call that needed it goes ahead."""
    inner, _ = store
    failing = [False]

    async def stored() -> int:
        if failing[0]:
            raise ConnectionError("the database is restarting")
        return 1

    cached = ExpiringInstallations(inner, ttl_s=60.0, monotonic=lambda: clock[0], version=stored)
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")
    clock[0] += 60.0
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")  # the first look: version 1
    inner.bot = token("T0002", "xoxb-refreshed")  # written while the database could not be looked at
    failing[0] = True
    clock[0] += 60.0
    assert (bot := await cached.async_find_bot(enterprise_id=None, team_id="T0002"))
    assert bot.bot_token == "xoxb-refreshed" and inner.reads == 3
    assert "could not look" in caplog.text
