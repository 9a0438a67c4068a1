"""Loopback fake of the Slack Web API (aiohttp): the methods Council calls, recorded, as strict as Slack documents."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from tests.fakes.slack_canvases import CanvasMethods
from tests.fakes.slack_limits import ALL_SCOPES, Limits, Triggers, missing_scope, view_error

BOT_USER, BOT_ID, TEAM = "UBOT", "BBOT", "T0001"
# block_text: Slack answers msg_blocks_too_long from ~13k characters of text in blocks; the fake is stricter.
RESPONSE_URL_USES, RESPONSE_URL_TTL_S = 5, 30 * 60  # "up to five times within 30 minutes"
LIMITS = {"blocks": 50, "section": 3000, "button": 75, "header": 150, "text": 40000, "block_text": 11000,
          "select_options": 100}


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    token: str
    at: float
    limited: bool = False  # answered 429


@dataclass
class Msg:
    channel: str
    ts: str
    text: str = ""
    blocks: list[dict[str, Any]] = field(default_factory=list)
    thread_ts: str | None = None
    username: str | None = None
    icon_emoji: str | None = None
    metadata: dict[str, Any] | None = None
    user: str = BOT_USER
    bot_id: str | None = BOT_ID
    edits: int = 0
    reactions: dict[str, list[str]] = field(default_factory=dict)  # name -> users who reacted with it
    files: list[dict[str, Any]] = field(default_factory=list)  # shared with this message (file uploads)
    posted_metadata: dict[str, Any] | None = None  # as it was posted, whatever edits changed since

    def wire(self, with_metadata: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "message", "ts": self.ts, "text": self.text, "blocks": self.blocks,
                               "user": self.user}
        if self.bot_id:
            out["bot_id"] = self.bot_id
        if self.username:
            out["username"] = self.username
        if self.thread_ts:
            out["thread_ts"] = self.thread_ts
        if with_metadata and self.metadata:
            out["metadata"] = self.metadata
        return out


def block_text(value: Any) -> int:
    """Characters of text in blocks (sections, fields, context elements, headers, buttons...)."""
    if isinstance(value, list):
        return sum(block_text(v) for v in value)
    if isinstance(value, dict):
        return sum(len(v) if k == "text" and isinstance(v, str) else block_text(v) for k, v in value.items())
    return 0


def block_error(blocks: list[dict[str, Any]]) -> str:
    """Slack's own limits, so a renderer that breaks them fails here as it would there."""
    if len(blocks) > LIMITS["blocks"]:
        return "invalid_blocks"
    if block_text(blocks) > LIMITS["block_text"]:
        return "msg_blocks_too_long"
    for b in blocks:
        if b.get("type") == "section" and len((b.get("text") or {}).get("text", "")) > LIMITS["section"]:
            return "invalid_blocks"
        if b.get("type") == "header" and len(b["text"]["text"]) > LIMITS["header"]:
            return "invalid_blocks"
        for e in b.get("elements") or []:
            if e.get("type") == "button" and len(e["text"]["text"]) > LIMITS["button"]:
                return "invalid_blocks"
            if e.get("type") == "static_select" and len(e.get("options") or []) > LIMITS["select_options"]:
                return "invalid_blocks"  # a static select menu: "maximum number of options is 100"
            if e.get("type") == "overflow" and not 1 <= len(e.get("options") or []) <= 5:
                return "invalid_blocks"  # an overflow menu: "maximum number of options is 5, minimum is 1"
        ids = [e["action_id"] for e in [*(b.get("elements") or []), b.get("accessory") or {}] if e.get("action_id")]
        if len(ids) != len(set(ids)):  # an action_id must be unique among the elements of its block
            return "invalid_blocks"
    return ""


class FakeSlack(CanvasMethods):
    """`async with FakeSlack() as slack:` then point clients at `slack.base_url`."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, tokens: dict[str, str] | None = None,
                 scopes: dict[str, frozenset[str]] | None = None, clock: Callable[[], float] = time.monotonic,
                 time_scale: float = 1.0, read_limited: bool = False, marketplace: bool = False,
                 trigger_clock: Callable[[], float] | None = None) -> None:
        """`clock` (seconds) times trigger_ids; Slack's rate limits run on it sped up `time_scale` times, so a
        test or bench lives through minutes of limits in seconds (the app under test is given the same scale).
        `trigger_clock`, when given, times trigger_ids instead: a test's own, so that a busy machine never expires
        a modal's trigger between the click and views.open (the 3-second rule holds on it).
        `read_limited`: the app is commercially distributed outside the Marketplace, so Slack limits its
        conversations.history/replies (`marketplace`: listed there, never limited; a single-workspace app neither)."""
        self.host, self.port = host, port
        self.tokens = tokens if tokens is not None else {"xoxb-test": TEAM}
        self.scopes = scopes if scopes is not None else {}  # token -> its scopes; a token not named has them all
        self.clock, self.time_scale = clock, time_scale
        self.limits = Limits(now=lambda: self.clock() * self.time_scale, read_limited=read_limited and not marketplace)
        self.triggers = Triggers(now=trigger_clock or (lambda: self.clock()))
        self.dms: dict[str, str] = {}  # user -> the id of the app's direct message with them (D…)
        self.calls: list[Call] = []
        self.messages: list[Msg] = []
        self.ephemerals: list[dict[str, Any]] = []
        self.responses: list[dict[str, Any]] = []  # posts to response_url
        self.response_issued: dict[str, float] = {}  # response_url key -> when its interaction happened (clock)
        self.response_uses: dict[str, int] = defaultdict(int)
        self.views: list[dict[str, Any]] = []
        self.homes: dict[str, dict[str, Any]] = {}  # user -> the Home tab published for them
        self.pending_files: dict[str, dict[str, Any]] = {}  # file id -> what getUploadURLExternal announced
        self.uploads: list[dict[str, Any]] = []  # completed files: name, title, alt_txt, data, shares
        self.users: dict[str, dict[str, Any]] = {}
        self.shared_with: dict[str, set[str]] = defaultdict(set)  # person -> other workspaces that share a channel
        self.usergroups: dict[str, list[str]] = {}  # user-group id -> member ids
        # Conversations by id. One not listed is a public channel the app has not joined (made on first use);
        # a user id (U…) as a channel is the app's direct message with that person.
        self.channels: dict[str, dict[str, Any]] = {}
        self.people_in: dict[str, set[str]] = defaultdict(set)  # channel -> the people who are members
        self.limited: dict[str, deque[int]] = defaultdict(deque)  # method -> Retry-After values to answer with
        # method -> how long each next call takes: seconds, or a wait of the test's own
        self.latency: dict[str, deque[float | Callable[[], Awaitable[None]]]] = defaultdict(deque)
        self.failures: dict[str, deque[str]] = defaultdict(deque)
        self.unreachable: set[str] = set()  # methods whose calls are hung up on without an answer
        self.cuts: dict[str, int] = defaultdict(int)  # method -> calls to hang up on before they take effect
        self.lost: dict[str, deque[bool]] = defaultdict(deque)  # method -> answers lost after the call took effect
        self.lost_when: dict[str, list[Callable[[dict[str, Any]], bool]]] = defaultdict(list)
        self.disabled: set[str] = set()
        self.socket: web.WebSocketResponse | None = None  # Socket Mode: the app's connection
        self.socket_replies: list[dict[str, Any]] = []
        self.connected = asyncio.Event()
        self.answered_429: dict[str, int] = defaultdict(int)  # method -> 429s answered (asked for or earned)
        self._n = 0
        self._runner: web.AppRunner | None = None

    # control ----------------------------------------------------------------------------------------
    def rate_limit(self, method: str, times: int = 1, retry_after: int = 0) -> None:
        self.limited[method].extend([retry_after] * times)

    def fail(self, method: str, error: str, times: int = 1, *, after: int = 0) -> None:
        """The next `times` calls of `method` (after `after` successful ones) answer ok=false with `error`."""
        self.failures[method].extend([""] * after + [error] * times)

    def lose_answer(self, method: str, times: int = 1, *, drop: bool = False) -> None:
        """The next `times` calls of `method` take effect (a message is stored) but their answer is lost: Slack
        answers 500 internal_error, or with `drop` hangs up, so the client sees a dropped connection."""
        self.lost[method].extend([drop] * times)

    def cut(self, method: str, times: int = 1) -> None:
        """The next `times` calls of `method` are hung up on before Slack acts on them: nothing is stored."""
        self.cuts[method] += times

    def lose_answer_when(self, method: str, matches: Callable[[dict[str, Any]], bool]) -> None:
        """The first call of `method` whose parameters `matches` takes effect, but its answer is lost (500)."""
        self.lost_when[method].append(matches)

    def add_user(self, user_id: str, name: str, *, admin: bool = False, tz: str = "Europe/Berlin",
                 team: str = TEAM, guest: Literal["", "multi", "single"] = "", connected: str = "") -> None:
        """`team`: the person's own workspace; users.info describes a Slack Connect person of another
        organisation with their team_id and their own organisation's is_admin. `guest`: a multi-channel guest
        is is_restricted, a single-channel one is_ultra_restricted too. `connected`: a workspace that shares a
        Slack Connect channel with them (its token then finds them)."""
        if connected:
            self.shared_with[user_id].add(connected)
        self.users[user_id] = {"id": user_id, "team_id": team, "name": name.lower(), "real_name": name, "tz": tz,
                               "is_admin": admin, "is_owner": False, "is_restricted": bool(guest),
                               "is_ultra_restricted": guest == "single",
                               "profile": {"display_name": name, "real_name": name}}

    def add_channel(self, channel: str, *, private: bool = False, member: bool = False, archived: bool = False,
                    mpim: bool = False, people: list[str] | None = None, team: str = TEAM,
                    shared: Literal["", "ext", "pending", "org"] = "") -> dict[str, Any]:
        """`people`: the people in it (None: everyone the fake knows). `team`: the workspace it is in; another
        workspace's token never finds it. `shared`: conversations.info's sharing flags as Slack sets them, for a
        Slack Connect channel (is_shared and is_ext_shared), one whose invitation is pending
        (is_pending_ext_shared), or one shared across an Enterprise Grid's workspaces (is_shared, is_org_shared)."""
        self.channels[channel] = {"id": channel, "name": channel.lower(), "is_channel": not private,
                                  "is_group": private and not mpim, "is_private": private or mpim, "is_im": False,
                                  "is_mpim": mpim, "is_archived": archived, "is_member": member, "people": people,
                                  "context_team_id": team, "is_shared": shared in ("ext", "org"),
                                  "is_ext_shared": shared == "ext", "is_org_shared": shared == "org",
                                  "is_pending_ext_shared": shared == "pending"}
        return self.channels[channel]

    def join(self, channel: str, *users: str) -> None:
        """People become members of a channel (what users.conversations reports)."""
        self.conversation(channel)
        self.people_in[channel].update(users)

    def trigger(self) -> str:
        """A trigger_id as Slack sends with a command or interaction: good for 3 s and one view."""
        return self.triggers.issue()

    def dm(self, user: str) -> str:
        """The id of the app's direct message with `user` (chat.postMessage to a user id posts there)."""
        return self.dms.setdefault(user, "D" + user.removeprefix("U").rjust(8, "0"))

    def conversation(self, channel: str) -> dict[str, Any]:
        if channel.startswith("U"):  # posting to a user id opens the app's DM with them
            channel = self.dm(channel)
        user = next((u for u, d in self.dms.items() if d == channel), None)
        if user is not None:
            return {"id": channel, "is_im": True, "user": user, "is_private": True, "is_member": True,
                    "people": [user]}
        if channel.startswith("D") and channel not in self.channels:  # two people's DM: the app cannot see it
            return {"id": channel, "is_im": True, "is_private": True, "is_member": False}
        return self.channels.get(channel) or self.add_channel(channel)

    def in_channel(self, user: str, channel: str) -> bool:
        people = self.conversation(channel).get("people")
        return user in self.users if people is None else user in people

    def delivers(self, channel: str) -> bool:
        """Slack sends message (and app_mention) events only from conversations the app is a member of."""
        return bool(self.conversation(channel).get("is_member"))

    def _may_post(self, channel: str) -> str:
        """Without chat:write.public, posting needs membership: not_in_channel for a public channel,
        channel_not_found for a private one the app cannot see, is_archived for an archived one."""
        conv = self.conversation(channel)
        if conv.get("is_archived"):
            return "is_archived"
        if conv.get("is_member"):
            return ""
        return "channel_not_found" if conv.get("is_private") else "not_in_channel"

    def human(self, channel: str, text: str, user: str, thread_ts: str | None = None) -> Msg:
        """A person's message, as if typed in Slack (the app hears it through an event)."""
        return self._store(Msg(channel=channel, ts=self._ts(), text=text, thread_ts=thread_ts, user=user,
                               bot_id=None))

    def called(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def thread(self, channel: str, ts: str) -> list[Msg]:
        return sorted((m for m in self.messages if m.channel == channel and (m.ts == ts or m.thread_ts == ts)),
                      key=lambda m: float(m.ts))

    def find(self, channel: str, ts: str) -> Msg | None:
        return next((m for m in self.messages if m.channel == channel and m.ts == ts), None)

    # server -----------------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/api/"

    async def __aenter__(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{key}", self._response_url)
        app.router.add_post("/upload/v1/{file_id}", self._upload)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self.socket = ws
        await ws.send_json({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}})
        self.connected.set()
        async for message in ws:
            if message.type == web.WSMsgType.TEXT:
                self.socket_replies.append(json.loads(message.data))
        return ws

    async def push(self, kind: str, payload: dict[str, Any], envelope_id: str) -> dict[str, Any]:
        """Deliver a Socket Mode envelope to the connected app and wait for its acknowledgement."""
        assert self.socket is not None, "no Socket Mode connection"
        await self.socket.send_json({"envelope_id": envelope_id, "type": kind, "payload": payload,
                                     "accepts_response_payload": kind != "events_api"})
        for _ in range(500):
            reply = next((r for r in self.socket_replies if r.get("envelope_id") == envelope_id), None)
            if reply is not None:
                return reply
            await asyncio.sleep(0.01)
        raise TimeoutError(f"no acknowledgement of {envelope_id}")

    async def _response_url(self, request: web.Request) -> web.Response:
        """A response_url is good for RESPONSE_URL_USES posts within RESPONSE_URL_TTL_S of its interaction (from
        `response_issued`, else its first use)."""
        key, now = request.match_info["key"], self.clock()
        issued = self.response_issued.setdefault(key, now)
        self.response_uses[key] += 1
        if now - issued > RESPONSE_URL_TTL_S:
            return web.json_response({"ok": False, "error": "expired_url"}, status=404)
        if self.response_uses[key] > RESPONSE_URL_USES:
            return web.json_response({"ok": False, "error": "used_url"}, status=404)
        self.responses.append({"key": key, **(await request.json())})
        return web.Response(text="ok")

    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        for name in ("blocks", "metadata", "view", "files"):
            if isinstance(params.get(name), str):
                params[name] = json.loads(params[name])
        return params

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip() or params.get("token", "")
        call = Call(method, params, token, self.clock())
        self.calls.append(call)
        if self.latency[method]:  # Web API calls take as long as they take: a later call may answer first
            delay = self.latency[method].popleft()
            await (delay() if callable(delay) else asyncio.sleep(delay))
        if self.limited[method]:
            call.limited = True
            return self._limited(method, self.limited[method].popleft())
        team = self.tokens.get(token, TEAM)
        channel = str(params.get("channel") or "") if method == "chat.postMessage" else ""
        if retry_after := self.limits.retry_after(team, method, self.conversation(channel)["id"] if channel else ""):
            call.limited = True
            return self._limited(method, retry_after)
        if method in self.unreachable or self.cuts[method] > 0:  # a dropped connection, not an error
            self.cuts[method] = max(0, self.cuts[method] - 1)
            if request.transport is not None:
                request.transport.abort()
            return web.Response(status=500)  # never reaches the client
        if method in self.disabled:
            return web.json_response({"ok": False, "error": "unknown_method"})
        if self.failures[method] and (error := self.failures[method].popleft()):
            return web.json_response({"ok": False, "error": error})
        if method != "oauth.v2.access" and token not in self.tokens:
            return web.json_response({"ok": False, "error": "invalid_auth" if token else "not_authed"})
        if refused := missing_scope(method, self.scopes.get(token, ALL_SCOPES), params):
            return web.json_response(refused)
        if error := self._elsewhere(self.tokens.get(token, TEAM), params):
            return web.json_response({"ok": False, "error": error})
        handler = getattr(self, "m_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        body = handler(params, self.tokens.get(token, TEAM))
        if hit := next((m for m in self.lost_when[method] if m(params)), None):
            self.lost_when[method].remove(hit)
            return web.json_response({"ok": False, "error": "internal_error"}, status=500)
        if self.lost[method]:  # done, but the caller never hears so
            if self.lost[method].popleft():
                if request.transport is not None:
                    request.transport.abort()
                return web.Response(status=500)  # never reaches the client
            return web.json_response({"ok": False, "error": "internal_error"}, status=500)
        return web.json_response(body)

    def _elsewhere(self, team: str, p: dict[str, Any]) -> str:
        """Workspaces are apart: a token finds only its own workspace's channels and people (a channel first named
        by a workspace is that workspace's)."""
        for name in ("channel", "channel_id"):
            channel = str(p.get(name) or "")
            if channel[:1] in ("C", "G"):
                conv = self.channels.get(channel) or self.add_channel(channel, team=team)
                if conv.get("context_team_id", team) != team:
                    return "channel_not_found"
        for name in ("user", "user_id"):
            person = self.users.get(str(p.get(name) or ""))
            # users.info finds a person of another organisation once a Slack Connect channel is shared with them.
            if person is not None and person["team_id"] != team and team not in self.shared_with[person["id"]]:
                return "user_not_found"
        return ""

    def _limited(self, method: str, retry_after: int) -> web.Response:
        self.answered_429[method] += 1
        return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                 headers={"Retry-After": str(retry_after)})

    def _ts(self) -> str:
        self._n += 1
        return f"{1700000000 + self._n}.{self._n:06d}"

    def _store(self, m: Msg) -> Msg:
        self.messages.append(m)
        return m

    # file uploads (files_upload_v2): get an upload URL, send the bytes there, then complete --------------
    def m_files_getUploadURLExternal(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        length = str(p.get("length", ""))
        if not p.get("filename") or not length.isdigit() or int(length) <= 0:
            return {"ok": False, "error": "invalid_arguments"}
        self._n += 1
        file_id = f"F{self._n:08d}"
        self.pending_files[file_id] = {"id": file_id, "name": p["filename"], "length": int(length),
                                       "alt_txt": p.get("alt_txt", ""), "data": None}
        return {"ok": True, "file_id": file_id, "upload_url": f"http://{self.host}:{self.port}/upload/v1/{file_id}"}

    async def _upload(self, request: web.Request) -> web.Response:
        pending = self.pending_files.get(request.match_info["file_id"])
        data = await request.read()
        if pending is None or len(data) != pending["length"]:
            return web.Response(status=400, text="bad upload")  # Slack refuses a size other than the one declared
        pending["data"] = data
        return web.Response(text=f"OK - {len(data)}")

    def m_files_completeUploadExternal(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        wanted = p.get("files") or []
        if not wanted or any(self.pending_files.get(f.get("id", ""), {}).get("data") is None for f in wanted):
            return {"ok": False, "error": "file_not_found"}  # unknown, or its bytes never arrived
        done = []
        for f in wanted:
            record = self.pending_files.pop(f["id"])
            done.append({**record, "title": f.get("title") or record["name"]})
        if p.get("channel_id"):
            m = self._store(Msg(channel=p["channel_id"], ts=self._ts(), text=p.get("initial_comment", ""),
                                thread_ts=p.get("thread_ts") or None, files=done))
            for f in done:
                f["shares"] = {"channel": m.channel, "ts": m.ts, "thread_ts": m.thread_ts}
        self.uploads += done
        return {"ok": True, "files": [{"id": f["id"], "title": f["title"], "name": f["name"]} for f in done]}

    # methods ----------------------------------------------------------------------------------------
    def m_auth_test(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        return {"ok": True, "url": "https://fake.slack.test/", "team": "Fake", "user": "council", "team_id": team,
                "user_id": BOT_USER, "bot_id": BOT_ID, "is_enterprise_install": False}

    def m_team_info(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        return {"ok": True, "team": {"id": team, "name": f"Team {team}", "domain": team.lower()}}

    def m_chat_postMessage(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        blocks = p.get("blocks") or []
        if not p.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        if not p.get("text") and not blocks:
            return {"ok": False, "error": "no_text"}
        if len(p.get("text") or "") > LIMITS["text"]:
            return {"ok": False, "error": "msg_too_long"}
        if error := block_error(blocks) or self._may_post(p["channel"]):
            return {"ok": False, "error": error}
        channel = self.conversation(p["channel"])["id"]  # a user id posts in the app's DM with them
        m = self._store(Msg(channel=channel, ts=self._ts(), text=p.get("text", ""), blocks=blocks,
                            thread_ts=p.get("thread_ts") or None, username=p.get("username"),
                            icon_emoji=p.get("icon_emoji"), metadata=p.get("metadata"),
                            posted_metadata=p.get("metadata")))
        return {"ok": True, "channel": m.channel, "ts": m.ts, "message": m.wire(True)}

    def m_chat_update(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        m = self.find(p.get("channel", ""), p.get("ts", ""))
        if m is None:
            return {"ok": False, "error": "message_not_found"}
        if m.user != BOT_USER:  # an app edits only its own messages
            return {"ok": False, "error": "cant_update_message"}
        if self.conversation(m.channel).get("is_archived"):
            return {"ok": False, "error": "is_archived"}
        if len(p.get("text") or "") > LIMITS["text"]:
            return {"ok": False, "error": "msg_too_long"}
        if error := block_error(p.get("blocks") or []):
            return {"ok": False, "error": error}
        m.text, m.blocks, m.edits = p.get("text", m.text), p.get("blocks", m.blocks), m.edits + 1
        m.metadata = p.get("metadata", m.metadata)
        return {"ok": True, "channel": m.channel, "ts": m.ts, "text": m.text}

    def m_reactions_add(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """reactions.add: the message is named by channel and timestamp; the same reaction twice by one user is
        already_reacted, a name Slack does not know invalid_name, an unknown message message_not_found."""
        m = self.find(p.get("channel", ""), p.get("timestamp", ""))
        name = str(p.get("name") or "")
        if not p.get("channel") or not p.get("timestamp"):
            return {"ok": False, "error": "no_item_specified"}
        if m is None:
            return {"ok": False, "error": "message_not_found"}
        if not re.fullmatch(r"[a-z0-9_+\-]+", name):
            return {"ok": False, "error": "invalid_name"}
        who = m.reactions.setdefault(name, [])
        if BOT_USER in who:
            return {"ok": False, "error": "already_reacted"}
        who.append(BOT_USER)
        return {"ok": True}

    def m_chat_delete(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        m = self.find(p.get("channel", ""), p.get("ts", ""))
        if m is None:
            return {"ok": False, "error": "message_not_found"}
        if m.user != BOT_USER:  # a bot token deletes only the app's own messages
            return {"ok": False, "error": "cant_delete_message"}
        self.messages.remove(m)
        return {"ok": True, "channel": m.channel, "ts": m.ts}

    def m_chat_postEphemeral(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        conv = self.conversation(p.get("channel", ""))
        if conv.get("is_private") and not conv.get("is_member"):
            return {"ok": False, "error": "channel_not_found"}
        if conv.get("is_archived"):
            return {"ok": False, "error": "is_archived"}
        if not self.in_channel(p.get("user", ""), conv["id"]):  # only someone in the conversation can see it
            return {"ok": False, "error": "user_not_in_channel"}
        if len(p.get("text") or "") > LIMITS["text"]:
            return {"ok": False, "error": "msg_too_long"}
        self.ephemerals.append(p)
        return {"ok": True, "message_ts": self._ts()}

    def m_chat_getPermalink(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        ts = p.get("message_ts", "")
        return {"ok": True, "channel": p.get("channel"),
                "permalink": f"https://fake.slack.test/archives/{p.get('channel')}/p{ts.replace('.', '')}"}

    def m_users_info(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        user = self.users.get(p.get("user", ""))
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    def m_usergroups_users_list(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        members = self.usergroups.get(p.get("usergroup", ""))
        return {"ok": True, "users": members} if members is not None else {"ok": False, "error": "no_such_subteam"}

    def m_conversations_replies(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """A thread, earliest first. Bounded by `latest` alone, a page holds the messages nearest `latest` (Slack's
        "pagination by time": the next page takes the page's end as `latest`); otherwise it starts at `oldest`."""
        msgs = self.thread(p.get("channel", ""), p.get("ts", ""))
        if not msgs:
            return {"ok": False, "error": "thread_not_found"}
        within = [m for m in msgs if self._within(m, p)]
        if p.get("latest") and not p.get("oldest") and not p.get("cursor"):
            limit = self.limits.page(int(p.get("limit") or 100))
            meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
            return {"ok": True, "messages": [self._wire(m, meta) for m in within[-limit:]],
                    "has_more": len(within) > limit, "response_metadata": {"next_cursor": ""}}
        return self._page(within, p)

    def m_conversations_history(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """Top-level messages, newest first, from `oldest` to `latest`; metadata with include_all_metadata."""
        if not p.get("channel"):
            return {"ok": False, "error": "channel_not_found"}
        msgs = [m for m in self.messages if m.channel == p.get("channel") and not m.thread_ts and self._within(m, p)]
        return self._page(sorted(msgs, key=lambda m: -float(m.ts)), p)

    @staticmethod
    def _within(m: Msg, p: dict[str, Any]) -> bool:
        """Between `oldest` and `latest`, the bounds themselves only with `inclusive`."""
        oldest, latest, ts = float(p.get("oldest") or 0), float(p.get("latest") or "inf"), float(m.ts)
        if str(p.get("inclusive", "")).lower() in ("1", "true"):
            return oldest <= ts <= latest
        return oldest < ts < latest

    def _wire(self, m: Msg, with_metadata: bool) -> dict[str, Any]:
        """A thread's parent carries reply_count and latest_reply, as Slack's message objects do."""
        out = m.wire(with_metadata)
        if m.thread_ts in (None, m.ts):
            replies = [r for r in self.messages if r.channel == m.channel and r.thread_ts == m.ts and r is not m]
            if replies:
                out |= {"thread_ts": m.ts, "reply_count": len(replies), "latest_reply": replies[-1].ts}
        return out

    def _page(self, msgs: list[Msg], p: dict[str, Any]) -> dict[str, Any]:
        start, limit = int(p.get("cursor") or 0), self.limits.page(int(p.get("limit") or 100))
        meta = str(p.get("include_all_metadata", "")).lower() in ("1", "true")
        page = msgs[start:start + limit]
        more = start + limit < len(msgs)
        return {"ok": True, "messages": [self._wire(m, meta) for m in page], "has_more": more,
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def m_conversations_info(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        conv = self.conversation(p.get("channel", ""))
        if conv.get("is_private") and not conv.get("is_member"):
            return {"ok": False, "error": "channel_not_found"}  # the app cannot see it at all
        return {"ok": True, "channel": dict(conv)}

    def m_conversations_members(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """The member ids of a conversation the app can see, paginated by cursor (limit at most 1000)."""
        conv = self.conversation(p.get("channel", ""))
        if conv.get("is_private") and not conv.get("is_member"):
            return {"ok": False, "error": "channel_not_found"}
        people = sorted(self.users) if conv.get("people") is None else list(conv["people"])
        start, limit = int(p.get("cursor") or 0), int(p.get("limit") or 100)
        page, more = people[start:start + limit], start + limit < len(people)
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def m_conversations_join(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        conv = self.conversation(p.get("channel", ""))
        if conv.get("is_private"):
            # A DM, or a private channel the app can see, takes an invitation; one it cannot see is not found.
            return {"ok": False, "error": "method_not_supported_for_channel_type" if conv.get("is_member") or
                    conv.get("is_im") else "channel_not_found"}
        if conv.get("is_archived"):
            return {"ok": False, "error": "is_archived"}
        conv["is_member"] = True
        return {"ok": True, "channel": dict(conv)}

    def m_users_conversations(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """The conversations a person is in, of the types asked (public channels by default); with a bot token,
        private ones only where the app is a member too. Paginated by cursor."""
        user = p.get("user", "")
        if user and user not in self.users:
            return {"ok": False, "error": "user_not_found"}
        types = set(str(p.get("types") or "public_channel").split(","))
        kinds = [c for c in self.channels.values() if user in self.people_in[c["id"]] and (
            ("public_channel" in types and c["is_channel"] and not c["is_private"])
            or ("private_channel" in types and c["is_group"] and c["is_member"]))]
        start, limit = int(p.get("cursor") or 0), int(p.get("limit") or 100)
        if not 0 < limit <= 999:  # "an integer with a max value of 999"
            return {"ok": False, "error": "invalid_limit"}
        page = kinds[start:start + limit]
        more = start + limit < len(kinds)
        return {"ok": True, "channels": [dict(c) for c in page],
                "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def m_apps_connections_open(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        return {"ok": True, "url": f"ws://{self.host}:{self.port}/socket"}

    def m_views_open(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        if error := self.triggers.use(str(p.get("trigger_id") or "")) or view_error(p.get("view")):
            return {"ok": False, "error": error}
        self.views.append(p)
        return {"ok": True, "view": {"id": f"V{len(self.views)}", **(p.get("view") or {})}}

    def m_views_update(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """Replace an open modal's view (by the id views.open answered with)."""
        view_id = str(p.get("view_id") or "")
        index = int(view_id[1:]) - 1 if view_id[:1] == "V" and view_id[1:].isdigit() else -1
        if not 0 <= index < len(self.views):
            return {"ok": False, "error": "not_found"}
        if error := view_error(p.get("view")):
            return {"ok": False, "error": error}
        self.views[index] = {**self.views[index], "view": p["view"], "updates": self.views[index].get("updates", 0)
                             + 1}
        return {"ok": True, "view": {"id": view_id, **p["view"]}}

    def m_views_publish(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        view = p.get("view") or {}
        if not p.get("user_id") or p["user_id"] not in self.users:
            return {"ok": False, "error": "user_not_found"}
        if view.get("type") != "home" or len(view.get("blocks") or []) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        if error := block_error(view.get("blocks") or []):
            return {"ok": False, "error": error}
        self.homes[p["user_id"]] = view
        return {"ok": True, "view": {"id": f"VH{p['user_id']}", **view}}

    def m_oauth_v2_access(self, p: dict[str, Any], team: str) -> dict[str, Any]:
        """"good-code" installs workspace T0002; "good-code:T…" (benches with many workspaces) installs that one."""
        code = str(p.get("code") or "")
        if code != "good-code" and not code.startswith("good-code:T"):
            return {"ok": False, "error": "invalid_code"}
        installed = code.partition(":")[2] or "T0002"
        token = "xoxb-installed" if installed == "T0002" else f"xoxb-installed-{installed}"
        self.tokens[token] = installed
        return {"ok": True, "access_token": token, "token_type": "bot", "scope": "commands,chat:write",
                "bot_user_id": "UBOT2", "app_id": "A0001", "team": {"id": installed, "name": f"Team {installed}"},
                "enterprise": None, "is_enterprise_install": False, "authed_user": {"id": "U0900"}}


async def _serve(port: int) -> None:
    async with FakeSlack(port=port) as fake:
        print(f"fake Slack Web API at {fake.base_url}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    asyncio.run(_serve(parser.parse_args().port))
