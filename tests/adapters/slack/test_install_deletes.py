"""A removal through the expiring cache reaches the stored installations for exactly the workspace (and person) it
names, and the cache forgets what it held, on every kind of removal."""

from __future__ import annotations

import pytest
from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore

from adapters.slack.installs import ExpiringInstallations


class Removals(AsyncInstallationStore):
    """Stored installations that note each removal asked of them, and count their reads (one bot, always there)."""

    def __init__(self) -> None:
        self.removed: list[tuple[str, str | None, str | None, str | None]] = []
        self.reads = 0

    async def async_save(self, installation: Installation) -> None:
        raise AssertionError("nothing is saved here")

    async def async_find_bot(self, *, enterprise_id: str | None, team_id: str | None,
                             is_enterprise_install: bool | None = False) -> Bot | None:
        self.reads += 1
        return Bot(enterprise_id=enterprise_id, team_id=team_id, bot_token="xoxb-one", bot_id="B1",
                   bot_user_id="UB1", installed_at=1.0)

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self.removed.append(("bot", enterprise_id, team_id, None))

    async def async_delete_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                        user_id: str | None = None) -> None:
        self.removed.append(("installation", enterprise_id, team_id, user_id))

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self.removed.append(("all", enterprise_id, team_id, None))


@pytest.fixture
def stores() -> tuple[Removals, ExpiringInstallations]:
    inner = Removals()
    return inner, ExpiringInstallations(inner, ttl_s=3600.0, monotonic=lambda: 100.0)


async def cached_bot(inner: Removals, cached: ExpiringInstallations) -> None:
    """The grid's bot read once and held: a second find does not read."""
    for _ in range(2):
        assert await cached.async_find_bot(enterprise_id="E1", team_id="T2") is not None
    assert inner.reads == 1


async def test_removing_a_bot_removes_that_workspaces_bot_and_forgets_the_cache(
    stores: tuple[Removals, ExpiringInstallations]
) -> None:
    inner, cached = stores
    await cached_bot(inner, cached)
    await cached.async_delete_bot(enterprise_id="E1", team_id="T2")
    assert inner.removed == [("bot", "E1", "T2", None)]
    await cached.async_find_bot(enterprise_id="E1", team_id="T2")
    assert inner.reads == 2, "a removed bot's token was still served from the cache"


async def test_removing_a_persons_installation_removes_only_theirs_and_forgets_the_cache(
    stores: tuple[Removals, ExpiringInstallations]
) -> None:
    inner, cached = stores
    await cached_bot(inner, cached)
    await cached.async_delete_installation(enterprise_id="E1", team_id="T2", user_id="U3")
    await cached.async_delete_installation(enterprise_id="E1", team_id="T2")  # the workspace's, nobody's
    assert inner.removed == [("installation", "E1", "T2", "U3"), ("installation", "E1", "T2", None)]
    await cached.async_find_bot(enterprise_id="E1", team_id="T2")
    assert inner.reads == 2


async def test_removing_all_of_a_workspace_removes_that_workspaces_and_forgets_the_cache(
    stores: tuple[Removals, ExpiringInstallations]
) -> None:
    inner, cached = stores
    await cached_bot(inner, cached)
    await cached.async_delete_all(enterprise_id="E1", team_id="T2")
    assert inner.removed == [("all", "E1", "T2", None)]
    await cached.async_find_bot(enterprise_id="E1", team_id="T2")
    assert inner.reads == 2
