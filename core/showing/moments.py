"""Times in posts as neutral markers that each adapter shows in its reader's own zone (pure)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from core.when.timeparse import local_text

# ⟦t:EPOCH:ZONE⟧, or ⟦t:EPOCH:ZONE:R⟧ when "in 3 hours" helps too. The brackets are neither Markdown nor
# characters any platform escapes, so a marker survives the renderers' escaping untouched.
MARKER = re.compile(r"⟦t:(-?\d{1,12}):([A-Za-z0-9_+\-/]*)(:R)?⟧")


@dataclass(frozen=True)
class Moment:
    """One marked time: the instant, the zone people set it in (for the fallback text), and whether to add
    how far away it is."""

    epoch: int
    tz: str
    relative: bool = False

    @property
    def utc(self) -> datetime:
        return datetime.fromtimestamp(self.epoch, UTC)

    def fallback(self) -> str:
        """The instant in the zone it was set in, named: what a reader without zone support sees."""
        return local_text(self.utc, self.tz)


def mark(moment: datetime, tz: str, *, relative: bool = False) -> str:
    """The marker the adapters turn into each platform's own time syntax."""
    return f"⟦t:{int(moment.timestamp())}:{tz or 'UTC'}{':R' if relative else ''}⟧"


def expand(text: str, show: Callable[[Moment], str]) -> str:
    """Every marker in `text` replaced by what `show` makes of it."""
    return MARKER.sub(lambda m: show(Moment(int(m.group(1)), m.group(2), bool(m.group(3)))), text)


def plain(text: str) -> str:
    """Markers as zone-named text ("Mon 2 Mar 09:00 (Europe/Berlin)"): the console and anything without a
    per-reader clock."""
    return expand(text, Moment.fallback)
