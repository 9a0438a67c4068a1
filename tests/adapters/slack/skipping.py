"""The Slack app served on skipping time: Slack's limits in the fake and the app's rate budget and live-edit gap on
one clock that a wait moves at once, so paced posts and rate limits hold exactly and no test waits for them. A test
module takes `server` from here (`server = skipping.server`) in place of the conftest's.

Slack's seconds still run TIME_SCALE times the clock's: after a 429 the driver comes back on the loop's timer
after the platform's wait in the app's seconds (no clock reaches it), which this keeps to milliseconds."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.budgeted import slack_budget
from adapters.slack.chat import SlackChat
from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.server import SlackConfig, SlackServer
from bot.wiring import build_app
from core.running.budget import LocalBuckets, RateBudget
from tests.adapters.slack.conftest import TIME_SCALE, config, settings
from tests.fakes.clock import SkippingTime
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack


def skipping_time(fake: FakeSlack) -> SkippingTime:
    """The fake's clock, made a skipping one (one per fake: a server or chat built on it later shares it)."""
    time = fake.clock if isinstance(fake.clock, SkippingTime) else SkippingTime()
    fake.clock, fake.time_scale = time, TIME_SCALE  # trigger_ids keep their own clock (`trigger_time`)
    return time


def skipping_budget(fake: FakeSlack) -> RateBudget:
    """The workspace's rate budget as the app builds it, on the fake's skipping clock and time scale."""
    time = skipping_time(fake)
    return slack_budget(LocalBuckets(), read_limited=fake.limits.read_limited, scale=TIME_SCALE, wall=time,
                        sleep=time.sleep)


def skipping_chat(fake: FakeSlack, pace_s: float = 1.0) -> SlackChat:
    """SlackChat on the real client and its budget, on the fake's skipping clock (a second process's chat)."""
    time = skipping_time(fake)
    return SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"), skipping_budget(fake), pace_s),
                     time_scale=TIME_SCALE, monotonic=time)


def skipping_config(fake: FakeSlack, **kw: Any) -> SlackConfig:
    """The server's config on the fake's skipping clock."""
    time = skipping_time(fake)
    return config(fake, **{"time_scale": TIME_SCALE, "wall": time, "sleep": time.sleep, **kw})


@pytest.fixture
async def server(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> AsyncIterator[SlackServer]:
    """The conftest's server (the real app on the scripted model), its Slack on the fake's skipping clock."""
    s = settings(tmp_path)
    srv = SlackServer(skipping_config(fake), lambda chats: build_app(s, chats, llm=llm))
    await srv.start()
    yield srv
    await srv.stop()


@contextlib.asynccontextmanager
async def scheduled_server(fake: FakeSlack, tmp_path: Path, llm: Any, clock: Any,
                           wall: Any) -> AsyncIterator[SlackServer]:
    """The app with its real scheduler on fake clocks (see the conftest's `scheduled_server`), Slack's limits on
    skipping time."""
    s = settings(tmp_path).model_copy(update={"council_schedule_reload_s": 3600, "council_leader_retry_s": 3600})
    srv = SlackServer(skipping_config(fake), lambda chats: build_app(s, chats, llm=llm, clock=clock,
                                                                     scheduler=True, wall=wall))
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()
