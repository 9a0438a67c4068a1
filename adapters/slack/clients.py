"""Web API clients (base_url, rate-limit retries), tokens per workspace, user look-ups, ephemeral replies."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine, Hashable
from dataclasses import dataclass
from typing import Any

from aiohttp import ClientSession
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.budgeted import BudgetedClient
from adapters.slack.markup import escape, times
from core.running.budget import RateBudget

log = logging.getLogger(__name__)
USER_TTL_S = 300.0
# Methods a second call cannot duplicate: reads, and writes that set a state rather than add one. A connection
# dropped after Slack acted on any other (chat.postMessage, canvases.create, files.completeUploadExternal...) is
# never sent again blindly: the caller looks for what the first call made (SlackChat._post) or lets it fail.
IDEMPOTENT = frozenset({
    "auth.test", "team.info", "users.info", "users.conversations", "usergroups.users.list", "chat.getPermalink",
    "conversations.history", "conversations.replies", "conversations.info", "conversations.join",
    "chat.update", "chat.delete", "canvases.edit", "canvases.access.set", "views.update", "views.publish",
    "apps.connections.open",
})


def api_method(url: str) -> str:
    """The Web API method a request calls: the last part of its URL's path."""
    return url.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]


class IdempotentRetry(AsyncConnectionErrorRetryHandler):
    """slack_sdk's connection-error retry, for IDEMPOTENT methods only: when Slack stored a chat.postMessage and
    the answer was lost, calling again would post it twice."""

    async def _can_retry_async(self, *, state: RetryState, request: HttpRequest,
                               response: HttpResponse | None = None, error: Exception | None = None) -> bool:
        if api_method(request.url) not in IDEMPOTENT:
            return False
        return await super()._can_retry_async(state=state, request=request, response=response, error=error)


def web_client(
    base_url: str, token: str | None = None, *, rate_limit_retries: int = 5, session: ClientSession | None = None,
    budget: RateBudget | None = None, workspace: str = "", pace_s: float = 1.0,
) -> AsyncWebClient:
    """Every client the app builds: pointed at SLACK_API_URL. Give it the process's one `session`: without one,
    slack_sdk opens (and closes) a new HTTP session, so a new connection and TLS handshake, for every single call.
    With a `budget`, the workspace's client spends it before each call and paces new messages per channel
    (BudgetedClient answers 429s); without one, 429s are retried after Retry-After."""
    base_url = base_url if base_url.endswith("/") else base_url + "/"
    connection = IdempotentRetry(max_retry_count=1)
    if budget is not None:
        return BudgetedClient(budget=budget, scope=workspace, pace_s=pace_s, token=token, base_url=base_url,
                              session=session, retry_handlers=[connection])
    return AsyncWebClient(token=token, base_url=base_url, session=session, retry_handlers=[
        AsyncRateLimitErrorRetryHandler(max_retry_count=rate_limit_retries), connection])


class SingleWorkspace:
    """One bot token for every workspace (SLACK_BOT_TOKEN); with a `budget`, a budgeted client per workspace."""

    def __init__(self, client: AsyncWebClient, budget: RateBudget | None = None, pace_s: float = 1.0) -> None:
        self.client, self.budget, self.pace_s = client, budget, pace_s
        self._clients: dict[str, AsyncWebClient] = {}

    async def __call__(self, workspace: str) -> AsyncWebClient:
        if self.budget is None:
            return self.client
        client = self._clients.get(workspace)
        if client is None:
            client = self._clients[workspace] = web_client(
                self.client.base_url, self.client.token, session=self.client.session, budget=self.budget,
                workspace=workspace, pace_s=self.pace_s)
        return client


class Installations:
    """Multi-workspace: each workspace's bot token from the OAuth installation store."""

    def __init__(self, store: AsyncInstallationStore, base_url: str, session: ClientSession | None = None,
                 budget: RateBudget | None = None, pace_s: float = 1.0) -> None:
        self.store, self.base_url, self.session = store, base_url, session
        self.budget, self.pace_s = budget, pace_s
        self._clients: dict[str, tuple[str, AsyncWebClient]] = {}

    async def __call__(self, workspace: str) -> AsyncWebClient:
        bot = await self.store.async_find_bot(enterprise_id=None, team_id=workspace)
        if bot is None or not bot.bot_token:
            raise LookupError(f"the app is not installed in workspace {workspace}")
        cached = self._clients.get(workspace)
        if cached is None or cached[0] != bot.bot_token:
            cached = (bot.bot_token, web_client(self.base_url, bot.bot_token, session=self.session,
                                                budget=self.budget, workspace=workspace, pace_s=self.pace_s))
            self._clients[workspace] = cached
        return cached[1]


@dataclass
class User:
    name: str
    is_admin: bool = False
    tz: str = ""
    groups: tuple[str, ...] = ()
    guest: bool = False  # a multi- or single-channel guest (is_restricted / is_ultra_restricted)


class Users:
    """users.info, cached for a few minutes: display names, admin rights, time zones; and, for the user groups
    named as admins (COUNCIL_ADMINS), whether the person is in them (usergroups.users.list, cached alike)."""

    def __init__(self, admin_groups: frozenset[str] = frozenset()) -> None:
        self._cache: dict[tuple[str, str], tuple[float, User]] = {}
        self.admin_groups = admin_groups
        self._members: dict[tuple[str, str], tuple[float, frozenset[str]]] = {}

    async def _group_members(self, client: AsyncWebClient, team: str, group: str) -> frozenset[str]:
        hit = self._members.get((team, group))
        if hit is not None and time.monotonic() - hit[0] < USER_TTL_S:
            return hit[1]
        try:
            resp = await client.usergroups_users_list(usergroup=group)
        except SlackApiError as exc:  # no usergroups:read, or a group of another workspace: nobody is in it
            log.warning("usergroups.users.list failed for %s: %s", group, exc.response.get("error"))
            return frozenset()
        members = frozenset(resp.get("users") or [])
        self._members[(team, group)] = (time.monotonic(), members)
        return members

    async def _groups_of(self, client: AsyncWebClient, team: str, user_id: str) -> tuple[str, ...]:
        return tuple(sorted([g for g in self.admin_groups if user_id in await self._group_members(client, team, g)]))

    async def get(self, client: AsyncWebClient, team: str, user_id: str, fallback: str = "") -> User:
        hit = self._cache.get((team, user_id))
        if hit is not None and time.monotonic() - hit[0] < USER_TTL_S:
            return hit[1]
        try:
            resp = await client.users_info(user=user_id)
        except SlackApiError as exc:
            log.warning("users.info failed for %s: %s", user_id, exc.response.get("error"))
            return User(name=fallback or user_id)
        u: dict[str, Any] = resp.get("user") or {}
        profile = u.get("profile") or {}
        # In a Slack Connect channel users.info describes a person of another organisation by their own team: its
        # admins are not this workspace's. An Enterprise Grid member lists every workspace they belong to.
        teams = {u.get("team_id"), *((u.get("enterprise_user") or {}).get("teams") or [])}
        ours = (not team or not u.get("team_id") or team in teams) and not u.get("is_stranger")
        user = User(
            name=profile.get("display_name") or profile.get("real_name") or u.get("real_name") or u.get("name")
            or fallback or user_id,
            is_admin=ours and bool(u.get("is_admin") or u.get("is_owner") or u.get("is_primary_owner")),
            guest=bool(u.get("is_restricted") or u.get("is_ultra_restricted")) or not ours,
            tz=u.get("tz") or "",
            groups=await self._groups_of(client, team, user_id),
        )
        self._cache[(team, user_id)] = (time.monotonic(), user)
        return user


async def ephemeral(client: AsyncWebClient, channel: str, user: str, text: str, *, thread_ts: str | None = None,
                    response_url: str | None = None, blocks: list[dict[str, Any]] | None = None,
                    replace: bool = False, markup: bool = False) -> None:
    """Tell one person something only they see; through response_url when the bot can't post there. With
    `replace`, the answer takes the place of the private message whose button was pressed (a confirm step).
    `text` is plain words, escaped here, unless `markup` says it is mrkdwn the adapter built (and escaped)."""
    text = times(text if markup else escape(text))  # the core's time markers, shown in the reader's own zone
    if replace and response_url and await respond(response_url, text=text, blocks=blocks or [],
                                                  response_type="ephemeral", replace_original=True):
        return
    try:
        args: dict[str, Any] = {"channel": channel, "user": user, "text": text}
        if thread_ts:
            args["thread_ts"] = thread_ts
        if blocks:
            args["blocks"] = blocks
        await client.chat_postEphemeral(**args)
        return
    except SlackApiError as exc:
        error = exc.response.get("error")
    if response_url and await respond(response_url, text=text, blocks=blocks, response_type="ephemeral",
                                      replace_original=False):
        return
    # A channel Council is not in (a form sent from there), or a response_url Slack no longer takes: the person's
    # direct message with the app instead.
    log.info("no ephemeral for %s in %s (%s); sending a direct message", user, channel, error)
    try:
        await client.chat_postMessage(channel=user, text=text, blocks=blocks)
    except SlackApiError as dm_exc:
        log.warning("could not tell %s privately: %s", user, dm_exc.response.get("error"))


async def respond(response_url: str, **body: Any) -> bool:
    """Post to an interaction's response_url; False (logged) when Slack refuses it: it takes five posts within 30
    minutes, then answers used_url or expired_url."""
    try:
        resp = await AsyncWebhookClient(response_url).send(**body)
    except Exception:
        log.warning("could not answer through response_url", exc_info=True)
        return False
    if resp.status_code != 200:
        log.warning("Slack refused the response_url (%s): %s", resp.status_code, resp.body[:200])
        return False
    return True


async def dismiss(response_url: str | None) -> None:
    """Remove the private message whose button was pressed (a confirm step cancelled)."""
    if response_url:
        await respond(response_url, delete_original=True)


class Tasks:
    """Background work started after ack(): kept referenced, failures logged, awaitable in tests."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._last: dict[Hashable, asyncio.Task[Any]] = {}  # per key, the latest work spawned in order

    def hold_current(self) -> None:
        """Count the running listener as work in flight until it returns: Bolt runs it on after ack(), so a
        server must not call itself idle (nor stop) while it is still opening a form or spawning its work."""
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str = "slack") -> None:
        task = asyncio.create_task(self._logged(coro), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def spawn_in_order(self, key: Hashable, coro: Coroutine[Any, Any, Any], name: str = "slack") -> None:
        """Like spawn, but only once the work spawned earlier under `key` has finished: one person's clicks on
        one message count in the order Slack delivered them, whichever lookup answers first."""
        before = self._last.get(key)

        async def in_turn() -> None:
            if before is not None:
                await asyncio.wait({before})  # its failure is its own (logged): this work goes on
            await coro

        task = asyncio.create_task(self._logged(in_turn()), name=name)
        self._last[key] = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        task.add_done_callback(lambda done: self._last.pop(key) if self._last.get(key) is done else None)

    @staticmethod
    async def _logged(coro: Coroutine[Any, Any, Any]) -> None:
        try:
            await coro
        except Exception:
            log.exception("background Slack work failed")

    async def idle(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
