"""Discord's documented rules for the fake: permission bits and overwrites, channel types, rate-limit buckets."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Permission bits, as Discord numbers them.
ADMINISTRATOR = 1 << 3
VIEW_CHANNEL = 1 << 10
SEND_MESSAGES = 1 << 11
EMBED_LINKS = 1 << 14
ATTACH_FILES = 1 << 15
READ_MESSAGE_HISTORY = 1 << 16
MANAGE_THREADS = 1 << 34
MANAGE_WEBHOOKS = 1 << 29
CREATE_PUBLIC_THREADS = 1 << 35
SEND_MESSAGES_IN_THREADS = 1 << 38
ADD_REACTIONS = 1 << 6
NAMES = {ADD_REACTIONS: "Add Reactions",
         VIEW_CHANNEL: "View Channel", SEND_MESSAGES: "Send Messages", EMBED_LINKS: "Embed Links",
         ATTACH_FILES: "Attach Files", READ_MESSAGE_HISTORY: "Read Message History",
         MANAGE_WEBHOOKS: "Manage Webhooks", CREATE_PUBLIC_THREADS: "Create Public Threads",
         SEND_MESSAGES_IN_THREADS: "Send Messages in Threads"}

# Channel types.
TEXT, DM, VOICE, ANNOUNCEMENT, ANNOUNCEMENT_THREAD, PUBLIC_THREAD, STAGE, FORUM = 0, 1, 2, 5, 10, 11, 13, 15
REQUIRE_TAG = 1 << 4  # a forum's channel flag: a post must carry one of its tags (`applied_tags`)
TAG_REQUIRED = 40067  # the JSON error code of a forum post refused for carrying no tag
MAX_APPLIED_TAGS = 5
THREADS = (ANNOUNCEMENT_THREAD, PUBLIC_THREAD, 12)
MAX_WEBHOOKS = 15  # per channel
INTERACTION_ACK_S = 3.0  # an interaction not answered by then is gone ("Unknown interaction")
INTERACTION_TOKEN_S = 15 * 60.0  # its token serves follow-ups and edits this long
NONCE_WINDOW_S = 5 * 60.0  # enforce_nonce deduplicates within "the past few minutes"
COMMAND_CREATES_PER_DAY = 200


class WallClock:
    """Seconds as Discord counts them; tests inject a clock they move by hand instead."""

    def __call__(self) -> float:
        return time.monotonic()


class ManualClock:
    """A clock that moves only when a test advances it."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Overwrite:
    """A channel's permission overwrite for the bot (its role and member overwrites, merged)."""

    allow: int = 0
    deny: int = 0


def bot_permissions(base: int, channel: dict[str, Any], channels: dict[str, dict[str, Any]],
                    overwrites: dict[str, Overwrite]) -> int:
    """The bot's permissions in a channel: its guild role, then the channel's overwrites; a thread has its
    parent's. Administrator has everything; without View Channel nothing else counts."""
    if channel["type"] in THREADS and channel.get("parent_id"):
        channel = channels.get(channel["parent_id"], channel)
    if base & ADMINISTRATOR:
        return (1 << 50) - 1
    perms = base
    if (o := overwrites.get(channel["id"])) is not None:
        perms = (perms & ~o.deny) | o.allow
    return perms if perms & VIEW_CHANNEL else 0


def missing(perms: int, *needed: int) -> list[str]:
    return [NAMES[bit] for bit in needed if not perms & bit]


@dataclass
class Bucket:
    """One rate-limit bucket: `limit` requests per window of `per_s` seconds."""

    key: str
    limit: int
    per_s: float
    used: int = 0
    resets_at: float = 0.0

    def take(self, now: float) -> float:
        """0 when the request may go; else the seconds until the bucket resets (a 429's retry_after)."""
        if now >= self.resets_at:
            self.used, self.resets_at = 0, now + self.per_s
        if self.used >= self.limit:
            return self.resets_at - now
        self.used += 1
        return 0.0

    def headers(self, now: float) -> dict[str, str]:
        return {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": str(max(0, self.limit - self.used)),
                "X-RateLimit-Reset": f"{time.time() + max(0.0, self.resets_at - now):.3f}",
                "X-RateLimit-Reset-After": f"{max(0.001, self.resets_at - now):.3f}", "X-RateLimit-Bucket": self.key}


@dataclass
class Limits:
    """Per-route buckets keyed by the top-level resource (channel, guild, webhook), as Discord keys them. Discord
    documents no fixed numbers ("rely on the headers"): these defaults leave room for a test's bursts, and a test
    tightens them to see the bot obey the headers."""

    clock: Callable[[], float]
    per_route: int = 50
    per_s: float = 1.0
    buckets: dict[str, Bucket] = field(default_factory=dict)
    answered_429: int = 0

    def bucket(self, method: str, path: str) -> Bucket:
        key = route_key(method, path)
        found = self.buckets.get(key)
        if found is None:
            found = self.buckets[key] = Bucket(f"{abs(hash(key)) % 10**12:x}", self.per_route, self.per_s)
        return found

    def retry_after(self, bucket: Bucket) -> float:
        wait = bucket.take(self.clock())
        if wait:
            self.answered_429 += 1
        return math.ceil(wait * 1000) / 1000 if wait else 0.0


def route_key(method: str, path: str) -> str:
    """A route's bucket: its method and template, with the major parameter (channel, guild, webhook and token)
    kept and the other ids replaced."""
    parts = path.strip("/").split("/")
    out: list[str] = []
    for i, part in enumerate(parts):
        major = (i == 1 and parts[0] in ("channels", "guilds", "webhooks")) or (i == 2 and parts[0] == "webhooks")
        out.append(part if major or not part.isdigit() else ":id")
    if parts[0] == "interactions":
        out = ["interactions", ":id", ":token", *parts[3:]]
    return method + " /" + "/".join(out)


# An embed's limits, as Discord's message resource lists them ("Embed Limits"): each field, and 6,000 characters of
# title, description, field names and values, footer text and author name over all the embeds of a message.
EMBED_LIMITS = {"title": 256, "description": 4096, "fields": 25, "field.name": 256, "field.value": 1024,
                "footer.text": 2048, "author.name": 256}
EMBEDS_TOTAL, EMBEDS_MAX, SELECT_OPTIONS_MAX = 6000, 10, 25


def too_long(limit: int) -> dict[str, Any]:
    return {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {limit} or fewer in length."}]}


def embed_errors(embeds: list[dict[str, Any]]) -> dict[str, Any]:
    """Discord's 400 Invalid Form Body `errors` for a message's embeds ({} when they are within every limit): keyed by
    the embed's index and the field's path, each with `_errors` (code and message) as Discord answers."""
    if len(embeds) > EMBEDS_MAX:
        return {"embeds": {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH",
                                        "message": f"Must be {EMBEDS_MAX} or fewer in length."}]}}
    errors: dict[str, Any] = {}
    total = 0
    for i, e in enumerate(embeds):
        mine: dict[str, Any] = {}
        fields = e.get("fields") or []
        texts = {"title": e.get("title") or "", "description": e.get("description") or "",
                 "footer.text": (e.get("footer") or {}).get("text") or "",
                 "author.name": (e.get("author") or {}).get("name") or ""}
        for path, text in texts.items():
            if len(text) > EMBED_LIMITS[path]:
                head, _, leaf = path.rpartition(".")
                (mine.setdefault(head, {}) if head else mine)[leaf] = too_long(EMBED_LIMITS[path])
        if len(fields) > EMBED_LIMITS["fields"]:
            mine["fields"] = too_long(EMBED_LIMITS["fields"])
        for j, f in enumerate(fields):
            for key in ("name", "value"):
                text = f.get(key) or ""
                if not text:  # a field's name and value are required
                    mine.setdefault("fields", {}).setdefault(str(j), {})[key] = {"_errors": [
                        {"code": "BASE_TYPE_REQUIRED", "message": "This field is required"}]}
                elif len(text) > EMBED_LIMITS[f"field.{key}"]:
                    mine.setdefault("fields", {}).setdefault(str(j), {})[key] = too_long(EMBED_LIMITS[f"field.{key}"])
        total += sum(len(t) for t in texts.values()) + sum(len(f.get("name") or "") + len(f.get("value") or "")
                                                         for f in fields)
        if total > EMBEDS_TOTAL and not mine:
            mine["_errors"] = [{"code": "MAX_EMBED_SIZE_EXCEEDED",
                                "message": f"Embed size exceeds maximum size of {EMBEDS_TOTAL}"}]
        if mine:
            errors[str(i)] = mine
    return {"embeds": errors} if errors else {}


def select_errors(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A select menu takes 1 to 25 options (Discord's "String Select" component); {} when every menu does."""
    for i, row in enumerate(rows):
        for j, item in enumerate(row.get("components") or []):
            if item.get("type") == 3 and not 1 <= len(item.get("options") or []) <= SELECT_OPTIONS_MAX:
                return {"components": {str(i): {"components": {str(j): {"options": {"_errors": [
                    {"code": "BASE_TYPE_BAD_LENGTH", "message": f"Must be between 1 and {SELECT_OPTIONS_MAX} in "
                                                               "length."}]}}}}}}
    return {}
