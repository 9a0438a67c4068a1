"""Stances: each persona's recorded position per round, the table syntheses show, and the verdict the
ballots support — consensus only when they all agree (pure)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from core.models import Persona, Turn


class State(Protocol):
    """What stances read of a discussion's state (the flows' State has it; the flows import this module)."""

    personas: list[Persona]

    def done_turns(self) -> list[Turn]: ...

UNDECIDED = {"undecided", "unsure", "mixed", "neutral", "abstain", ""}
LINE_INSTRUCTION = (
    "End your turn with one last line in exactly this form (it is recorded as your stance):\n"
    "Stance: <label> — <your position right now, in one line>\n"
    "where <label> is one or two words: for, against, undecided, or the option you support."
)
# The line the model writes last; tolerant of markdown emphasis and of -, – or | instead of the em dash.
_LINE = re.compile(r"^[\s*_>]*stance[\s*_]*:[\s*_]*(?P<label>[^—–|\n]+?)[\s*_]*(?:—|–|\||\s-\s)\s*"
                   r"(?P<stance>.+?)[\s*_]*$", re.IGNORECASE)


def parse(text: str) -> dict[str, Any] | None:
    """The stance a turn's last line records, as data; None when the turn ends otherwise."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    m = _LINE.match(lines[-1]) if lines else None
    if m is None:
        return None
    return {"label": " ".join(m.group("label").split()).lower()[:40], "stance": m.group("stance").strip()[:200]}


@dataclass
class Row:
    persona: str
    label: str
    stance: str
    before: str | None  # the label at the end of the previous round; None if they had none

    @property
    def change(self) -> str:
        if self.before is None:
            return "new"
        return "unchanged" if self.before == self.label else f"was {self.before}"


def label_of(turn: Turn) -> str:
    raw = str((turn.data or {}).get("label", "")).strip().lower().strip(".!*_")
    return " ".join(raw.split())[:40]


def has_stance(turn: Turn) -> bool:
    return bool(turn.data and "stance" in turn.data and "label" in turn.data)


def latest(state: State, up_to_round: int) -> dict[str, Turn]:
    """Each persona's last turn with a stance, in rounds up to `up_to_round`."""
    out: dict[str, Turn] = {}
    for t in state.done_turns():
        if t.round <= up_to_round and has_stance(t):
            out[t.persona_key] = t
    return out


def table(state: State, round_: int) -> list[Row]:
    now, before = latest(state, round_), latest(state, round_ - 1)
    rows = []
    for p in state.personas:
        t = now.get(p.key)
        if t is None:
            continue
        prev = before.get(p.key)
        rows.append(Row(persona=p.name, label=label_of(t), stance=str((t.data or {}).get("stance", "")).strip(),
                        before=label_of(prev) if prev is not None else None))
    return rows


def _norm(label: str) -> str:
    return "undecided" if label in UNDECIDED else label


def verdict(persona_labels: list[str], people: list[str] | None = None) -> str:
    """CONSENSUS only when every persona names one position (nobody undecided) and the people who voted, if any,
    all chose one option too; LEANING when one position holds a strict majority of the personas; else SPLIT.
    Always with the counts."""
    counts = Counter(_norm(x) for x in persona_labels)
    if not counts:
        return "no stances recorded"
    shown = " · ".join(f"{label} {n}" for label, n in counts.most_common())
    votes = Counter(people or [])
    if votes:
        shown += "; people: " + " · ".join(f"{option} {n}" for option, n in votes.most_common())
    top, n = counts.most_common(1)[0]
    if len(counts) == 1 and top != "undecided" and len(persona_labels) >= 2 and len(votes) <= 1:
        return f"CONSENSUS: {top} ({shown})"
    if top != "undecided" and n * 2 > len(persona_labels):
        return f"LEANING {top} ({shown})"
    return f"SPLIT ({shown})"


def text(rows: list[Row], round_: int, people: list[str] | None = None) -> str:
    """The stance table as chat text (no markdown table: chat clients do not render them) and the verdict."""
    if not rows:
        return ""
    lines = [f"**Stances after round {round_}**"]
    for r in rows:
        lines.append(f"- {r.persona}: **{r.label or 'undecided'}** ({r.change}) — {r.stance}")
    lines.append(f"\n**Verdict:** {verdict([r.label for r in rows], people or [])}")
    return "\n".join(lines)
