"""The Slack Web API's documented limits, for the fake: method tiers, per-channel posting, scopes, views, triggers."""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Calls a minute per app and workspace, by tier; every method the fake answers, each in the tier Slack lists it
# under ("special" methods: chat.postMessage is paced per channel below; auth.test allows thousands an hour).
TIER = {1: 1, 2: 20, 3: 50, 4: 100, 0: 1000}
SPECIAL = 0
METHOD_TIER = {
    "chat.postMessage": SPECIAL, "auth.test": SPECIAL,
    "chat.update": 3, "chat.postEphemeral": 4, "chat.getPermalink": 4, "chat.delete": 3,
    "conversations.history": 3, "conversations.replies": 3, "conversations.info": 3, "conversations.join": 3,
    "conversations.members": 4,
    "users.info": 4, "usergroups.users.list": 2, "views.open": 4, "views.update": 4, "views.publish": 4,
    "files.getUploadURLExternal": 4, "files.completeUploadExternal": 4, "users.conversations": 3,
    "canvases.create": 2, "conversations.canvases.create": 2, "canvases.edit": 3, "canvases.access.set": 3,
    "team.info": 3, "apps.connections.open": 1, "oauth.v2.access": 4, "reactions.add": 3,
}
# Commercially distributed apps outside the Marketplace (only they): these two, 1 call a minute and 15 messages a page.
SCAN_METHODS = ("conversations.history", "conversations.replies")
SCAN_PER_MINUTE, SCAN_PAGE = 1, 15
POSTS_PER_S, POST_BURST = 1.0, 4  # chat.postMessage: about one a second per channel, short bursts allowed
# chat.postMessage's workspace-wide limit, which Slack gives only as "several hundred messages per minute" (with
# generous bursts): assumed to be the lowest reading of it, over any minute.
POSTS_PER_MINUTE = 300
TRIGGER_TTL_S = 3.0
# Scopes a method needs (any one of them); a method not named needs none.
SCOPES = {
    "chat.postMessage": ("chat:write",), "chat.update": ("chat:write",), "chat.postEphemeral": ("chat:write",),
    "chat.delete": ("chat:write",),
    "conversations.history": ("channels:history", "groups:history", "im:history", "mpim:history"),
    "conversations.replies": ("channels:history", "groups:history", "im:history", "mpim:history"),
    "conversations.info": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "conversations.join": ("channels:join",), "users.info": ("users:read",),
    "conversations.members": ("channels:read", "groups:read", "im:read", "mpim:read"),
    "usergroups.users.list": ("usergroups:read",), "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",), "reactions.add": ("reactions:write",),
}
ALL_SCOPES = frozenset(s for needs in SCOPES.values() for s in needs) | {"commands", "chat:write.customize",
                                                                       "app_mentions:read"}


@dataclass
class Limits:
    """Which calls Slack would refuse, measured on `now()` (seconds; a test or bench may run it faster)."""

    now: Callable[[], float]
    read_limited: bool = False  # a commercially distributed app outside the Marketplace: reads 1 a minute, 15 a page
    enforce: bool = True
    _calls: dict[tuple[str, str], deque[float]] = field(default_factory=lambda: defaultdict(deque))
    _posts: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # channel -> [tokens, at]

    def per_minute(self, method: str) -> int | None:
        if method in SCAN_METHODS and self.read_limited:
            return SCAN_PER_MINUTE
        tier = METHOD_TIER.get(method)
        return TIER[tier] if tier else None

    def page(self, asked: int) -> int:
        return min(asked, SCAN_PAGE) if self.read_limited else min(asked, 1000)

    def retry_after(self, team: str, method: str, channel: str = "") -> int:
        """0 when the call may go ahead (and is counted), else the whole seconds Slack's Retry-After would say."""
        if not self.enforce:
            return 0
        now = self.now()
        if method == "chat.postMessage":
            if not channel:  # refused, not limited
                return 0
            window = self._window(team, method, now)
            tokens, at = self._posts.get((team, channel), [float(POST_BURST), now])
            tokens = min(float(POST_BURST), tokens + (now - at) * POSTS_PER_S)
            self._posts[(team, channel)] = [tokens, now]
            if tokens < 1:
                return _seconds((1 - tokens) / POSTS_PER_S)
            if len(window) >= POSTS_PER_MINUTE:  # the channel has room, the workspace not
                return _seconds(window[0] + 60 - now)
            self._posts[(team, channel)] = [tokens - 1, now]
            window.append(now)
            return 0
        limit = self.per_minute(method)
        if limit is None:
            return 0
        window = self._window(team, method, now)
        if len(window) >= limit:
            return _seconds(window[0] + 60 - now)
        window.append(now)
        return 0

    def _window(self, team: str, method: str, now: float) -> deque[float]:
        """The workspace's calls of this method in the minute up to `now`."""
        window = self._calls[(team, method)]
        while window and window[0] <= now - 60:
            window.popleft()
        return window


def _seconds(wait_s: float) -> int:
    return max(1, math.ceil(wait_s))  # Retry-After is whole seconds


CUSTOMIZED = ("username", "icon_emoji", "icon_url")  # an app posting under another name and face


def missing_scope(method: str, scopes: frozenset[str], params: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Slack's answer to a call the token's scopes do not cover (None when they do); a post under another name or
    face takes chat:write.customize besides chat:write."""
    needs = SCOPES.get(method)
    customized = any((params or {}).get(k) for k in CUSTOMIZED)
    if method in ("chat.postMessage", "files.completeUploadExternal") and customized \
            and "chat:write.customize" not in scopes:
        needs = ("chat:write.customize",)
    if not needs or any(s in scopes for s in needs):
        return None
    return {"ok": False, "error": "missing_scope", "needed": needs[0], "provided": ",".join(sorted(scopes))}


def view_error(view: Any) -> str:
    """A modal as views.open/views.update check it: its type, title, blocks and the buttons an input needs."""
    if not isinstance(view, dict) or view.get("type") != "modal":
        return "invalid_arguments"
    title = view.get("title") or {}
    if title.get("type") != "plain_text" or not 0 < len(title.get("text") or "") <= 24:
        return "invalid_arguments"
    blocks = view.get("blocks")
    if not isinstance(blocks, list) or len(blocks) > 100:
        return "invalid_arguments"
    if len(view.get("private_metadata") or "") > 3000 or len(view.get("callback_id") or "") > 255:
        return "invalid_arguments"
    for name in ("submit", "close"):
        button = view.get(name)
        if button is not None and (button.get("type") != "plain_text" or not 0 < len(button.get("text", "")) <= 24):
            return "invalid_arguments"
    if any(b.get("type") == "input" for b in blocks) and not view.get("submit"):
        return "invalid_arguments"  # a modal with inputs needs a submit button
    ids = [b["block_id"] for b in blocks if b.get("block_id")]
    if len(ids) != len(set(ids)):
        return "invalid_arguments"  # block ids are unique within a view
    return ""


@dataclass
class Triggers:
    """trigger_ids Slack hands out with an interaction: good for TRIGGER_TTL_S seconds on `now()`, and once."""

    now: Callable[[], float]
    issued: dict[str, float] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)
    n: int = 0

    def issue(self) -> str:
        self.n += 1
        trigger = f"{self.n}.{int(self.now() * 1000)}.fake{self.n:06d}"
        self.issued[trigger] = self.now()
        return trigger

    def use(self, trigger: str) -> str:
        """"" when the trigger may open a view now (it is spent), else Slack's error."""
        at = self.issued.get(trigger)
        if at is None:
            return "invalid_trigger_id"
        if trigger in self.used or self.now() - at > TRIGGER_TTL_S:
            return "expired_trigger_id"
        self.used.add(trigger)
        return ""
