"""A Web API client that spends the workspace's rate budget before each call, paces new messages per channel,
and answers Slack's 429s by pausing the budget instead of hammering it."""

from __future__ import annotations

import contextvars
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from core.ports import RateLimited
from core.running.budget import Buckets, RateBudget

# Calls a minute per app and workspace, by the tier Slack lists each method Council calls under (Tier 1: 1,
# Tier 2: 20, Tier 3: 50, Tier 4: 100; auth.test is "special", thousands an hour). chat.postMessage has no tier:
# about one a second per channel (see PACED), and a workspace-wide limit Slack gives only as "several hundred a
# minute" (POSTS_PER_MINUTE, its lowest reading). A method not named here is spent as Tier 3 (UNNAMED): so was
# chat.postMessage, which held a busy workspace's new messages to chat.update's 50 a minute.
POSTS_PER_MINUTE = 300
PER_MINUTE = {
    "chat.postMessage": POSTS_PER_MINUTE,
    "chat.update": 50, "chat.delete": 50, "conversations.history": 50, "conversations.replies": 50,
    "conversations.info": 50, "conversations.join": 50, "users.conversations": 50, "usergroups.users.list": 20,
    "conversations.members": 100,
    "chat.postEphemeral": 100, "chat.getPermalink": 100, "users.info": 100, "views.open": 100, "views.update": 100,
    "views.publish": 100, "files.getUploadURLExternal": 100, "files.completeUploadExternal": 100,
    "canvases.create": 20, "conversations.canvases.create": 20, "canvases.edit": 50, "canvases.access.set": 50,
    "auth.test": 100, "apps.connections.open": 1, "reactions.add": 50,
}
UNNAMED = 50.0
# Commercially distributed apps outside the Slack Marketplace: thread and history reads are 1 call a minute (and
# 15 messages a page).
UNLISTED_READS = {"conversations.history": 1, "conversations.replies": 1}
PACED = {"chat.postMessage": "channel", "files.completeUploadExternal": "channel_id"}  # new messages in a channel
MAX_WAITS = 5  # 429s answered for one call of work people must see before the caller is told to come back later
# How a call spends: "final" (work people must see: waits its turn), "live" (live text: only from a full bucket,
# never waited for or retried), "first" (a turn's first live words: above a smaller reserve), "spare" (a courtesy,
# or work another call could do instead: only a call there right now).
PRIORITY: contextvars.ContextVar[str] = contextvars.ContextVar("slack_call_priority", default="final")


def per_minute(read_limited: bool = False) -> dict[str, float]:
    return {**PER_MINUTE, **(UNLISTED_READS if read_limited else {})}


def slack_budget(buckets: Buckets, *, read_limited: bool = False, scale: float = 1.0, **clock: Any) -> RateBudget:
    """The budget of Slack's tiers, as the app spends it: every method has one (UNNAMED for the rest)."""
    return RateBudget(buckets, per_minute(read_limited), default=UNNAMED, scale=scale, **clock)


class Skipped(Exception):
    """A live-text call the budget had no room for (or that Slack refused): the next update carries its text."""


def retry_after(response: AsyncSlackResponse) -> float:
    headers = response.headers or {}
    value = next((v for k, v in headers.items() if k.lower() == "retry-after"), "1")
    if isinstance(value, list):
        value = value[0] if value else "1"
    try:
        return max(1.0, float(value))
    except ValueError:
        return 1.0


async def idle(client: AsyncWebClient, api_method: str) -> bool:
    """Whether the workspace spends no calls of this method right now (taking none): work that would want one
    later (a placeholder, to be edited into its post) is started only then."""
    if not isinstance(client, BudgetedClient):
        return True
    return await client.budget.idle(client.scope, api_method)


class BudgetedClient(AsyncWebClient):
    """One workspace's client (`scope`): every call is spent from `budget` first, by the PRIORITY it is made
    under; live text and spare calls are skipped (Skipped) rather than waited for or retried."""

    def __init__(self, *, budget: RateBudget, scope: str, pace_s: float = 1.0, **kw: Any) -> None:
        super().__init__(**kw)
        self.budget, self.scope, self.pace_s = budget, scope, pace_s

    async def api_call(self, api_method: str, **kw: Any) -> AsyncSlackResponse:  # type: ignore[override]
        body: dict[str, Any] = next((kw[k] for k in ("json", "data", "params") if isinstance(kw.get(k), dict)), {})
        channel = str(body.get(PACED[api_method]) or "") if api_method in PACED else ""
        priority = PRIORITY.get()
        live = priority != "final"
        for attempt in range(MAX_WAITS + 1):
            if live:
                if priority in ("live", "first"):
                    ok = await self.budget.spend_left(self.scope, api_method, first=priority == "first")
                else:
                    ok = await self.budget.spend_spare(self.scope, api_method)
                if not ok:
                    raise Skipped(api_method)
            else:
                if channel:
                    await self.budget.pace(self.scope, channel, self.pace_s)
                await self.budget.spend(self.scope, api_method)
            try:
                return await super().api_call(api_method, **kw)
            except SlackApiError as exc:
                if exc.response.status_code != 429:
                    raise
                after = retry_after(exc.response)
                await self.budget.refused(self.scope, api_method, after, channel)
                if live:
                    raise Skipped(api_method) from exc
                if attempt == MAX_WAITS:
                    raise RateLimited(f"Slack asked to slow down ({api_method})", after / self.budget.scale) from exc
                if not channel and self.budget.rate(api_method) is None:  # no bucket holds the pause: wait it here
                    await self.budget.wait(after)
        raise AssertionError("unreachable")
