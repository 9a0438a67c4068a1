"""Digest rules through the service: members set daily, weekly or at most hourly digests; only the person who set
one, or an admin, replaces or cancels it; and a digest's model call is charged to its workspace."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.permissions import Refused
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)


@pytest.fixture
async def app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM) -> AsyncIterator[App]:
    s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    application = await build_app(s, {"console": chat}, llm=llm, clock=FakeClock(T0))
    yield application
    await application.close()


def digest(user: str = "U1", cadence: str = "cron", cron: str = "", **kw: Any) -> c.SetDigest:
    return c.SetDigest(user_id=user, platform="console", workspace="T1", channel="C1", in_channel="C1",
                       cadence=cadence, cron=cron, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("cron", ["* * * * *", "*/30 9 * * 1", "0,1 * * * *", "0-5 12 1 * *"])
async def test_a_member_cannot_set_a_digest_more_often_than_hourly(app: App, cron: str) -> None:
    with pytest.raises(Refused, match="at most one an hour"):
        await app.service.handle(digest(cron=cron))
    async with app.store.tx() as tx:
        assert await tx.find_schedule("digest", "console", "T1", "C1") is None


@pytest.mark.parametrize("cadence,cron", [("daily", ""), ("weekly", ""), ("cron", "15 * * * *"),
                                          ("cron", "0 9,17 * * 1-5"), ("cron", "@hourly")])
async def test_a_member_may_set_daily_weekly_or_hourly_digests(app: App, cadence: str, cron: str) -> None:
    assert "Digest scheduled" in (await app.service.handle(digest(cadence=cadence, cron=cron))).text


async def test_an_admin_may_set_any_cron(app: App) -> None:
    assert "Digest scheduled" in (await app.service.handle(digest(cron="* * * * *", is_admin=True))).text


async def test_only_who_set_a_digest_or_an_admin_replaces_or_cancels_it(app: App) -> None:
    await app.service.handle(digest(cadence="daily"))
    with pytest.raises(Refused, match="Only the person who set this digest or a workspace admin"):
        await app.service.handle(digest(user="U2", cadence="weekly"))
    with pytest.raises(Refused, match="Only the person who set this digest or a workspace admin"):
        await app.service.handle(digest(user="U2", cadence="off"))
    async with app.store.tx() as tx:
        s = await tx.find_schedule("digest", "console", "T1", "C1")
    assert s is not None and s.created_by == "U1" and s.trigger == "cron:0 9 * * *" and s.enabled
    assert "Digest scheduled" in (await app.service.handle(digest(cadence="weekly"))).text  # its owner may
    assert "Digest scheduled" in (await app.service.handle(digest(user="A1", cadence="daily", is_admin=True))).text
    assert (await app.service.handle(digest(user="A1", cadence="off", is_admin=True))).text == "Digest turned off."
    # Once off, anyone in the channel may set one again.
    assert "Digest scheduled" in (await app.service.handle(digest(user="U2", cadence="daily"))).text


async def test_a_digests_model_call_is_charged_to_its_workspace(app: App, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01
    await app.service.handle(c.StartDiscussion(topic="Trunk-based development?", platform="console", workspace="T1",
                                               channel="C1", in_channel="C1", user_id="U1", rounds=1))
    await app.driver.idle()
    await app.service.handle(digest(cadence="daily"))
    async with app.store.tx() as tx:
        before = await tx.workspace_spend("console", "T1", T0)
        s = await tx.find_schedule("digest", "console", "T1", "C1")
    assert s is not None and s.next_run_at is not None
    app.clock.set(s.next_run_at)  # type: ignore[attr-defined]
    assert await app.service.schedules.fire(s.id)
    await app.driver.idle()
    async with app.store.tx() as tx:
        after = await tx.workspace_spend("console", "T1", T0)
    assert after == pytest.approx(before + 0.01)
