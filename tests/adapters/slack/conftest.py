"""Slack fixtures: the loopback fake Web API, the real server (bolt AsyncApp on aiohttp), a signing client."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import pytest

from adapters.slack.budgeted import slack_budget
from adapters.slack.chat import SlackChat
from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.server import BOT_SCOPES, SlackConfig, SlackServer
from bot.settings import Settings
from bot.wiring import build_app
from core.running.budget import LocalBuckets, RateBudget
from tests.databases import migrated_sqlite_url
from tests.fakes.clock import SkippingTime
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signing import sign as signature

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
# Slack's rate limits run this much faster in the fake and in the app's budget alike: a second of pacing is 10 ms,
# a minute of a method's budget 0.6 s, so tests keep every limit without waiting for it.
TIME_SCALE = 100.0
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slack"


def fixture(name: str) -> dict[str, Any]:
    return copy.deepcopy(json.loads((FIXTURES / f"{name}.json").read_text()))


def sign(body: str, secret: str = SECRET, timestamp: int | None = None) -> dict[str, str]:
    return signature(body, secret, timestamp)


class Slack:
    """Sends what Slack would send to /slack/events: signed form commands, payload= interactions, JSON events."""

    def __init__(self, url: str, session: aiohttp.ClientSession, fake: FakeSlack) -> None:
        self.url, self.session, self.fake = url, session, fake
        self._n = 0

    async def post(self, body: str, content_type: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        hdrs = {"Content-Type": content_type, **(headers if headers is not None else sign(body))}
        async with self.session.post(self.url, data=body.encode(), headers=hdrs) as resp:
            return resp.status, await resp.text()

    async def command(self, text: str, *, user: str = "U0001", channel: str = "C0001",
                      response_url: str = "") -> tuple[int, str]:
        form = fixture("slash_command") | {"text": text, "user_id": user, "channel_id": channel,
                                           "trigger_id": self.fake.trigger()}
        if response_url:
            form["response_url"] = response_url
        return await self.post(urlencode(form), "application/x-www-form-urlencoded")

    async def interaction(self, payload: dict[str, Any]) -> tuple[int, str]:
        if "trigger_id" in payload:  # as Slack does, a fresh trigger_id with every interaction
            payload = {**payload, "trigger_id": self.fake.trigger()}
        return await self.post(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")

    async def click(self, message_ts: str, action_id: str, value: str, *, user: str = "U0001",
                    channel: str = "C0001") -> tuple[int, str]:
        msg = self.fake.find(channel, message_ts)
        assert msg is not None, f"no message {message_ts}"
        payload = fixture("block_actions")
        payload["user"] = {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0001"}
        payload["channel"] = {"id": channel, "name": "directmessage" if channel.startswith("D") else "general"}
        payload["container"] |= {"message_ts": message_ts, "channel_id": channel, "thread_ts": msg.thread_ts}
        payload["message"] = msg.wire(False)
        payload["actions"] = [{"action_id": action_id, "block_id": "actions:0", "value": value, "type": "button",
                               "text": {"type": "plain_text", "text": action_id}, "action_ts": "1.2"}]
        return await self.interaction(payload)

    async def pick(self, message_ts: str, value: str, *, user: str = "U0001", channel: str = "C0001",
                   action_id: str = "pick") -> tuple[int, str]:
        """Choose an option of a message's select or overflow menu, as Slack reports it (`selected_option`, no
        `value`)."""
        msg = self.fake.find(channel, message_ts)
        assert msg is not None, f"no message {message_ts}"
        menu = next(e for b in msg.blocks if b["type"] == "actions" for e in b["elements"]
                    if e["type"] in ("static_select", "overflow") and e["action_id"] == action_id)
        option = next(o for o in menu["options"] if o["value"] == value)
        payload = fixture("block_actions")
        payload["user"] = {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0001"}
        payload["channel"]["id"] = channel
        payload["container"] |= {"message_ts": message_ts, "channel_id": channel, "thread_ts": msg.thread_ts}
        payload["message"] = msg.wire(False)
        payload["actions"] = [{"action_id": action_id, "block_id": "actions:0", "type": menu["type"],
                               "selected_option": option, "action_ts": "1.2",
                               **({"placeholder": menu["placeholder"]} if "placeholder" in menu else {})}]
        return await self.interaction(payload)

    async def event(self, event: dict[str, Any], *, kind: str = "event_message", event_id: str = "",
                    headers: dict[str, str] | None = None) -> tuple[int, str]:
        self._n += 1
        channel = str(event.get("channel") or "")
        if event.get("type") in ("message", "app_mention") and channel and not self.fake.delivers(channel):
            return 0, "not delivered: the app is not in the channel"
        body = fixture(kind)
        body["event"] = event
        body["event_id"] = event_id or f"Ev{self._n:06d}"
        text = json.dumps(body)
        return await self.post(text, "application/json", None if headers is None else {**sign(text), **headers})

    async def reply(self, thread_ts: str, text: str, *, user: str = "U0001", channel: str = "C0001",
                    event_id: str = "") -> tuple[int, str]:
        m = self.fake.human(channel, text, user, thread_ts)
        event = {"type": "message", "user": user, "text": text, "ts": m.ts, "thread_ts": thread_ts,
                 "channel": channel, "event_ts": m.ts, "channel_type": "channel", "team": "T0001"}
        return await self.event(event, event_id=event_id)

    async def mention(self, text: str, *, thread_ts: str | None, user: str = "U0001",
                      channel: str = "C0001") -> tuple[int, str]:
        m = self.fake.human(channel, text, user, thread_ts)
        event = {"type": "app_mention", "user": user, "text": text, "ts": m.ts, "channel": channel,
                 "event_ts": m.ts, "team": "T0001"}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return await self.event(event, kind="event_app_mention")


@pytest.fixture
def trigger_time() -> Seconds:
    """The clock the fake Slack's trigger_ids expire on: it moves only when a test moves it (three seconds of a busy
    shared machine between a click and its views.open failed modal tests that never waited)."""
    return Seconds()


@pytest.fixture
async def fake(trigger_time: Seconds) -> AsyncIterator[FakeSlack]:
    # The token holds the scopes the app asks for at install (the manifest's), and no more: a call outside them
    # answers missing_scope as Slack would.
    async with FakeSlack(time_scale=TIME_SCALE, scopes={"xoxb-test": frozenset(BOT_SCOPES)},
                         trigger_clock=trigger_time) as f:
        f.add_user("U0001", "Dana")
        f.add_user("U0002", "Lee")
        f.add_user("U0003", "Ines", admin=True)
        yield f


class Seconds:
    """A clock in seconds that moves only when a test adds to `t`."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def slack_chat(fake: FakeSlack, pace_s: float = 1.0, budget: RateBudget | None = None) -> SlackChat:
    """SlackChat on the real client as the app builds it: the workspace's rate budget, on TIME_SCALE (reads limited
    as the fake limits them)."""
    budget = budget or slack_budget(LocalBuckets(), read_limited=fake.limits.read_limited, scale=TIME_SCALE)
    return SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"), budget, pace_s))


def skipping_chat(fake: FakeSlack, pace_s: float = 1.0) -> SlackChat:
    """SlackChat on the real client, Slack's limits in the fake and the app's budget on one skipping clock: a wait
    the budget asks for moves the clock at once, so every limit holds and nothing waits in real time."""
    time = fake.clock if isinstance(fake.clock, SkippingTime) else SkippingTime()  # one clock per fake
    fake.clock, fake.time_scale = time, 1.0  # trigger_ids keep their own clock (`trigger_time`)
    budget = slack_budget(LocalBuckets(), read_limited=fake.limits.read_limited, wall=time, sleep=time.sleep)
    return SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"), budget, pace_s))


def config(fake: FakeSlack, **kw: Any) -> SlackConfig:
    return SlackConfig(**{"signing_secret": SECRET, "bot_token": "xoxb-test", "api_url": fake.base_url,
                          "host": "127.0.0.1", "port": 0, "sweep_interval_s": 3600.0, "time_scale": TIME_SCALE, **kw})


def settings(tmp_path: Path) -> Settings:
    return Settings(_env_file=None, database_url=migrated_sqlite_url(tmp_path))  # type: ignore[call-arg]


@contextlib.asynccontextmanager
async def scheduled_server(fake: FakeSlack, tmp_path: Path, llm: Any, clock: Any,
                           wall: Any) -> AsyncIterator[SlackServer]:
    """The app with its real scheduler on fake clocks: `clock` is the app's time, `wall` holds APScheduler's "now"
    (it waits on the real clock); reloads and leader retries are pushed out of the test's way."""
    s = settings(tmp_path).model_copy(update={"council_schedule_reload_s": 3600, "council_leader_retry_s": 3600})
    srv = SlackServer(config(fake), lambda chats: build_app(s, chats, llm=llm, clock=clock, scheduler=True,
                                                            wall=wall))
    await srv.start()
    try:
        yield srv
    finally:
        await srv.stop()


@pytest.fixture
def llm() -> ScriptedLLM:
    """The offline model (every post labelled), with failures on demand."""
    return ScriptedLLM()


@pytest.fixture
async def server(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> AsyncIterator[SlackServer]:
    s = settings(tmp_path)
    srv = SlackServer(config(fake), lambda chats: build_app(s, chats, llm=llm))
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
async def slack(server: SlackServer, fake: FakeSlack) -> AsyncIterator[Slack]:
    async with aiohttp.ClientSession() as session:
        yield Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
