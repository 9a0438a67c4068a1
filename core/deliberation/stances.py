"""Stances: each persona's recorded position per round, the table syntheses show, and the verdict the
ballots support — consensus only when they all agree (pure)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from core.deliberation import tally
from core.deliberation.holders import credited
from core.models import Persona, Role, Turn


class State(Protocol):
    """What stances read of a discussion's state (the flows' State has it; the flows import this module)."""

    personas: list[Persona]

    def done_turns(self) -> list[Turn]: ...

UNDECIDED = {"undecided", "unsure", "mixed", "neutral", "abstain", ""}
# One label rule for every prompt and every structured answer (the stance rule, the stance line, the schemas).
LABEL_LENGTH = "at most five words: for, against, undecided, or the option you support in its own wording"
LINE_INSTRUCTION = (
    "End your turn with one last line in exactly this form (it is recorded as your stance):\n"
    "Stance: <label> — <your position right now, in one line>\n"
    f"where <label> is {LABEL_LENGTH}."
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
        return "unchanged" if tally.key(self.before) == tally.key(self.label) else f"was {self.before or 'undecided'}"


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


FACILITATORS = {Role.MODERATOR, Role.HISTORIAN, Role.REFEREE}  # they run the table; they take no stance


def voters(personas: list[Persona]) -> list[Persona]:
    """Every seated persona who deliberates (all but the moderator, historian, referee or floor lead)."""
    return [p for p in personas if p.role not in FACILITATORS and (not p.key.startswith("slot") or p.expertise)]


def table(state: State, round_: int, *, carry: bool = False) -> list[Row]:
    """One row per seated persona: their stance in this round, or undecided when they recorded none (a turn
    skipped, a stance line missing or unreadable). `carry`: one who did not speak this round keeps their latest
    stance (an open floor, where not everyone speaks every round)."""
    now = {k: t for k, t in latest(state, round_).items() if carry or t.round == round_}
    before = latest(state, round_ - 1)
    rows = []
    for p in voters(state.personas):
        t = now.get(p.key)
        prev = before.get(p.key)
        label = label_of(t) if t is not None else ""
        stance = str((t.data or {}).get("stance", "")).strip() if t is not None else "no stance recorded this round"
        rows.append(Row(persona=credited(p, t), label=label if tally.key(label) not in UNDECIDED else "undecided",
                        stance=stance, before=label_of(prev) if prev is not None else None))
    return rows


def _counts(labels: list[str], terms: list[str]) -> tuple[Counter[str], dict[str, str]]:
    """Labels counted by meaning, each shown in the first of `terms` it names (else in its own first wording)."""
    counts: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for raw in labels:
        k = tally.key(raw)
        if k in UNDECIDED:
            k, raw = "undecided", "undecided"
        else:
            named = tally.match(raw, terms)
            if named is not None:
                k, raw = tally.key(named), named
        counts[k] += 1
        shown.setdefault(k, " ".join(raw.split()).lower())
    return counts, shown


def _side(name: str, counts: Counter[str], shown: dict[str, str], empty: str) -> str:
    total = sum(counts.values())
    if not total:
        return f"{name}: {empty}"
    return f"{name}: " + " · ".join(f"{shown[k]} {n}" for k, n in counts.most_common()) + f" of {total}"


def verdict(persona_labels: list[str], people: list[str] | None = None) -> str:
    """The verdict of one round, over every seated persona (an empty or unreadable label is undecided) and the
    people who voted in it (mapped to the positions the personas name, when they name one).

    CONSENSUS only when every persona names one position and most people who voted did not choose otherwise;
    LEANING when one position holds a strict majority of the personas; else SPLIT. Always with both sides'
    counts, in the same terms."""
    if not persona_labels:
        return "NO VERDICT: no stances recorded"
    if all(tally.key(x) in UNDECIDED for x in persona_labels):
        theirs, words = _counts(people or [], [])
        return (f"NO VERDICT: no persona took a position — personas: undecided {len(persona_labels)} of "
                f"{len(persona_labels)}; " + _side("people", theirs, words, "no votes"))
    mine, shown = _counts(persona_labels, [x for x in persona_labels if tally.key(x) not in UNDECIDED])
    theirs, their_words = _counts(people or [], [shown[k] for k in mine if k != "undecided"])
    sides = (_side("personas", mine, shown, "none") + "; "
             + _side("people", theirs, their_words, "no votes"))
    top, n = mine.most_common(1)[0]
    voted = sum(theirs.values())
    otherwise = voted - theirs.get(top, 0)
    if len(mine) == 1 and top != "undecided" and len(persona_labels) >= 2:
        if otherwise * 2 < voted or not voted:
            return f"CONSENSUS: {shown[top]} — {sides}"
        return f"SPLIT: the personas agree on {shown[top]}, but most people who voted chose otherwise — {sides}"
    if top != "undecided" and n * 2 > len(persona_labels):
        return f"LEANING {shown[top]} — {sides}"
    return f"SPLIT — {sides}"


def text(rows: list[Row], round_: int, people: list[str] | None = None, *, with_verdict: bool = True) -> str:
    """The stance table as chat text (no markdown table: chat clients do not render them) and, unless the post
    gives its verdict elsewhere, the verdict (one verdict per post)."""
    if not rows:
        return ""
    lines = [f"**Stances after round {round_}**"]
    for r in rows:
        lines.append(f"- {r.persona}: **{r.label or 'undecided'}** ({r.change}) — {r.stance}")
    if with_verdict:
        lines.append(f"\n**Verdict:** {verdict([r.label for r in rows], people or [])}")
    return "\n".join(lines)
