"""A thread read for context, newest pages first: the newest messages are the ones that matter, and what was not
read is counted, so the context can say so."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.budgeted import PRIORITY, Skipped

log = logging.getLogger(__name__)
# Slack suggests pages of at most 200 (an app outside its Marketplace gets 15); ten keep a start from reading long.
PAGE, PAGES = 200, 10


@dataclass
class Thread:
    """The messages read, oldest first (the parent first when it was read); `unread`: how many of the thread's
    messages were not (None: more were, and Slack did not say how many)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    unread: int | None = 0

    @property
    def parent(self) -> dict[str, Any] | None:
        first = self.messages[0] if self.messages else None
        return first if first is not None and first.get("thread_ts") in (None, first.get("ts")) else None


async def read(client: AsyncWebClient, channel: str, thread_ts: str, *, newest: str = "",
               parent_needed: bool = False) -> Thread:
    """The thread up to `newest` (now when not given), read backwards a page at a time (conversations.replies
    with `latest` and `inclusive`): the first page with a call the workspace must wait for, the older ones only
    with calls it has to spare right now (an app Slack limits to a read a minute keeps what it has rather than
    hold the start for minutes). The parent, when not reached, is asked for apart (conversations.history: its
    own budget): it carries the topic and the thread's reply count. `parent_needed`: wait for that call too."""
    pages: list[list[dict[str, Any]]] = []  # replies, a page each, oldest page first
    parent: dict[str, Any] | None = None  # Slack may list it on every page: it is kept apart
    latest, inclusive, complete = newest or f"{time.time():.6f}", True, False
    try:
        for page in range(PAGES):
            marked = PRIORITY.set("spare" if page else "final")
            try:
                resp = await client.conversations_replies(channel=channel, ts=thread_ts, latest=latest,
                                                          inclusive=inclusive, limit=PAGE)
            finally:
                PRIORITY.reset(marked)
            got = sorted(resp.get("messages") or [], key=lambda m: float(m["ts"]))
            parent = parent or next((m for m in got if m["ts"] == thread_ts), None)
            seen = {m["ts"] for p in pages for m in p}
            replies = [m for m in got if m["ts"] != thread_ts and m["ts"] not in seen]
            if replies:
                pages.insert(0, replies)
            if not resp.get("has_more") or not replies:
                complete = True
                break
            latest, inclusive = str(replies[0]["ts"]), False  # the page before this one
    except Skipped:
        log.info("thread %s read in part: no read to spare now", thread_ts)
    except SlackApiError as exc:
        log.warning("could not read the thread for context: %s", exc.response.get("error"))
    replies = [m for p in pages for m in p]
    if parent is None:
        parent = await _parent(client, channel, thread_ts, parent_needed)
    if complete:
        return Thread([*([parent] if parent else []), *replies])
    if parent is None:
        return Thread(replies, unread=None)
    return Thread([parent, *replies], unread=max(0, int(parent.get("reply_count") or 0) - len(replies)))


async def _parent(client: AsyncWebClient, channel: str, thread_ts: str, needed: bool) -> dict[str, Any] | None:
    """The thread's first message, with its reply_count: the newest top-level message up to and including it."""
    marked = PRIORITY.set("final" if needed else "spare")
    try:
        resp = await client.conversations_history(channel=channel, latest=thread_ts, inclusive=True, limit=1)
    except Skipped:
        log.info("thread %s: no read of its first message to spare now", thread_ts)
        return None
    except SlackApiError as exc:
        log.warning("could not read the first message of thread %s: %s", thread_ts, exc.response.get("error"))
        return None
    finally:
        PRIORITY.reset(marked)
    found = next((m for m in resp.get("messages") or [] if m.get("ts") == thread_ts), None)
    return dict(found) if found is not None else None
