"""RecordingChat: an in-memory ChatPort that records every call, finds posts by key and can fail on demand."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from core.models import Discussion, Persona, Post
from core.ports import CannotPost


class ChatDown(Exception):
    """Raised by RecordingChat for an injected publish failure (the outbox must keep the post queued)."""


@dataclass
class Sent:
    """One accepted post: where it went, its ref, and when (time.monotonic) the platform got it."""

    discussion_id: str
    ref: str
    post: Post
    at: float
    updates: list[Post] = field(default_factory=list)


class RecordingChat:
    """Implements core.ports.ChatPort in memory; no pacing, no network.

    `fail_next(n)` makes the next n publish() calls raise ChatDown *before* anything is recorded;
    `fail_next(n, after_post=True)` records the post and then raises (a crash between "posted" and
    "stored"), which is what find() exists for: it returns the ref of a key this chat accepted among the
    discussion's `find_page` most recent messages.
    `fail_next_announce(n, after_post=...)` does the same for announce() (find_announcement finds what was
    recorded), and `recover()` cancels every failure still pending: the platform is back.
    """

    def __init__(self, platform: str = "console") -> None:
        self.platform = platform
        self.sent: list[Sent] = []
        self.by_key: dict[str, Sent] = {}
        self.by_ref: dict[str, Sent] = {}
        self.thinking_calls: list[tuple[str, str, str]] = []  # (discussion id, persona key, turn key)
        self.live: list[tuple[str, str, float]] = []  # (turn key, text so far, monotonic time) per live update
        self.announced: list[tuple[str, str, str, Post]] = []  # (workspace, channel, ref, post)
        self.told: list[tuple[str, str, Post]] = []  # (discussion id, user id, post): private messages
        self.announce_calls: list[str] = []  # the key of every announce() attempt, failed ones included
        self.publish_calls = 0
        self.update_calls = 0
        self.find_calls = 0
        self._fail_before = 0
        self._fail_after = 0
        self._announce_fail_before = 0
        self._announce_fail_after = 0
        self._counter = 0
        self.gone = ""  # set: every post is refused for good with this reason (channel archived, bot removed)
        self.find_page = 15  # messages find() reads: one page, the most Slack gives an app outside its Marketplace

    # -- control -----------------------------------------------------------------------------------

    def fail_next(self, n: int = 1, *, after_post: bool = False) -> None:
        if after_post:
            self._fail_after += n
        else:
            self._fail_before += n

    def fail_next_announce(self, n: int = 1, *, after_post: bool = False) -> None:
        if after_post:
            self._announce_fail_after += n
        else:
            self._announce_fail_before += n

    def recover(self) -> None:
        """The platform is back: no injected failure is left to happen."""
        self._fail_before = self._fail_after = 0
        self._announce_fail_before = self._announce_fail_after = 0

    def posts(self, discussion_id: str | None = None) -> list[Post]:
        """The latest version of each accepted post, in publish order."""
        out = []
        for s in self.sent:
            if discussion_id is None or s.discussion_id == discussion_id:
                out.append(s.updates[-1] if s.updates else s.post)
        return out

    def keys(self, discussion_id: str | None = None) -> list[str]:
        return [s.post.key for s in self.sent if discussion_id is None or s.discussion_id == discussion_id]

    def published_at(self, key: str) -> float | None:
        s = self.by_key.get(key)
        return s.at if s else None

    # -- ChatPort ----------------------------------------------------------------------------------

    async def publish(self, discussion: Discussion, post: Post) -> str:
        self.publish_calls += 1
        if self.gone:
            raise CannotPost(self.gone)
        if self._fail_before:
            self._fail_before -= 1
            raise ChatDown(f"injected failure before publishing {post.key}")
        self._counter += 1
        ref = f"{self.platform}:{discussion.id}:{self._counter}"
        sent = Sent(discussion.id, ref, post, time.monotonic())
        self.sent.append(sent)
        self.by_key[post.key] = sent
        self.by_ref[ref] = sent
        if self._fail_after:
            self._fail_after -= 1
            raise ChatDown(f"injected failure after publishing {post.key}")
        return ref

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        self.update_calls += 1
        sent = self.by_ref.get(ref)
        if sent is None:
            raise KeyError(f"no post with ref {ref}")
        sent.updates.append(post)
        self.by_key.setdefault(post.key, sent)

    async def find(self, discussion: Discussion, key: str) -> str | None:
        """As Slack's look-up does: one page of the discussion's most recent messages, never its whole history."""
        self.find_calls += 1
        sent = self.by_key.get(key)
        page = [s for s in self.sent if s.discussion_id == discussion.id][-self.find_page:]
        return sent.ref if sent is not None and any(s is sent for s in page) else None

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        self.thinking_calls.append((discussion.id, persona.key, key))

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        self.live.append((key, text, time.monotonic()))

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        self.announce_calls.append(post.key)
        if self._announce_fail_before:
            self._announce_fail_before -= 1
            raise ChatDown(f"injected failure before announcing {post.key}")
        self._counter += 1
        ref = f"{self.platform}:{channel}:{self._counter}"
        self.announced.append((workspace, channel, ref, post))
        if self._announce_fail_after:
            self._announce_fail_after -= 1
            raise ChatDown(f"injected failure after announcing {post.key}")
        return ref

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        self.find_calls += 1
        return next((ref for w, ch, ref, post in self.announced if (w, ch, post.key) == (workspace, channel, key)),
                    None)

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        self.told.append((discussion.id, user_id, post))

    async def link(self, discussion: Discussion) -> str:
        return f"https://chat.invalid/{self.platform}/{discussion.id}"
