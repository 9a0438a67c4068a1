"""The Slack process: aiohttp on $PORT (/slack/events, /healthz, OAuth) or Socket Mode, plus the sweeper.

Secrets are kept out of the logs by the filter every command installs (bot/logs.py), not here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.async_app import AsyncApp
from slack_bolt.authorization.async_authorize import AsyncInstallationStoreAuthorize
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.state_store.sqlalchemy import AsyncSQLAlchemyOAuthStateStore
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.app import register
from adapters.slack.budgeted import slack_budget
from adapters.slack.chat import ClientFor, SlackChat
from adapters.slack.clients import Installations, SingleWorkspace, Tasks, Users, web_client
from adapters.slack.handlers import Council
from adapters.slack.installs import ExpiringInstallations, SealedInstallations, sealer_for_oauth
from adapters.slack.place import CoreApp
from core.ports import ChatPort
from core.running.budget import RateBudget, buckets_for

log = logging.getLogger(__name__)
EVENTS_PATH = "/slack/events"
# No chat:write.public: Council joins a channel (channels:join) before it posts there, because it must hear it;
# the :read scopes let it ask whether it is in a conversation before starting one there.
BOT_SCOPES = ["commands", "chat:write", "chat:write.customize", "app_mentions:read", "channels:history",
              "groups:history", "channels:join", "channels:read", "groups:read", "im:read", "mpim:read",
              "users:read", "usergroups:read", "files:write", "canvases:write", "reactions:write"]


class ClosableCore(CoreApp, Protocol):
    async def close(self, grace_s: float = ...) -> None: ...


Build = Callable[[Mapping[str, ChatPort]], Awaitable[ClosableCore]]


@dataclass
class SlackConfig:
    signing_secret: str = ""
    bot_token: str = ""
    app_token: str = ""  # Socket Mode when set
    api_url: str = "https://slack.com/api/"
    client_id: str = ""  # with client_secret: multi-workspace OAuth install
    client_secret: str = ""
    host: str = "0.0.0.0"
    port: int = 3000
    sweep_interval_s: float = 15.0
    default_tz: str = "UTC"
    pace_s: float = 1.0  # seconds between new messages in one channel (Slack's seconds)
    time_scale: float = 1.0  # Slack's rate limits run this much faster than the wall clock (tests and benches)
    read_limited: bool = False  # distributed outside the Slack Marketplace: thread reads 1 a minute, not Tier 3
    rate_budget: bool = True  # False (benches of the app itself): no per-method budget; posts are still paced
    scopes: list[str] = field(default_factory=lambda: list(BOT_SCOPES))
    admin_groups: frozenset[str] = frozenset()  # Slack user-group ids (S…) in COUNCIL_ADMINS
    encryption_key: str = ""  # COUNCIL_ENCRYPTION_KEY: OAuth installs keep their tokens encrypted under it
    # The seconds Slack's limits and live edits are kept on, and how a wait for them is waited out (tests give
    # virtual time); None: the real clock and the loop's timer.
    wall: Callable[[], float] | None = None
    sleep: Callable[[float], Awaitable[None]] | None = None

    def clock(self) -> dict[str, Any]:
        """The rate budget's clock arguments: only those given."""
        return {k: v for k, v in (("wall", self.wall), ("sleep", self.sleep)) if v is not None}


class SlackServer:
    """`await server.start()`, then requests are served until `await server.stop()`."""

    def __init__(self, config: SlackConfig, build: Build, routes: list[web.RouteDef] | None = None) -> None:
        self.config, self.build = config, build
        self.routes = routes or []  # more pages on the same port (the discussion pages, mounted by the wiring)
        self.tasks = Tasks()
        self.chat = SlackChat(self._client_for, time_scale=config.time_scale, monotonic=config.wall or time.monotonic)
        self.budget: RateBudget | None = None
        self.core: ClosableCore | None = None
        self.bolt: AsyncApp | None = None
        self._tokens: ClientFor | None = None
        self._runner: web.AppRunner | None = None
        self._sweeper: asyncio.Task[None] | None = None
        self._socket: Any = None
        self._http: aiohttp.ClientSession | None = None
        self.port = config.port

    async def _last_ref(self, discussion_id: str) -> str:
        assert self.core is not None
        async with self.core.store.tx() as tx:
            return await tx.last_sent_ref(discussion_id)

    async def _keep_ref(self, key: str, ref: str) -> None:
        assert self.core is not None
        async with self.core.store.tx() as tx:
            await tx.note_ref(key, ref)

    async def _kept_ref(self, key: str) -> str:
        assert self.core is not None
        async with self.core.store.tx() as tx:
            return await tx.noted_ref(key)

    async def _client_for(self, workspace: str) -> AsyncWebClient:
        if self._tokens is None:
            raise RuntimeError("the Slack app is not started")
        return await self._tokens(workspace)

    # lifecycle ---------------------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        if not cfg.app_token and not cfg.signing_secret:
            raise ValueError("SLACK_SIGNING_SECRET is required to serve /slack/events (or set SLACK_APP_TOKEN)")
        if not cfg.bot_token and not (cfg.client_id and cfg.client_secret):
            raise ValueError("set SLACK_BOT_TOKEN, or SLACK_CLIENT_ID and SLACK_CLIENT_SECRET for OAuth installs")
        if cfg.client_id and cfg.client_secret:
            sealer_for_oauth(cfg.encryption_key)  # refused before serving anything when there is no key
        web_app = web.Application()
        web_app.add_routes([web.get("/healthz", self._health), web.post(EVENTS_PATH, self._events),
                            web.get("/slack/install", self._oauth), web.get("/slack/oauth_redirect", self._oauth),
                            *self.routes])
        self._runner = web.AppRunner(web_app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, cfg.host, cfg.port)
        await site.start()
        server = getattr(site, "_server", None)
        if server is not None and server.sockets:
            self.port = server.sockets[0].getsockname()[1]
        log.info("listening on %s:%s", cfg.host, self.port)
        self.core = await self.build({"slack": self.chat})  # migrates: /healthz answers 200 from here on
        self.chat.last_ref = self._last_ref
        self.chat.canvases.keep, self.chat.canvases.kept = self._keep_ref, self._kept_ref
        self.bolt = await self._bolt(self.core)
        register(self.bolt, Council(self.core, Users(cfg.admin_groups), cfg.default_tz, self._client_for), self.tasks)
        if cfg.app_token:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(self.bolt, cfg.app_token)
            await self._socket.connect_async()
            log.info("connected to Slack in Socket Mode")
        self._sweeper = asyncio.create_task(self._sweep(), name="slack:sweeper")

    async def _bolt(self, core: ClosableCore) -> AsyncApp:
        cfg = self.config
        # One HTTP session for every Web API call of this process: connections are kept alive and reused.
        self._http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        base = web_client(cfg.api_url, cfg.bot_token or None, session=self._http)
        # One budget per workspace and method for every replica (in the database on PostgreSQL).
        buckets = buckets_for(core.store, cfg.time_scale)
        self.budget = slack_budget(buckets, read_limited=cfg.read_limited, scale=cfg.time_scale, **cfg.clock()) \
            if cfg.rate_budget else RateBudget(buckets, {}, scale=cfg.time_scale, **cfg.clock())
        if cfg.client_id and cfg.client_secret:
            engine = core.store.engine
            sealed = SealedInstallations(sealer_for_oauth(cfg.encryption_key), client_id=cfg.client_id,
                                         engine=engine)
            states = AsyncSQLAlchemyOAuthStateStore(expiration_seconds=600, engine=engine)
            await sealed.create_tables()
            await states.create_tables()
            installs = ExpiringInstallations(sealed, version=sealed.async_version)
            self._tokens = Installations(installs, cfg.api_url, self._http, self.budget, cfg.pace_s)
            oauth = AsyncOAuthSettings(client_id=cfg.client_id, client_secret=cfg.client_secret, scopes=cfg.scopes,
                                       installation_store=installs, state_store=states)
            client = web_client(cfg.api_url, session=self._http)
            # Bolt asks Slack who the app is (auth.test) on every request unless told to remember it per token.
            authorize = AsyncInstallationStoreAuthorize(
                logger=log, installation_store=installs, client_id=cfg.client_id, client_secret=cfg.client_secret,
                cache_enabled=True, client=client)
            return AsyncApp(client=client, signing_secret=cfg.signing_secret, oauth_settings=oauth,
                            authorize=authorize,  # type: ignore[arg-type]  # bolt takes an AsyncAuthorize as it is
                            name="council")
        self._tokens = SingleWorkspace(base, self.budget, cfg.pace_s)
        return AsyncApp(client=base, signing_secret=cfg.signing_secret, name="council")

    async def _sweep(self) -> None:
        """Pick up discussions left without a driver (a crash, a restart, a missed wake-up)."""
        while self.core is not None:
            try:
                await self.core.driver.sweep()
            except Exception:
                log.warning("sweep failed", exc_info=True)
            await asyncio.sleep(self.config.sweep_interval_s)

    async def idle(self) -> None:
        """Wait until listeners and drivers have nothing left to do (tests, shutdown)."""
        assert self.core is not None
        for _ in range(100):
            await self.tasks.idle()
            await self.core.driver.idle()
            if not self.tasks._tasks and not [t for t in self.core.driver._tasks.values() if not t.done()]:
                return

    async def stop(self, grace_s: float = 10.0) -> None:
        """Stop serving; events already acknowledged get `grace_s` to be stored, while discussion drivers stop at
        once and release their leases (what they were running resumes at once elsewhere or after restart)."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        if self._socket is not None:
            await self._socket.close_async()
        if self._runner is not None:
            await self._runner.cleanup()
        if self.core is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.tasks.idle(), grace_s)
            if self.budget is not None:  # its buckets let go, while the database is still there to say so
                await self.budget.buckets.close()
            core, self.core = self.core, None
            await core.close(0.0)
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def serve_forever(self) -> None:
        await self.start()
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stopping.set)
        try:
            await stopping.wait()
        finally:
            log.info("shutting down")
            await self.stop()

    # routes -----------------------------------------------------------------------------------------
    async def _health(self, request: web.Request) -> web.Response:
        if self.bolt is None:
            return web.json_response({"status": "starting"}, status=503)
        return web.json_response({"status": "ok"})

    async def _events(self, request: web.Request) -> web.Response:
        if self.bolt is None:
            return web.Response(status=503, text="starting")
        bolt_resp = await self.bolt.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_resp)

    async def _oauth(self, request: web.Request) -> web.Response:
        flow = self.bolt.oauth_flow if self.bolt is not None else None
        if flow is None:
            return web.Response(status=404, text="This app is installed with a bot token; there is no install page.")
        bolt_req = await to_bolt_request(request)
        if request.path == flow.install_path:
            return await to_aiohttp_response(await flow.handle_installation(bolt_req))
        return await to_aiohttp_response(await flow.handle_callback(bolt_req))
