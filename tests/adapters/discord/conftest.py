"""Discord fixtures: the fake Discord, and the real app plus discord.py client connected to it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from adapters.discord.chat import DiscordChat
from adapters.discord.client import CouncilClient, DiscordConfig, build_client
from bot.settings import Settings
from bot.wiring import App, build_app
from core.deliberation.offline import OfflineLLM
from core.models import Discussion, Usage
from core.ports import Completion, Prompt, T, TextSink
from tests.databases import migrated_sqlite_url
from tests.fakes import discord_payloads as p
from tests.fakes.discord_api import FakeDiscord, Interaction

TOKEN = "test-token"
SETTLE_GUARD_S = 60.0  # only ends a wait that would hang: settling is awaited, never timed


class RecordingLLM(OfflineLLM):
    """The offline model, keeping each prompt so tests can see what reached the council."""

    def __init__(self) -> None:
        super().__init__()
        self.prompts: list[Prompt] = []

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        self.prompts.append(prompt)
        return await super().complete(prompt, on_text)

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        self.prompts.append(prompt)
        return await super().structured(prompt, schema)


@dataclass
class Council:
    fake: FakeDiscord
    app: App
    client: CouncilClient
    chat: DiscordChat
    llm: RecordingLLM

    async def discussion(self) -> Discussion:
        async with self.app.store.tx() as tx:
            items = await tx.discussions()
        assert items, "no discussion was started"
        return items[0]

    async def settle(self) -> None:
        """Let the app finish everything it can do without a human: every gateway event the fake sent is read and
        handled, and the drivers are idle. The client starts a frame's handler tasks as it parses it, before it
        answers the heartbeat asked after it, and the fake reads that answer a loop turn later: by then each task
        has taken its first step, which counts it in the handlers' `in_flight`. What the drivers post may bring
        more events: until a pass brings none."""
        async with asyncio.timeout(SETTLE_GUARD_S):
            while True:
                await self.fake.delivered()
                await self.client.settled()
                if self.fake.all_read():
                    return


def settings_for(fake: FakeDiscord, tmp_path: Path, **overrides: Any) -> Settings:
    return Settings(_env_file=None, database_url=migrated_sqlite_url(tmp_path),  # type: ignore[call-arg]
                    discord_token=TOKEN, discord_api_url=fake.api_url, anthropic_api_key=None, **overrides)


@contextlib.asynccontextmanager
async def running(fake: FakeDiscord, tmp_path: Path, **kw: Any) -> AsyncIterator[Council]:
    llm = kw.pop("llm", None) or RecordingLLM()
    chat = DiscordChat()
    app = await build_app(settings_for(fake, tmp_path, **kw.pop("settings", {})), {"discord": chat}, llm=llm,
                          owner="test-owner", clock=kw.pop("clock", None))
    config = DiscordConfig(token=TOKEN, api_url=fake.api_url, sweep_interval_s=3600,
                           default_tz=kw.pop("default_tz", "UTC"))
    client = build_client(config, app.service, app.driver, app.store, chat, sharded=kw.pop("sharded", False),
                          message_content=kw.pop("message_content", True), guild_ready_timeout=0.05, **kw)
    await client.login(TOKEN)
    task = asyncio.create_task(client.connect())
    try:
        await asyncio.wait_for(client.wait_until_ready(), 10)
        yield Council(fake, app, client, chat, llm)
        await app.driver.idle()
    finally:
        await client.close()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        await app.close()


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(token=TOKEN) as f:
        yield f


@pytest.fixture
async def council(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[Council]:
    async with running(fake, tmp_path) as c:
        yield c


async def settled(council: Council, check: Callable[[], Awaitable[Any]]) -> Any:
    """Let the app settle (every event the fake sent handled, the drivers idle), then check a condition the fake
    cannot see (the database) once."""
    await council.settle()
    value = await check()
    assert value, "not so once the app settled"
    return value


def by_webhook(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("webhook_id")]


async def confirm_step(fake: FakeDiscord, who: dict[str, Any], msg: dict[str, Any], label: str,
                       thread: str) -> tuple[Interaction, Interaction]:
    """Click `label`, expect a private question with one button, and press that: (the ask, the confirm)."""
    ask = await fake.click(who, msg, fake.find_button(msg, label))
    await fake.wait_for(lambda: ask.callbacks)
    answer = ask.callbacks[0]
    assert answer["type"] == 4 and answer["data"]["flags"] & 64, "a private question, not the action itself"
    question = p.message(p.snowflake(), thread, fake.bot, answer["data"], application_id=fake.app_id)
    sure = await fake.click(who, question, question["components"][0]["components"][0]["custom_id"])
    await fake.wait_for(lambda: sure.callbacks)
    return ask, sure
