"""What bench/load.py and bench/library_floor.py share, so neither imports the other: the load's sizes (a model's
turn, its deltas, and the requests and Slack messages of those sizes the floor sends), the core a process is pinned
to, and the speedometer that gives this machine's speed with the helpers that read its timings."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any

# A model's turn as real ones are: about 1,500 characters, streamed in deltas of about 12 (the fake's default 250 in
# 24 made the SDK's share of a call a quarter of what it is).
REPLY_CHARS, DELTA_CHARS = 1500, 12
# At a model's pace: about 300 characters a second (a 1,500-character turn in five seconds), each delta its own
# packet and its own wake-up of the loop (all at once, the live text and the per-delta reads never ran).
DELTA_GAP_S = 0.04
MODEL_LATENCY_S = 1.0  # before a reply's first event


def mean_kb(bodies: list[dict[str, Any]]) -> float:
    """The KB of JSON a body holds on average."""
    return sum(len(json.dumps(body, default=str)) for body in bodies) / max(len(bodies), 1) / 1000


# The load's requests, as bench/load.py prints them: the flow's rules as one cached system block of about 4 KB, the
# transcript as a block a turn (the last cached), the persona's instruction last; adaptive thinking and an effort.
# A discussion's transcript grows over its rounds, and the app condenses its oldest turns: 0 to 29 turns of the
# load's length make requests of 5 to 50 KB, about 28 KB on average, as the load's are.
RULES = "Speak as your persona, in a few plain paragraphs; build on what was said, and say where you disagree. " * 40
TRANSCRIPT_TURNS = 30


def prompt(i: int) -> dict[str, Any]:
    """The i-th request: its transcript holds i % TRANSCRIPT_TURNS turns."""
    said = ("A considered view on trunk-based development, with its reasons and its doubts. " * 20)[:REPLY_CHARS]
    turns: list[dict[str, Any]] = [
        {"type": "text", "text": f"[Round {1 + k // 13} · Statement] Speaker {k % 8}:\n{said}"}
        for k in range(i % TRANSCRIPT_TURNS)]
    if turns:
        turns[-1]["cache_control"] = {"type": "ephemeral"}
    instruction = f"You are Speaker {i % 8}. " + "Answer the points made before you, briefly and in your voice. " * 12
    return {"model": "claude-sonnet-5-5", "max_tokens": 4096, "thinking": {"type": "adaptive"},
            "output_config": {"effort": "low"},
            "system": [{"type": "text", "text": RULES, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [*turns, {"type": "text", "text": instruction}]}]}


# The load's Slack messages, as bench/load.py prints them at 300 discussions (-n 300): a new message is mostly a short
# notice or a placeholder (about 0.55 KB; a turn's words go out as the placeholder's edit), an edit carries a turn's
# text (about 2.65 KB).
def message(i: int, *, edit: bool) -> dict[str, Any]:
    """Blocks as the app sends them: sections of words, a context line, metadata."""
    words = "A considered view, in a few plain sentences, on the question before the council. "
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": words * (6 if edit else 2)}}
                                    for _ in range(4 if edit else 1)]
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": f":speech_balloon: _Speaker {i % 7}_"}]})
    return {"text": (words * 4)[:200 if edit else 80], "blocks": blocks,
            "metadata": {"event_type": "council_post", "event_payload": {"key": f"d{i}:r1:s{i}", "part": 0}}}


def sizes() -> tuple[float, float, float]:
    """The KB of JSON the floor sends on average: a model request, a new Slack message, an edit."""
    ids = range(TRANSCRIPT_TURNS * 13)
    return (mean_kb([prompt(i) for i in ids]), mean_kb([message(i, edit=False) | {"channel": "C0000"} for i in ids]),
            mean_kb([message(i, edit=True) | {"channel": "C0000", "ts": "1700000000.000000"} for i in ids]))


def pinned(core: int) -> list[str]:
    """`taskset -c core` where the machine has that core and taskset: the command it prefixes runs on it alone."""
    cores = os.cpu_count() or 1
    if shutil.which("taskset") is None or cores < 2 or core >= cores:
        return []
    return ["taskset", "-c", str(core)]


# Run in a process of its own during the load: a fixed loop of plain Python, timed every few seconds. CPU figures
# are milliseconds of this machine, and its speed drifts (its host shares the cores: the same code measured 6.4 ms
# a model call in one session and 43 ms in another), so the app's CPU is also given in these loops.
# Each line: when (the monotonic clock every process here shares) and how long, so a timing falls in a window.
SPEEDOMETER = """
import time
while True:
    began, total = time.process_time(), 0
    for i in range(1_000_000):
        total += i
    print(time.monotonic(), (time.process_time() - began) * 1000, flush=True)
    time.sleep(4)
"""


def timings(lines: str) -> list[tuple[float, float]]:
    """The speedometer's (when, ms) pairs."""
    return [(float(when), float(ms)) for when, ms in (line.split() for line in lines.splitlines() if line.strip())]


def timed_in(timed: list[tuple[float, float]], window: tuple[float, float] | None) -> list[float]:
    """The timings taken within a window (monotonic from, to)."""
    return [ms for when, ms in timed if window is not None and window[0] <= when <= window[1]]
