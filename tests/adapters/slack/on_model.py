"""The real Slack app on skipping time with the real anthropic SDK on a loopback Messages API, for end-to-end tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from adapters.slack.server import SlackServer
from bot.settings import Settings
from bot.wiring import build_app
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.slack_api import FakeSlack


@contextlib.asynccontextmanager
async def app_on_model(fake: FakeSlack, anthropic_base_url: str, folder: Path, *,
                       database_url: str | None = None) -> AsyncIterator[tuple[Slack, SlackServer]]:
    """The app started against `fake` and the Messages API at `anthropic_base_url`, and a client posting to its
    /slack/events; stopped on leaving. Its database is `database_url`, else a new one in `folder` it migrates."""
    settings = Settings(_env_file=None,  # type: ignore[call-arg]
                        database_url=database_url or f"sqlite+aiosqlite:///{folder / 'c.db'}",
                        anthropic_api_key="sk-test", anthropic_base_url=anthropic_base_url)
    server = SlackServer(skipping_config(fake), lambda chats: build_app(settings, chats))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake), server
    finally:
        await server.stop()
