"""FakeClock: an injected clock that moves only when a test says so (no real waiting for time)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


class FakeClock:
    """Implements core.ports.Clock."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 3, 2, 8, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, delta: timedelta | None = None, **kw: float) -> datetime:
        """Move forward by a timedelta or keyword units (`advance(hours=2)`); returns the new time."""
        self._now += (delta or timedelta()) + timedelta(**kw)
        return self._now

    def set(self, moment: datetime) -> None:
        self._now = moment
