"""A channel's decision log (or a workspace's, for admins): signed links to it, and what it lists, newest first or
found by the records' full-text search."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from core.models import Decision, Discussion
from core.showing.pages import MAX_EXPIRY_DIGITS, SIG_CHARS, PageLinks
from core.storage.store import Store

LOG_TTL = timedelta(days=1)  # membership changes: a link given to a member stops working soon after they leave
MOST = 100  # entries on one page of the log


@dataclass(frozen=True)
class Place:
    """Whose log: one channel's, or (channel "") the workspace's public discussions, for its admins."""

    platform: str
    workspace: str
    channel: str = ""

    @property
    def fields(self) -> dict[str, str]:
        return {"p": self.platform, "w": self.workspace, "c": self.channel}


@dataclass(frozen=True)
class LogLinks:
    """Links to decision logs under the pages' secret (a key of its own derived from it, so no page's signature
    is ever a log's), valid for LOG_TTL. Whoever holds one reads that log: it is given only to those who may."""

    pages: PageLinks
    ttl: timedelta = LOG_TTL

    @property
    def enabled(self) -> bool:
        return self.pages.enabled

    def signature(self, place: Place, expires: int) -> str:
        key = hmac.new(self.pages.secret.encode(), b"decision-log", hashlib.sha256).digest()
        message = "\x1f".join([place.platform, place.workspace, place.channel, str(expires)])
        return hmac.new(key, message.encode(), hashlib.sha256).hexdigest()[:SIG_CHARS]

    def url(self, place: Place, now: datetime) -> str:
        if not self.enabled:
            return ""
        expires = int((now + self.ttl).timestamp())
        query = urlencode({**place.fields, "exp": expires, "sig": self.signature(place, expires)})
        return f"{self.pages.base_url.rstrip('/')}/log?{query}"

    def valid(self, place: Place, expires: str, signature: str, now: datetime) -> bool:
        ok = (bool(self.pages.secret) and 0 < len(expires) <= MAX_EXPIRY_DIGITS and expires.isascii()
              and expires.isdigit() and len(signature) == SIG_CHARS)
        return ok and hmac.compare_digest(self.signature(place, int(expires)), signature) and \
            int(expires) > now.timestamp()


def _entry(d: Discussion, record: Decision | None, pages: PageLinks, now: datetime) -> dict[str, Any]:
    options: dict[str, dict[str, int]] = {}
    for s in (record.stances if record else []):
        label = s.get("label") or ""
        if label:
            options.setdefault(label, {"personas": 0, "people": 0})["personas"] += 1
    for label, n in (record.people if record else {}).items():
        options.setdefault(label, {"personas": 0, "people": 0})["people"] += n
    return {"id": d.id, "topic": d.topic, "flow": d.flow, "status": d.status.value.replace("_", " "),
            "channel": d.channel, "created_at": d.created_at, "decided_at": record.decided_at if record else None,
            "verdict": record.verdict if record else "", "decided": record.decided if record else "",
            "options": options, "page": pages.url(d.id, now, d.options.links)}


async def decision_log(store: Store, pages: PageLinks, place: Place, query: str, now: datetime) -> list[dict[str, Any]]:
    """The log's entries: without words, the place's discussions newest first, each with its record once it
    finished; with words, the records the database's full-text search finds, best first. A channel's log holds
    its own discussions, private or not; the workspace's only those of public channels (a private channel's log
    is for its members, admins included only when they are members)."""
    channel = place.channel or None
    rows: list[tuple[Discussion, Decision | None]]
    async with store.tx() as tx:
        if query.strip():
            found = await tx.decisions_found(place.platform, place.workspace, [channel] if channel else None, query,
                                             limit=MOST, private_in=[channel] if channel else [])
            discussions = await tx.discussions_of([r.discussion_id for r in found])
            rows = [(discussions[r.discussion_id], r) for r in found if r.discussion_id in discussions]
        else:
            rows = await tx.channel_log(place.platform, place.workspace, channel, limit=MOST)
    if channel is None:
        rows = [(d, r) for d, r in rows if not d.options.private and not (r is not None and r.private)]
    return [_entry(d, r, pages, now) for d, r in rows]
