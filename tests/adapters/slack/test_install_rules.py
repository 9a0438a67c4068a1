"""The installation store's rules: what the cache remembers and for how long, how tokens are read and resealed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from cryptography.fernet import Fernet
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from sqlalchemy import MetaData, text

from adapters.slack.installs import ExpiringInstallations, SealedInstallations, reseal
from core.storage.db import make_engine, migrate
from core.storage.sealing import BadKey, Sealer
from tests.adapters.slack.test_secrets_at_rest import CLIENT, bot


def person(user: str, token: str, bot_token: str = "xoxb-one", at: float = 1_700_000_000.0) -> Installation:
    return Installation(app_id="A1", enterprise_id=None, team_id="T0002", user_id=user, user_token=token,
                        bot_token=bot_token, bot_id="B1", bot_user_id="UB1", bot_scopes="chat:write",
                        installed_at=at)


class People(AsyncInstallationStore):
    """An installation store for one workspace, T0002, that counts its reads: a bot and the people who installed
    with a user token."""

    def __init__(self) -> None:
        self.bot: Bot | None = Bot(team_id="T0002", bot_token="xoxb-one", bot_id="B1", bot_user_id="UB1",
                                   installed_at=1.0)
        self.people: dict[str, Installation] = {}
        self.reads = 0

    async def async_save(self, installation: Installation) -> None:
        self.bot = installation.to_bot()
        if installation.user_id is not None:
            self.people[installation.user_id] = installation

    async def async_save_bot(self, bot: Bot) -> None:
        self.bot = bot

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        self.reads += 1
        return self.bot if self.bot is not None and team_id == self.bot.team_id else None

    async def async_find_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                      user_id: str | None = None,
                                      is_enterprise_install: bool | None = False) -> Installation | None:
        self.reads += 1
        return self.people.get(user_id or "") if team_id == "T0002" else None


@pytest.fixture
def clock() -> list[float]:
    return [100.0]


@pytest.fixture
def store(clock: list[float]) -> tuple[People, ExpiringInstallations]:
    inner = People()
    inner.people["U1"] = person("U1", "xoxp-u1")
    return inner, ExpiringInstallations(inner, ttl_s=60.0, monotonic=lambda: clock[0])


async def find(cached: ExpiringInstallations, user: str) -> Installation | None:
    # As Bolt asks for the installation of the person who acts.
    return await cached.async_find_installation(enterprise_id=None, team_id="T0002", user_id=user,
                                                is_enterprise_install=False)


async def test_a_person_who_installed_is_found_through_the_cache_and_read_once(
    store: tuple[People, ExpiringInstallations]
) -> None:
    inner, cached = store
    for _ in range(3):
        assert (found := await find(cached, "U1")) is not None and found.user_token == "xoxp-u1"
    assert inner.reads == 1


async def test_a_person_without_an_installation_is_looked_up_once_not_on_every_click(
    store: tuple[People, ExpiringInstallations]
) -> None:
    inner, cached = store
    for _ in range(3):
        assert await find(cached, "U2") is None
    assert inner.reads == 1


async def test_one_persons_missing_installation_does_not_hide_anothers(
    store: tuple[People, ExpiringInstallations]
) -> None:
    inner, cached = store
    assert await find(cached, "U2") is None
    assert (found := await find(cached, "U1")) is not None and found.user_token == "xoxp-u1"
    assert await find(cached, "U2") is None
    assert inner.reads == 2  # each person once


async def test_a_remembered_miss_is_forgotten_when_the_cache_expires(
    store: tuple[People, ExpiringInstallations], clock: list[float]
) -> None:
    inner, cached = store
    assert await find(cached, "U2") is None
    inner.people["U2"] = person("U2", "xoxp-u2")  # installed through another replica
    clock[0] += 59.0
    assert await find(cached, "U2") is None
    clock[0] += 1.0
    assert (found := await find(cached, "U2")) is not None and found.user_token == "xoxp-u2"


async def test_the_cache_empties_every_time_its_lifetime_passes_not_only_the_first(
    store: tuple[People, ExpiringInstallations], clock: list[float]
) -> None:
    inner, cached = store
    for expected_reads in (1, 2, 3, 4):
        assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is not None
        assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is not None
        assert inner.reads == expected_reads
        clock[0] += 60.0


async def test_by_default_the_cache_lives_one_minute(clock: list[float]) -> None:
    inner = People()
    cached = ExpiringInstallations(inner, monotonic=lambda: clock[0])
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")
    clock[0] += 59.9
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")
    assert inner.reads == 1
    clock[0] += 0.1
    await cached.async_find_bot(enterprise_id=None, team_id="T0002")
    assert inner.reads == 2


async def test_a_bot_saved_here_is_stored_and_its_token_used_at_once(
    store: tuple[People, ExpiringInstallations]
) -> None:
    inner, cached = store
    assert (old := await cached.async_find_bot(enterprise_id=None, team_id="T0002")) and old.bot_token == "xoxb-one"
    await cached.async_save_bot(Bot(team_id="T0002", bot_token="xoxb-two", bot_id="B1", bot_user_id="UB1",
                                    installed_at=2.0))
    assert inner.bot is not None and inner.bot.bot_token == "xoxb-two"
    assert (new := await cached.async_find_bot(enterprise_id=None, team_id="T0002")) and new.bot_token == "xoxb-two"


async def test_a_persons_installation_carries_the_workspaces_latest_bot_token_in_clear(tmp_path: Path) -> None:
    # Slack's store copies the latest bot's token into a person's installation through async_find_bot, which has
    # decrypted it already: decrypting it again would refuse it as ciphertext under no key.
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    await migrate(engine)
    sealed = SealedInstallations(Sealer.from_keys(Fernet.generate_key().decode()), client_id=CLIENT, engine=engine)
    await sealed.create_tables()
    await sealed.async_save(person("U1", "xoxp-u1", bot_token="xoxb-first"))
    # A minute later U2 reinstalls the app: the workspace's bot gets a new token.
    await sealed.async_save(person("U2", "xoxp-u2", bot_token="xoxb-reinstalled", at=1_700_000_060.0))
    found = await sealed.async_find_installation(enterprise_id=None, team_id="T0002", user_id="U1")
    assert found is not None and (found.user_token, found.bot_token) == ("xoxp-u1", "xoxb-reinstalled")
    await engine.dispose()


async def test_a_reseal_reencrypts_the_bots_tokens_where_there_is_no_installations_table(tmp_path: Path) -> None:
    # Each table is resealed if it exists: one that does not stops nothing.
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    meta = MetaData()
    SealedInstallations.build_bots_table(meta, "slack_bots")
    async with engine.begin() as conn:
        await conn.run_sync(meta.create_all)
    await SealedInstallations(Sealer.from_keys(old), client_id=CLIENT, engine=engine).async_save_bot(
        bot("xoxb-rotate-me"))
    assert await reseal(engine, Sealer.from_keys(f"{new},{old}")) == 1
    only_new = SealedInstallations(Sealer.from_keys(new), client_id=CLIENT, engine=engine)
    assert (found := await only_new.async_find_bot(enterprise_id=None, team_id="T0009")) is not None
    assert found.bot_token == "xoxb-rotate-me"
    await engine.dispose()


async def test_a_reseal_that_meets_a_token_no_key_reads_names_its_table_column_and_row(tmp_path: Path) -> None:
    """The operator is told which credential lacks its key: the row's id, not a token's ciphertext."""
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    meta = MetaData()
    SealedInstallations.build_bots_table(meta, "slack_bots")
    async with engine.begin() as conn:
        await conn.run_sync(meta.create_all)
    stored = SealedInstallations(Sealer.from_keys(old), client_id=CLIENT, engine=engine)
    for team in ("T0008", "T0009"):
        await stored.async_save_bot(bot("xoxb-rotate-me", team))
    async with engine.connect() as conn:
        first = min((await conn.execute(text("SELECT id FROM slack_bots"))).scalars())
    with pytest.raises(BadKey) as refused:
        await reseal(engine, Sealer.from_keys(new))  # the old key forgotten
    await engine.dispose()
    assert str(refused.value).startswith(f"slack_bots.bot_token of row {first} is not sealed"), str(refused.value)


async def test_a_look_that_fails_is_logged_with_its_error(clock: list[float], caplog: pytest.LogCaptureFixture) -> None:
    async def stored() -> int:
        raise ConnectionError("the database is restarting")

    cached = ExpiringInstallations(People(), ttl_s=60.0, monotonic=lambda: clock[0], version=stored)
    clock[0] += 60.0
    with caplog.at_level(logging.WARNING, logger="adapters.slack.installs"):
        assert await cached.async_find_bot(enterprise_id=None, team_id="T0002") is not None
    [warned] = caplog.records
    assert (warned.levelno, warned.getMessage()) == (
        logging.WARNING, "could not look at the stored installations; reading each token again")
    assert warned.exc_info is not None and isinstance(warned.exc_info[1], ConnectionError)
