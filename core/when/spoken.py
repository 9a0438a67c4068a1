"""Durations as people say them: minutes and seconds, singular where one."""

from __future__ import annotations


def _unit(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def duration(seconds: float) -> str:
    """"30 seconds", "1 minute", "1 minute 30 seconds", "45 minutes", "2 hours 5 minutes" (to the second)."""
    total = max(1, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [_unit(n, w) for n, w in ((hours, "hour"), (minutes, "minute"), (secs, "second")) if n]
    return " ".join(parts)
