"""What one transaction wrote to a discussion's state (turns, personas, people's messages), for its driver's copy."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core.models import Turn, TurnStatus


@dataclass
class Changes:
    """Turns as saved (the row is the model), what each turn started here holds in its workspace's spend, turns
    changed otherwise (read them again), turns whose post was sent (done becomes published), and whether the
    personas or the people's messages changed."""

    saved: dict[str, Turn] = field(default_factory=dict)
    held: dict[str, tuple[float, datetime | None]] = field(default_factory=dict)
    stale: set[str] = field(default_factory=set)
    published: set[str] = field(default_factory=set)
    personas: bool = False
    humans: bool = False

    def save(self, turn: Turn, held: tuple[float, datetime | None] | None = None) -> None:
        """`held`: what the turn holds from now on (None: as before, unless it ended: then nothing)."""
        self.saved[turn.key] = turn.model_copy()  # the caller may go on changing its copy
        self.stale.discard(turn.key)
        if held is not None:
            self.held[turn.key] = held
        elif turn.status not in (TurnStatus.PLANNED, TurnStatus.RUNNING):
            self.held[turn.key] = (0.0, None)

    def touch(self, keys: list[str] | set[str]) -> None:
        for key in keys:
            self.saved.pop(key, None)
            self.held.pop(key, None)
            self.stale.add(key)
