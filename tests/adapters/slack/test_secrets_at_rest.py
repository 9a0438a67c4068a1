"""Workspace tokens from the OAuth install are stored encrypted (Fernet, COUNCIL_ENCRYPTION_KEY), read back for
use, re-encrypted under a new key, encrypted by the migration where an older release stored them in clear, and
no install runs without a key."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from cryptography.fernet import Fernet
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from sqlalchemy import text

from adapters.slack.installs import MissingKey, SealedInstallations, reseal
from adapters.slack.server import SlackServer
from bot.wiring import build_app
from core.storage.db import make_engine, migrate
from core.storage.sealing import BadKey, Sealer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, fixture, settings
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

KEY = Fernet.generate_key().decode()
CLIENT = "1234.5678"


@pytest.fixture
async def oauth_server(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackServer]:
    s = settings(tmp_path)
    srv = SlackServer(skipping_config(fake, bot_token="", client_id=CLIENT, client_secret="c0ffee-client-secret",
                             encryption_key=KEY), lambda chats: build_app(s, chats, llm=ScriptedLLM()))
    await srv.start()
    yield srv
    await srv.stop()


async def install(server: SlackServer, session: aiohttp.ClientSession) -> None:
    base = f"http://127.0.0.1:{server.port}"
    async with session.get(f"{base}/slack/install") as resp:
        page = await resp.text()
        cookie = resp.cookies["slack-app-oauth-state"].value
    state = re.search(r"state=([\w-]+)", page)
    assert state
    async with session.get(f"{base}/slack/oauth_redirect", params={"code": "good-code", "state": state.group(1)},
                           headers={"Cookie": f"slack-app-oauth-state={cookie}"}) as resp:
        assert resp.status == 200, await resp.text()


async def test_an_installed_token_is_stored_encrypted_and_used_in_clear(
    oauth_server: SlackServer, fake: FakeSlack
) -> None:
    async with aiohttp.ClientSession() as session:
        await install(oauth_server, session)
        slack = Slack(f"http://127.0.0.1:{oauth_server.port}/slack/events", session, fake)
        form = fixture("slash_command") | {"team_id": "T0002", "text": "Open a Lisbon office? --rounds 1"}
        assert (await slack.post(urlencode(form), "application/x-www-form-urlencoded"))[0] == 200
        await oauth_server.idle()
    assert oauth_server.core is not None
    async with oauth_server.core.store.engine.connect() as conn:
        stored = [row[0] for row in await conn.execute(text("SELECT bot_token FROM slack_bots"))]
        stored += [row[0] for row in await conn.execute(text("SELECT bot_token FROM slack_installations"))]
    assert stored and all(token and "xoxb" not in token for token in stored), stored
    assert {Fernet(KEY.encode()).decrypt(token.encode()).decode() for token in stored} == {"xoxb-installed"}
    assert {p.token for p in fake.called("chat.postMessage")} == {"xoxb-installed"}  # read back in clear


async def test_oauth_without_a_key_refuses_to_start_and_says_why(fake: FakeSlack, tmp_path: Path) -> None:
    s = settings(tmp_path)
    srv = SlackServer(skipping_config(fake, bot_token="", client_id=CLIENT, client_secret="c0ffee-client-secret"),
                      lambda chats: build_app(s, chats, llm=ScriptedLLM()))
    with pytest.raises(MissingKey, match="COUNCIL_ENCRYPTION_KEY"):
        await srv.start()
    await srv.stop()


def bot(token: str, team: str = "T0009") -> Bot:
    return Bot(app_id="A1", enterprise_id=None, team_id=team, bot_token=token, bot_id="B1", bot_user_id="UB",
               bot_scopes="chat:write", installed_at=1_700_000_000.0)


async def test_a_key_is_rotated_by_resealing_every_stored_token(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    await migrate(engine)
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    store = SealedInstallations(Sealer.from_keys(old), client_id=CLIENT, engine=engine)
    await store.create_tables()
    await store.async_save_bot(bot("xoxb-rotate-me"))
    both = SealedInstallations(Sealer.from_keys(f"{new},{old}"), client_id=CLIENT, engine=engine)
    assert (await both.async_find_bot(enterprise_id=None, team_id="T0009")).bot_token == "xoxb-rotate-me"  # type: ignore[union-attr]
    assert await reseal(engine, Sealer.from_keys(f"{new},{old}")) == 1
    only_new = SealedInstallations(Sealer.from_keys(new), client_id=CLIENT, engine=engine)
    assert (await only_new.async_find_bot(enterprise_id=None, team_id="T0009")).bot_token == "xoxb-rotate-me"  # type: ignore[union-attr]
    await engine.dispose()


async def test_the_migration_encrypts_tokens_an_older_release_stored_in_clear(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    engine = make_engine(url)
    async with engine.begin() as conn:  # the schema as the release before this one left it
        await conn.run_sync(lambda sync: _upgrade_to(sync, "0006"))
    plain = AsyncSQLAlchemyInstallationStore(client_id=CLIENT, engine=engine)
    await plain.create_tables()
    await plain.async_save(Installation(app_id="A1", enterprise_id=None, team_id="T0009", user_id="U1",
                                        bot_token="xoxb-in-clear", bot_id="B1", bot_user_id="UB",
                                        bot_scopes="chat:write", user_token="xoxp-in-clear",
                                        installed_at=1_700_000_000.0))
    monkeypatch.delenv("COUNCIL_ENCRYPTION_KEY", raising=False)
    with pytest.raises(Exception, match="COUNCIL_ENCRYPTION_KEY"):  # refused, not left in clear silently
        await migrate(engine)
    monkeypatch.setenv("COUNCIL_ENCRYPTION_KEY", KEY)
    await migrate(engine)
    async with engine.connect() as conn:
        rows = [tuple(r) for r in await conn.execute(text("SELECT bot_token, user_token FROM slack_installations"))]
        rows += [(r[0], None) for r in await conn.execute(text("SELECT bot_token FROM slack_bots"))]
    values = [str(value) for row in rows for value in row if value is not None]
    assert values and all(v.startswith("gAAAAA") and "-in-clear" not in v for v in values)
    sealed = SealedInstallations(Sealer.from_keys(KEY), client_id=CLIENT, engine=engine)
    found = await sealed.async_find_installation(enterprise_id=None, team_id="T0009")
    assert found is not None and found.bot_token == "xoxb-in-clear" and found.user_token == "xoxp-in-clear"
    await engine.dispose()


def _upgrade_to(connection, revision: str) -> None:  # type: ignore[no-untyped-def]
    from alembic import command

    from core.storage.db import _alembic_config

    command.upgrade(_alembic_config(connection), revision)


def test_a_reseal_without_the_old_key_refuses_to_write_and_says_which_key_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from bot import __main__ as cli

    url = f"sqlite:///{tmp_path / 'c.db'}"
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()

    async def stored(setup: bool) -> list[tuple[object, ...]]:
        engine = make_engine(url)
        try:
            if setup:
                await migrate(engine)
                store = SealedInstallations(Sealer.from_keys(old), client_id=CLIENT, engine=engine)
                await store.create_tables()
                await store.async_save_bot(bot("xoxb-rotate-me"))
            async with engine.connect() as conn:
                return [tuple(r) for r in await conn.execute(text("SELECT id, bot_token FROM slack_bots"))]
        finally:
            await engine.dispose()

    before = asyncio.run(stored(True))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.setenv("COUNCIL_ENCRYPTION_KEY", new)  # the old key forgotten
    result = CliRunner().invoke(cli.cli, ["reseal"])
    said = " ".join(result.output.split())
    assert result.exit_code == 2, (result.exit_code, result.exception, said)
    assert "slack_bots" in said and "not sealed under any key in COUNCIL_ENCRYPTION_KEY" in said
    assert '"new,old"' in said and "now encrypted" not in said
    assert asyncio.run(stored(False)) == before, "nothing was written"


async def test_a_token_that_cannot_be_decrypted_is_never_used(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    await migrate(engine)
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    store = SealedInstallations(Sealer.from_keys(old), client_id=CLIENT, engine=engine)
    await store.create_tables()
    await store.async_save(Installation(app_id="A1", team_id="T0009", user_id="U1", bot_token="xoxb-secret",
                                        bot_id="B1", bot_user_id="UB", bot_scopes="chat:write",
                                        installed_at=1_700_000_000.0))
    only_new = SealedInstallations(Sealer.from_keys(new), client_id=CLIENT, engine=engine)
    with pytest.raises(BadKey, match="COUNCIL_ENCRYPTION_KEY"):
        await only_new.async_find_installation(enterprise_id=None, team_id="T0009")
    with pytest.raises(BadKey, match="COUNCIL_ENCRYPTION_KEY"):
        await only_new.async_find_bot(enterprise_id=None, team_id="T0009")
    await engine.dispose()


async def test_a_reseal_encrypts_tokens_left_in_clear_whatever_their_length(tmp_path: Path) -> None:
    # A token in clear is told from ciphertext by its form: a short one is not base64 at all, and a rotating
    # token decodes to enough bytes for a Fernet token but without its version byte. Taken for ciphertext, either
    # would stop the reseal as if its key were missing.
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    await migrate(engine)
    plain = AsyncSQLAlchemyInstallationStore(client_id=CLIENT, engine=engine)
    await plain.create_tables()
    rotating = ("xoxe.xoxp-1-Mi0yLTEyMzQ1Njc4OTAtMTIzNDU2Nzg5MDEyMy0xMjM0NTY3ODkwMTIzNC1hYmNkZWYwMTIzNDU2Nzg5YWJjZG"
                "VmMDEyMzQ1Njc4OQMDA")
    await plain.async_save(Installation(app_id="A1", enterprise_id=None, team_id="T0009", user_id="U1",
                                        bot_token="xoxb-in-clear", bot_id="B1", bot_user_id="UB",
                                        bot_scopes="chat:write", user_token=rotating,
                                        installed_at=1_700_000_000.0))
    assert await reseal(engine, Sealer.from_keys(KEY)) == 2  # the installation's row and the bot's
    async with engine.connect() as conn:
        rows = [tuple(r) for r in await conn.execute(text("SELECT bot_token, user_token FROM slack_installations"))]
    # Each is ciphertext (Fernet's, whose version byte reads "gAAAAA"), none the token: random ciphertext may hold
    # "xox" by chance (a CI run saw it), so the tokens themselves are looked for.
    values = [str(value) for row in rows for value in row]
    assert values and all(v.startswith("gAAAAA") and "xoxb-in-clear" not in v and rotating not in v for v in values)
    sealed = SealedInstallations(Sealer.from_keys(KEY), client_id=CLIENT, engine=engine)
    found = await sealed.async_find_installation(enterprise_id=None, team_id="T0009")
    assert found is not None and found.bot_token == "xoxb-in-clear" and found.user_token == rotating
    await engine.dispose()
