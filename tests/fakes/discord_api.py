"""Loopback fake of Discord: the REST API under /api/v10 and a gateway websocket, for the real discord.py."""

from __future__ import annotations

import asyncio
import functools
import json
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import BodyPartReader, WSMsgType, web

from tests.fakes import discord_payloads as p

Handler = Callable[[web.Request, re.Match[str], Any], Awaitable[web.StreamResponse]]


def as_json(data: Any, status: int, headers: dict[str, str]) -> web.Response:
    """Discord answers `Content-Type: application/json` exactly (discord.py compares the whole header)."""
    return web.Response(body=json.dumps(data).encode(), status=status,
                        headers={**headers, "Content-Type": "application/json"})


@dataclass
class Fault:
    """Answer the next `times` matching requests with `status` (429 carries retry_after and Via)."""

    method: str
    path: str  # regular expression on the path after /api/v10
    status: int = 429
    retry_after: float = 0.01
    times: int = 1
    is_global: bool = False
    after: int = 0  # let this many matching requests through first (refuse part 2 of a split post)


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int = 200


@dataclass
class Interaction:
    id: str
    token: str
    payload: dict[str, Any]
    callbacks: list[dict[str, Any]] = field(default_factory=list)
    followups: list[dict[str, Any]] = field(default_factory=list)
    edits: list[dict[str, Any]] = field(default_factory=list)  # of the message a clicked component is on

    def choices(self) -> list[dict[str, Any]]:
        """The answer to an autocomplete interaction (callback type 8)."""
        assert self.callbacks and self.callbacks[0]["type"] == 8, f"not an autocomplete answer: {self.callbacks}"
        return list(self.callbacks[0]["data"]["choices"])


USER_OPTION = 6  # an application command option of type USER


class FakeDiscord:
    """`async with FakeDiscord() as fake:` then point DISCORD_API_URL at `fake.api_url`."""

    def __init__(self, *, token: str = "test-token", manage_webhooks: bool = True,
                 message_content: bool = True, shards: int = 1, thread_events: bool = True) -> None:
        from tests.fakes.discord_routes import ROUTES

        self.token, self.manage_webhooks, self.message_content, self.shards = (
            token, manage_webhooks, message_content, shards)
        self.thread_events = thread_events  # False: THREAD_CREATE never arrives, the thread is not in the cache
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = [
            (m, re.compile(f"^{path}$"), functools.partial(h, self)) for m, path, h in ROUTES]
        self.app_id = p.snowflake()
        self.bot = p.user(self.app_id, "Council", bot=True)
        self.guild_id, self.channel_id, self.owner_id = p.snowflake(), p.snowflake(), p.snowflake()
        self.users: dict[str, dict[str, Any]] = {self.app_id: self.bot}
        self.channels: dict[str, dict[str, Any]] = {
            self.channel_id: p.text_channel(self.channel_id, self.guild_id, "general")}
        self.messages: dict[str, list[dict[str, Any]]] = {self.channel_id: []}
        self.webhooks: dict[str, dict[str, Any]] = {}
        self.commands: list[dict[str, Any]] = []
        self.files: dict[str, bytes] = {}  # attachment id -> the bytes uploaded
        self.app_permissions = p.ALL_PERMISSIONS  # what the bot may do in the channel, sent with interactions
        self.interactions: dict[str, Interaction] = {}
        self.nonces: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.latency: deque[float] = deque()  # seconds each next interaction callback takes (a later one may win)
        self.sockets: list[tuple[web.WebSocketResponse, dict[str, Any]]] = []
        self.identifies: list[dict[str, Any]] = []
        self.changed = asyncio.Condition()
        self._seq = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    # lifecycle ------------------------------------------------------------------------------------
    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/v10"

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws, _ in list(self.sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def notify(self) -> None:
        async with self.changed:
            self.changed.notify_all()

    async def wait_for(self, predicate: Callable[[], Any], limit_s: float = 15.0) -> Any:
        """Wait until `predicate()` is truthy; re-checked after every request and gateway frame."""
        async def check() -> Any:
            async with self.changed:
                while not (value := predicate()):
                    await self.changed.wait()
                return value

        return await asyncio.wait_for(check(), limit_s)

    # REST -----------------------------------------------------------------------------------------
    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        body: Any = None
        if request.content_type == "multipart/form-data":
            body = await self._multipart(request)
        elif request.can_read_body:
            raw = await request.read()
            body = json.loads(raw) if raw and request.content_type == "application/json" else raw.decode()
        call = Call(request.method, path, dict(request.query), body)
        self.calls.append(call)
        try:
            response = await self._dispatch(request, path, body)
        finally:
            await self.notify()
        call.status = response.status
        return response

    @staticmethod
    async def _multipart(request: web.Request) -> dict[str, Any]:
        """Discord's form for files: `payload_json` plus `files[n]` parts, which `attachments[].id` refer to."""
        body: dict[str, Any] = {}
        files: dict[str, dict[str, Any]] = {}
        reader = await request.multipart()
        async for part in reader:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "payload_json":
                body.update(json.loads(await part.text()))
            elif part.name and part.name.startswith("files["):
                files[part.name[6:-1]] = {"filename": part.filename, "data": await part.read()}
        body["_files"] = files
        return body

    async def _dispatch(self, request: web.Request, path: str, body: Any) -> web.StreamResponse:
        for fault in self.faults:
            if fault.times > 0 and fault.method == request.method and re.search(fault.path, path):
                if fault.after > 0:
                    fault.after -= 1
                    continue
                fault.times -= 1
                return self.fault_response(fault)
        webhook_call = path.startswith(("/webhooks/", "/interactions/"))
        if not webhook_call and request.headers.get("Authorization") != f"Bot {self.token}":
            return self.error(401, 0, "401: Unauthorized")
        for method, pattern, handler in self.routes:
            match = pattern.match(path)
            if match and method == request.method:
                if self.latency and path.endswith("/callback"):
                    await asyncio.sleep(self.latency.popleft())
                return await handler(request, match, body)
        return self.error(404, 0, "404: Not Found")

    @staticmethod
    def ok(data: Any, status: int = 200) -> web.Response:
        headers = {"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4", "X-RateLimit-Reset-After": "0.001",
                   "X-RateLimit-Bucket": "fakebucket", "Via": "1.1 google"}
        if status == 204:
            return web.Response(status=204, headers=headers)
        return as_json(data, status, headers)

    @staticmethod
    def error(status: int, code: int, message: str) -> web.Response:
        return as_json({"message": message, "code": code}, status, {"Via": "1.1 google"})

    @staticmethod
    def fault_response(fault: Fault) -> web.Response:
        if fault.status != 429:
            return as_json({"message": "fault", "code": 0}, fault.status, {})
        headers = {"Retry-After": str(max(1, int(fault.retry_after))), "X-RateLimit-Limit": "5",
                   "X-RateLimit-Remaining": "0", "X-RateLimit-Reset-After": str(fault.retry_after),
                   "X-RateLimit-Bucket": "fakebucket", "X-RateLimit-Scope": "shared" if not fault.is_global else "user",
                   "Via": "1.1 google"}
        if fault.is_global:
            headers["X-RateLimit-Global"] = "true"
        body = {"message": "You are being rate limited.", "retry_after": fault.retry_after,
                "global": fault.is_global, "code": 0}
        return as_json(body, 429, headers)

    # gateway --------------------------------------------------------------------------------------
    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        session: dict[str, Any] = {"identified": False, "shard": [0, 1], "intents": 0}
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            msg = json.loads(frame.data)
            op, data = msg.get("op"), msg.get("d")
            if op == 1:
                await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
            elif op == 2:
                await self._identify(ws, session, data)
            elif op == 6:
                session["identified"] = True
                self.sockets.append((ws, session))
                await self._send(ws, "RESUMED", {})
            await self.notify()
        self.sockets = [(w, s) for w, s in self.sockets if w is not ws]
        return ws

    async def _identify(self, ws: web.WebSocketResponse, session: dict[str, Any], data: dict[str, Any]) -> None:
        self.identifies.append(data)
        if data.get("token") != self.token:
            await ws.close(code=4004, message=b"Authentication failed.")
            return
        intents = int(data.get("intents") or 0)
        if intents & p.MESSAGE_CONTENT_INTENT and not self.message_content:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        shard = data.get("shard") or [0, 1]
        session.update(identified=True, shard=shard, intents=intents)
        self.sockets.append((ws, session))
        mine = self._shard_of(self.guild_id, shard[1]) == shard[0]
        ready = {"v": 10, "user": self.bot, "guilds": [{"id": self.guild_id, "unavailable": True}] if mine else [],
                 "session_id": p.snowflake(), "resume_gateway_url": f"ws://127.0.0.1:{self.port}/gateway",
                 "shard": shard, "application": {"id": self.app_id, "flags": self.app_flags},
                 "private_channels": [], "relationships": [], "presences": []}
        await self._send(ws, "READY", ready)
        if mine:
            await self._send(ws, "GUILD_CREATE", self.guild_payload())

    @staticmethod
    def _shard_of(guild_id: str, count: int) -> int:
        return (int(guild_id) >> 22) % count

    @property
    def app_flags(self) -> int:
        return p.FLAG_MESSAGE_CONTENT_LIMITED if self.message_content else 0

    def guild_payload(self) -> dict[str, Any]:
        members = [p.member(self.bot)]
        channels = [c for c in self.channels.values() if c["type"] != 11]
        threads = [c for c in self.channels.values() if c["type"] == 11]
        return p.guild(self.guild_id, self.owner_id, channels, members, threads)

    async def _send(self, ws: web.WebSocketResponse, event: str, data: dict[str, Any]) -> None:
        self._seq += 1
        await ws.send_json({"op": 0, "t": event, "s": self._seq, "d": data})

    async def dispatch(self, event: str, data: dict[str, Any], *, guild_id: str | None = None) -> None:
        """Send a DISPATCH to every identified session that should see it (by shard)."""
        gid = guild_id or data.get("guild_id") or self.guild_id
        for ws, session in list(self.sockets):
            shard = session["shard"]
            if self._shard_of(gid, shard[1]) != shard[0] or ws.closed:
                continue
            payload = data
            if event == "MESSAGE_CREATE":
                payload = self._visible(data, session["intents"])
            await self._send(ws, event, payload)
        await self.notify()

    def _visible(self, data: dict[str, Any], intents: int) -> dict[str, Any]:
        """Without the Message Content intent, others' messages arrive empty unless they mention the bot."""
        if intents & p.MESSAGE_CONTENT_INTENT or data["author"]["id"] == self.app_id:
            return data
        if any(m["id"] == self.app_id for m in data.get("mentions", [])):
            return data
        return {**data, "content": "", "embeds": [], "attachments": [], "components": []}

    # what tests drive -----------------------------------------------------------------------------
    def add_user(self, name: str, *, admin: bool = False) -> dict[str, Any]:
        u = p.user(p.snowflake(), name)
        self.users[u["id"]] = u
        u["_permissions"] = p.ALL_PERMISSIONS if admin else str(1071698660929)
        return u

    def _member(self, u: dict[str, Any]) -> dict[str, Any]:
        public = {k: v for k, v in u.items() if not k.startswith("_")}
        return p.member(public, u.get("_permissions", "0"))

    async def _interact(self, kind: int, fixture: str, who: dict[str, Any], channel_id: str, data: dict[str, Any],
                        msg: dict[str, Any] | None = None) -> Interaction:
        template = p.fixture(fixture)
        iid, token = p.snowflake(), f"itoken-{p.snowflake()}"
        payload = p.interaction(kind, iid, self.app_id, token, self.guild_id, self.channels[channel_id],
                                self._member(who), {**template["data"], **data}, msg, self.app_permissions)
        record = Interaction(iid, token, payload)
        self.interactions[iid] = record
        await self.dispatch("INTERACTION_CREATE", payload)
        return record

    async def slash(self, who: dict[str, Any], name: str, channel_id: str | None = None,
                    **options: Any) -> Interaction:
        command = next(c for c in self.commands if c["name"] == name)
        types = {o["name"]: o["type"] for o in command.get("options", [])}
        opts = [{"name": k, "type": types[k], "value": v["id"] if types[k] == USER_OPTION else v}
                for k, v in options.items()]
        data: dict[str, Any] = {"id": command["id"], "name": name, "type": 1, "options": opts}
        people = [v for k, v in options.items() if types[k] == USER_OPTION]
        if people:  # a user option carries the id; the user and their membership come in `resolved`
            data["resolved"] = {
                "users": {u["id"]: {k: v for k, v in u.items() if not k.startswith("_")} for u in people},
                "members": {u["id"]: {k: v for k, v in self._member(u).items() if k != "user"} for u in people}}
        return await self._interact(2, "interaction_council.json", who, channel_id or self.channel_id, data)

    async def autocomplete(self, who: dict[str, Any], name: str, focused: str, typed: str,
                           channel_id: str | None = None, **options: Any) -> Interaction:
        """Someone typing `typed` into option `focused` of /name (other options already filled in)."""
        command = next(c for c in self.commands if c["name"] == name)
        types = {o["name"]: o["type"] for o in command.get("options", [])}
        assert next(o for o in command["options"] if o["name"] == focused).get("autocomplete"), focused
        opts = [{"name": k, "type": types[k], "value": v} for k, v in options.items()]
        opts.append({"name": focused, "type": types[focused], "value": typed, "focused": True})
        data = {"id": command["id"], "name": name, "type": 1, "options": opts}
        return await self._interact(4, "interaction_council.json", who, channel_id or self.channel_id, data)

    async def wait_for_choices(self, who: dict[str, Any], name: str, focused: str, typed: str,
                               **options: Any) -> list[dict[str, Any]]:
        i = await self.autocomplete(who, name, focused, typed, **options)
        await self.wait_for(lambda: i.callbacks)
        return i.choices()

    async def click(self, who: dict[str, Any], msg: dict[str, Any], custom_id: str) -> Interaction:
        data = {"custom_id": custom_id, "component_type": 2}
        return await self._interact(3, "interaction_button.json", who, msg["channel_id"], data, msg)

    async def select(self, who: dict[str, Any], msg: dict[str, Any], custom_id: str, values: list[str]) -> Interaction:
        """Someone picks `values` in a message's select menu (component type 3)."""
        data = {"custom_id": custom_id, "component_type": 3, "values": values}
        return await self._interact(3, "interaction_button.json", who, msg["channel_id"], data, msg)

    async def submit(self, who: dict[str, Any], channel_id: str, custom_id: str, values: dict[str, str],
                     msg: dict[str, Any] | None = None) -> Interaction:
        rows = [{"type": 1, "components": [{"type": 4, "custom_id": k, "value": v}]} for k, v in values.items()]
        return await self._interact(5, "interaction_modal_submit.json", who, channel_id,
                                    {"custom_id": custom_id, "components": rows}, msg)

    async def say(self, who: dict[str, Any], channel_id: str, content: str, *,
                  mention_bot: bool = False) -> dict[str, Any]:
        public = {k: v for k, v in who.items() if not k.startswith("_")}
        msg = p.message(p.snowflake(), channel_id, public, {"content": content})
        if mention_bot:
            msg["mentions"] = [self.bot]
        self.messages.setdefault(channel_id, []).append(msg)
        event = {**msg, "guild_id": self.guild_id, "member": {k: v for k, v in self._member(who).items()
                                                               if k != "user"}}
        await self.dispatch("MESSAGE_CREATE", event)
        return msg

    def find_button(self, msg: dict[str, Any], label: str) -> str:
        for row in msg.get("components", []):
            for c in row.get("components", []):
                if c.get("label") == label:
                    return str(c["custom_id"])
        raise LookupError(f"no button {label!r} on message {msg['id']}")

    def thread_messages(self, thread_id: str) -> list[dict[str, Any]]:
        return self.messages.get(thread_id, [])

    def calls_to(self, method: str, pattern: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and re.search(pattern, c.path)]
