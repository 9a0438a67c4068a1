"""Exactly once: a chat.postMessage whose answer was lost is looked for by its metadata before it is sent again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.budgeted import Skipped

log = logging.getLogger(__name__)
# What a call whose answer never came raises: the connection dropped or timed out after the request left, so Slack
# may have stored the message (slack_sdk does not retry these for chat.postMessage: see clients.IdempotentRetry).
LOST = (aiohttp.ClientError, asyncio.TimeoutError)
PAGE = 15  # messages per read: the most Slack gives an app outside its Marketplace
PAGES = 4  # a thread read from the last known post: the lost one is among its newest messages
After = Callable[[], Awaitable[str]]  # the newest message known to be in the thread before this one ("": none)


def known(ts: str) -> After:
    """`after` for a post that follows the message `ts`."""
    async def newest() -> str:
        return ts
    return newest


class NotKnown(Exception):
    """The post may or may not be in Slack, and the look for it failed: it is not sent again blindly."""


def identity(args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The post's metadata (event type and payload: its outbox key and part), what finds it again."""
    meta = args.get("metadata") or {}
    payload = meta.get("event_payload") or {}
    if not meta.get("event_type") or not payload.get("key"):
        return None
    return str(meta["event_type"]), dict(payload)


async def post_once(client: AsyncWebClient, args: dict[str, Any], after: After | None = None) -> str:
    """chat.postMessage, exactly once: when the answer is lost, the thread (or the channel) is read for a message
    carrying the same metadata; only if none is there is the post sent again. NotKnown when the look fails."""
    try:
        return str((await client.chat_postMessage(**args))["ts"])
    except LOST as exc:
        lost: BaseException = exc
    ident = identity(args)
    if ident is None:  # nothing to find it by: a second post could be a duplicate, none a loss; the caller decides
        raise NotKnown("a message without metadata lost its answer") from lost
    try:
        found = await find(client, str(args["channel"]), args.get("thread_ts"), ident, after)
    except (SlackApiError, Skipped, *LOST) as exc:
        raise NotKnown(f"could not look for {ident[1]} after its answer was lost") from exc
    if found:
        log.info("the post %s landed though its answer was lost: %s", ident[1], found)
        return found
    log.info("the post %s did not land; sending it again", ident[1])
    return str((await client.chat_postMessage(**args))["ts"])


async def find(client: AsyncWebClient, channel: str, thread: str | None, ident: tuple[str, dict[str, Any]],
               after: After | None) -> str:
    """The ts of the message carrying `ident` ("" when none): in a thread, its messages from the newest one known
    before it (conversations.replies lists the earliest first); at the top level, the channel's newest page."""
    if not thread:
        resp = await client.conversations_history(channel=channel, include_all_metadata=True, limit=PAGE)
        return _match(list(resp.get("messages") or []), ident)
    oldest = (await after() if after is not None else "") or thread
    cursor = ""
    for _ in range(PAGES):
        resp = await client.conversations_replies(channel=channel, ts=thread, oldest=oldest, inclusive=True,
                                                  include_all_metadata=True, limit=PAGE, cursor=cursor or None)
        if found := _match(list(resp.get("messages") or []), ident):
            return found
        cursor = str((resp.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor:
            return ""
    raise NotKnown(f"{ident[1]} not among the {PAGES * PAGE} messages read")


def _match(messages: list[dict[str, Any]], ident: tuple[str, dict[str, Any]]) -> str:
    kind, payload = ident
    for m in messages:
        meta = m.get("metadata") or {}
        theirs = meta.get("event_payload") or {}
        if meta.get("event_type") == kind and all(theirs.get(k) == v for k, v in payload.items()):
            return str(m["ts"])
    return ""
