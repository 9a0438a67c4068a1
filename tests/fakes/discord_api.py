"""Loopback fake of Discord: the REST API under /api/v10 and a gateway websocket, for the real discord.py."""

from __future__ import annotations

import asyncio
import functools
import json
import math
import re
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import BodyPartReader, WSMsgType, web

from tests.fakes import discord_payloads as p
from tests.fakes import discord_rules as r
from tests.fakes.discord_driving import Call, Driving, Interaction

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


class FakeDiscord(Driving):
    """`async with FakeDiscord() as fake:` then point DISCORD_API_URL at `fake.api_url`."""

    def __init__(self, *, token: str = "test-token", manage_webhooks: bool = True,
                 message_content: bool = True, shards: int = 1, thread_events: bool = True,
                 clock: Callable[[], float] | None = None, permissions: int = p.INVITE_PERMISSIONS) -> None:
        from tests.fakes.discord_paths import ROUTES

        self.token, self.message_content, self.shards = token, message_content, shards
        self.clock: Callable[[], float] = clock or r.WallClock()
        # The bot's role in the guild (by default what the README's invite grants) and per-channel overwrites.
        self.bot_base = permissions if manage_webhooks else permissions & ~r.MANAGE_WEBHOOKS
        self.overwrites: dict[str, r.Overwrite] = {}
        # discord.py waits out a bucket in real time, so buckets count real seconds whatever clock a test injects.
        self.limits = r.Limits(r.WallClock())
        self.global_limit = r.Bucket("global", 50, 1.0)  # requests a second per bot, across routes
        self.command_creates: dict[int, int] = {}  # day on the clock -> application commands created
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
        self.interactions: dict[str, Interaction] = {}
        self.nonces: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.faults: list[Fault] = []
        self.delivery_lag_s = 0.0  # how long ago Discord created the interactions it now delivers (gateway lag)
        # What each next interaction callback waits for before it is answered (a later one may win): awaited, so
        # nothing waits on real time.
        self.latency: deque[Callable[[], Awaitable[Any]]] = deque()
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

    async def delivered(self, limit_s: float = 15.0) -> None:
        """Wait until every session has read every frame sent to it so far. Discord's gateway may ask for a
        heartbeat (op 1) at any time and the client sends one at once, carrying the last sequence number it read:
        frames are read in order, so its answer comes after it has parsed (and given to its handlers) everything
        before. Frames sent meanwhile are for the next call (`all_read` tells whether there are any)."""
        asked = [(ws, session, session["sent"]) for ws, session in self._live() if session["seen"] < session["sent"]]
        for ws, _, _ in asked:
            await ws.send_json({"op": 1, "d": None, "s": None, "t": None})
        await self.wait_for(lambda: all(ws.closed or session["seen"] >= upto for ws, session, upto in asked), limit_s)

    def all_read(self) -> bool:
        return all(session["seen"] >= session["sent"] for _, session in self._live())

    def _live(self) -> list[tuple[web.WebSocketResponse, dict[str, Any]]]:
        return [(ws, session) for ws, session in self.sockets if not ws.closed]

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
        bucket = self.limits.bucket(request.method, path)
        if not path.startswith("/interactions/") and (wait := self.global_limit.take(self.limits.clock())):
            self.limits.answered_429 += 1
            return self.limited(wait, bucket, scope="global")
        if wait := self.limits.retry_after(bucket):
            return self.limited(wait, bucket, scope="user")
        for method, pattern, handler in self.routes:
            match = pattern.match(path)
            if match and method == request.method:
                if self.latency and path.endswith("/callback"):
                    await self.latency.popleft()()
                response = await handler(request, match, body)
                response.headers.update(bucket.headers(self.limits.clock()))
                return response
        return self.error(404, 0, "404: Not Found")

    def limited(self, retry_after: float, bucket: r.Bucket, *, scope: str) -> web.Response:
        """A 429 as Discord sends it: the bucket's headers, Retry-After, the scope, and retry_after in the body."""
        is_global = scope == "global"
        headers = {**bucket.headers(self.limits.clock()), "X-RateLimit-Remaining": "0", "X-RateLimit-Scope": scope,
                   "Retry-After": str(max(1, math.ceil(retry_after))), "Via": "1.1 google"}
        if is_global:
            headers["X-RateLimit-Global"] = "true"
        body = {"message": "You are being rate limited.", "retry_after": retry_after, "global": is_global,
                "code": 0}
        return as_json(body, 429, headers)

    @staticmethod
    def ok(data: Any, status: int = 200) -> web.Response:
        headers = {"Via": "1.1 google"}  # the bucket's headers are added on the way out
        if status == 204:
            return web.Response(status=204, headers=headers)
        return as_json(data, status, headers)

    @staticmethod
    def error(status: int, code: int, message: str, errors: dict[str, Any] | None = None) -> web.Response:
        """Discord's JSON error: a code and message; a form body refused names each bad field under `errors`."""
        body: dict[str, Any] = {"message": message, "code": code, **({"errors": errors} if errors else {})}
        return as_json(body, status, {"Via": "1.1 google"})

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
        # sent: the sequence number of the last dispatch sent; seen: the last one a heartbeat said was read.
        session: dict[str, Any] = {"identified": False, "shard": [0, 1], "intents": 0, "sent": 0, "seen": 0}
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            msg = json.loads(frame.data)
            op, data = msg.get("op"), msg.get("d")
            if op == 1:
                session["seen"] = max(session["seen"], data or 0)
                await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
            elif op == 2:
                await self._identify(ws, session, data)
            elif op == 6:
                session["identified"] = True
                self.sockets.append((ws, session))
                await self._send(ws, session, "RESUMED", {})
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
        await self._send(ws, session, "READY", ready)
        if mine:
            await self._send(ws, session, "GUILD_CREATE", self.guild_payload())

    @staticmethod
    def _shard_of(guild_id: str, count: int) -> int:
        return (int(guild_id) >> 22) % count

    @property
    def app_flags(self) -> int:
        return p.FLAG_MESSAGE_CONTENT_LIMITED if self.message_content else 0

    def guild_payload(self) -> dict[str, Any]:
        members = [p.member(self.bot)]
        channels = [c for c in self.channels.values() if c["type"] not in (*r.THREADS, r.DM)]
        threads = [c for c in self.channels.values() if c["type"] in r.THREADS]
        return p.guild(self.guild_id, self.owner_id, channels, members, threads)

    async def _send(self, ws: web.WebSocketResponse, session: dict[str, Any], event: str, data: dict[str, Any]) -> None:
        self._seq += 1
        session["sent"] = self._seq
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
            await self._send(ws, session, event, payload)
        await self.notify()

    def _visible(self, data: dict[str, Any], intents: int) -> dict[str, Any]:
        """Without the Message Content intent, others' messages arrive empty unless they mention the bot."""
        if intents & p.MESSAGE_CONTENT_INTENT or data["author"]["id"] == self.app_id:
            return data
        if any(m["id"] == self.app_id for m in data.get("mentions", [])):
            return data
        return {**data, "content": "", "embeds": [], "attachments": [], "components": []}
