"""When a poll that outlives its discussion closes: its deadline, and the verdict that says "so far" until then."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from core.deliberation import closings, verdicts
from core.deliberation.stances import Verdict
from core.models import Discussion, Poll
from core.showing.moments import mark, plain


def deadline(d: Discussion, now: datetime) -> datetime | None:
    """When a final poll opened now closes by itself: the discussion's poll hours (its start's, else its
    channel's default, else a day) from now; None when it closes with the discussion (no hours)."""
    return now + timedelta(hours=d.options.poll_hours) if d.options.poll_hours > 0 else None


def shown(d: Discussion, at: datetime) -> str:
    """A deadline as every surface reads it (a post, the record, an export), in the discussion's zone."""
    return plain(mark(at, d.tz))


def synthesis_of(poll: Poll) -> str:
    """The key of the synthesis turn whose verdict a poll's votes change (a ranking's places share one)."""
    return closings.ranking_of(poll.key) or poll.key.removesuffix(":poll")


def open_until(polls: Iterable[Poll], key: str | None = None) -> datetime | None:
    """The earliest deadline among the final polls still open (of the synthesis `key`; None: of any)."""
    found = [p.closes_at for p in polls if p.final and not p.closed and p.closes_at is not None
             and (key is None or synthesis_of(p) == key)]
    return min(found, default=None)


def said(d: Discussion, verdict: Verdict, until: datetime | None) -> Verdict:
    """The verdict as it stands: "so far", with the deadline, while its poll is open; as it is once closed."""
    return verdicts.so_far(verdict, shown(d, until)) if until is not None else verdict


def due(poll: Poll, now: datetime) -> bool:
    """Whether an open poll's deadline has passed (it closes now: no vote counts after it)."""
    return not poll.closed and poll.closes_at is not None and poll.closes_at <= now
