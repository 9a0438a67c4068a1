"""Stances: each persona's recorded choice per round, the table syntheses show, and the verdict the choices
support — consensus only when every counted persona chose the same id (pure)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any, Protocol

from core.deliberation import choices, question
from core.deliberation.choices import UNDECIDED, UNREADABLE, Option
from core.deliberation.holders import credited
from core.models import Discussion, Persona, Role, Turn


class State(Protocol):
    """What stances read of a discussion's state (the flows' State has it; the flows import this module)."""

    discussion: Discussion
    personas: list[Persona]

    def done_turns(self) -> list[Turn]: ...

# One label rule for every prompt and every structured answer (the stance rule, the stance line, the schemas).
LABEL_LENGTH = ("exactly one of: the id of an option on the table (such as O2), `new: <a new option in at most "
                "five words>`, or undecided (for or against only while no option is listed); anything else is "
                "recorded as undecided (unreadable)")
# One form in every language: the keyword and the label are read as data, so they are never translated; only
# the reason after the dash is in the discussion's language.
LINE_INSTRUCTION = (
    "End your turn with one last line in exactly this form (it is recorded as your stance), whatever language "
    "you write in: the word `Stance:`, the label and the dash stay exactly as shown, in English; only your "
    "position after the dash is in the discussion's language:\n"
    "Stance: <label> — <your position right now, in one line>\n"
    f"where <label> is {LABEL_LENGTH}."
)
# The line the model writes last. Asked for in English in every language; still read when a model translates
# the keyword into one of these languages, and tolerant of markdown emphasis, a full-width colon and of -, – or |
# instead of the em dash.
_KEYWORD = r"(?:stance|haltung|standpunkt|position|posición|postura|posizione|standpunt|positie)"
# The label runs to the dash; a colon inside it stays in it ("Stance: O1: trial — …"), as do brackets ("Stance: O1
# (Run a four-week trial) — …"). A line without a dash is a stance only when its label is an option's id, alone or
# with its label in brackets ("Stance: O2.", "**Stance:** O2 (Fix the core first)").
_HEAD = rf"^[\s*_>]*{_KEYWORD}[\s*_]*[:：][\s*_]*"
_LINE = re.compile(_HEAD + r"(?P<label>[^—–|\n]+?)[\s*_.]*(?:—|–|\||\s-\s)\s*(?P<stance>.*?)[\s*_]*$",
                   re.IGNORECASE)
_BARE = re.compile(_HEAD + r"(?P<label>\[?O[1-9]\d{0,2}\]?(?:\s*\([^)\n]*\))?)[\s*_.]*$", re.IGNORECASE)


def parse(text: str) -> dict[str, Any] | None:
    """The stance a turn's last line records, as data; None when the turn ends otherwise."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    m = (_LINE.match(lines[-1]) or _BARE.match(lines[-1])) if lines else None
    if m is None:
        return None
    reason = m.groupdict().get("stance") or ""
    return {"label": " ".join(m.group("label").split())[:100], "stance": reason.strip()[:200]}


def record(data: dict[str, Any], on_table: list[Option], every: list[Option] | None = None) -> dict[str, Any]:
    """A turn's stance as data: its label read strictly against the options on the table into a `choice` (an
    option id, undecided or unreadable; for / against where no option is listed); a `new: …` label puts a new
    option on the table (`listed`, its id after `every` id any question gave) and chooses it."""
    label = str(data.get("label", ""))
    new = choices.proposed(label)
    shown = {o.id: o.label for o in on_table}
    if new:
        # An exact repeat of a label keeps its id; a new one takes the next id of the whole discussion.
        (option,) = choices.extend(every or on_table, [new])
        shown |= {option.id: option.label}
        out = data | {"choice": option.id, "listed": choices.records([option])}
    else:
        out = data | {"choice": choices.read(label, on_table)}
    # As people read it: "Fix the core first [O2]" in a table, "Stance: O2 (Fix the core first) — …" in a post.
    return out | {"shown": choices.show(out["choice"], shown), "said": line(out, shown)}


def line(data: dict[str, Any], shown: dict[str, str]) -> str:
    """A recorded stance as a post shows it, the id with its label: "Stance: O2 (Stabilise the core first) — …";
    a label that names no option is shown as written, and said to count as undecided."""
    choice, reason = str(data.get("choice", "")), str(data.get("stance", "")).strip()
    if choice in shown:
        said = f"{choice} ({shown[choice]})"
    elif choice == UNREADABLE:
        label = str(data.get("label", "")).strip()
        said = (f"{label} " if label else "") + "_(names no option on the table: counted as undecided)_"
    else:
        said = choices.show(choice, shown)
    return f"Stance: {said} — {reason}" if reason else f"Stance: {said}"


@dataclass
class Row:
    persona: str
    choice: str  # an option id, for, against, undecided or unreadable
    stance: str
    before: str | None  # the choice at the end of the previous round; None if they had none
    counted: bool = True  # the Contrarian's stance is shown, not counted
    label: str = ""  # the choice as people read it

    @property
    def change(self) -> str:
        if self.before is None:
            return "new"
        return "unchanged" if self.before == self.choice else f"was {self.before_shown or self.before or 'undecided'}"

    before_shown: str = ""


def choice_of(turn: Turn, known: list[Option] | None = None) -> str:
    """The choice a turn recorded; a turn recorded before choices were kept is read strictly from its label."""
    data = turn.data or {}
    if "choice" in data:
        return str(data["choice"])
    return choices.read(str(data.get("label", "")), known or [])


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


def counted(persona: Persona) -> bool:
    """Whose stance makes or blocks a consensus: everyone who deliberates but the Contrarian, whose role is to
    oppose (its stance is shown beside the count)."""
    return persona.role != Role.CONTRARIAN


def names(state: State) -> dict[str, str]:
    """Option id -> label, for every option any question of the discussion put on the table (ids are never
    reused, so an earlier question's choice still reads as it was)."""
    return {o.id: o.label for o in choices.catalogue(state.done_turns())}


def table(state: State, round_: int, *, carry: bool = False) -> list[Row]:
    """One row per seated persona: their choice in this round, or undecided when they recorded none (a turn
    skipped, a stance line missing). `carry`: one who did not speak this round keeps their latest stance (an
    open floor, where not everyone speaks every round)."""
    now = {k: t for k, t in latest(state, round_).items() if carry or t.round == round_}
    before = latest(state, round_ - 1)
    known = question.on_table(state)
    shown = names(state)
    rows = []
    for p in voters(state.personas):
        t = now.get(p.key)
        prev = before.get(p.key)
        choice = choice_of(t, known) if t is not None else UNDECIDED
        # `latest` keeps only turns whose data holds a stance
        stance = str(t.data["stance"]).strip() if t is not None and t.data else "no stance recorded this round"
        was = choice_of(prev, known) if prev is not None else None
        rows.append(Row(persona=credited(p, t), choice=choice, stance=stance, before=was, counted=counted(p),
                        label=choices.show(choice, shown),
                        before_shown=choices.show(was, shown) if was is not None else ""))
    return rows


def _bucket(choice: str) -> str:
    return UNDECIDED if choice in ("", UNDECIDED, UNREADABLE) else choice


def _side(name: str, counts: Counter[str], shown: dict[str, str], empty: str) -> str:
    """One side's count; a tie at the top reads as a tie ("people: split 2-2 — …")."""
    total = sum(counts.values())
    if not total:
        return f"{name}: {empty}"
    ranked = sorted(counts.most_common(), key=lambda kn: kn[0] == UNDECIDED)  # undecided last: it is no side
    sides = [n for k, n in ranked if k != UNDECIDED]
    tied = [n for n in sides if sides and n == sides[0]]
    split = f"split {'-'.join(str(n) for n in tied)} — " if len(tied) > 1 else ""
    return f"{name}: {split}" + " · ".join(f"{choices.show(k, shown)} {n}" for k, n in ranked) + f" of {total}"


@dataclass(frozen=True)
class Verdict:
    kind: str  # CONSENSUS, LEANING, SPLIT or NO VERDICT
    choice: str  # the id (or for / against) it names; "" for none
    text: str

    def __str__(self) -> str:
        return self.text


def judge(personas: list[str], people: list[str] | None = None, shown: dict[str, str] | None = None,
          aside: list[str] | None = None) -> Verdict:
    """The verdict of one round over the counted personas' choices (ids compared exactly; "", undecided and
    unreadable are undecided) and the people who voted (their choices, ids too).

    CONSENSUS only when at least two counted personas all chose one id and most people who voted did not
    choose otherwise (people split evenly are a SPLIT, said as a tie); LEANING when one choice holds a strict
    majority of the counted personas; else SPLIT.
    `aside`: the Contrarian's choices, shown and not counted."""
    shown = shown or {}
    theirs = Counter(_bucket(x) for x in people or [])
    mine = Counter(_bucket(x) for x in personas)
    sides = (_side("personas", mine, shown, "none") + "; " + _side("people", theirs, shown, "no votes")
             + "".join(f"; the Contrarian (not counted): {choices.show(x or UNDECIDED, shown)}" for x in aside or []))
    if not personas:
        return Verdict("NO VERDICT", "", "NO VERDICT: no stances recorded"
                       + ("" if not people and not aside else f" — {sides}"))
    if set(mine) == {UNDECIDED}:
        return Verdict("NO VERDICT", "", f"NO VERDICT: no persona took a position — {sides}")
    top, n = max(mine.items(), key=lambda kv: (kv[0] != UNDECIDED, kv[1]))
    voted = sum(theirs.values())
    otherwise = voted - theirs.get(top, 0)
    if len(mine) == 1 and len(personas) >= 2:
        if otherwise * 2 < voted or not voted:
            return Verdict("CONSENSUS", top, f"CONSENSUS: {choices.show(top, shown)} — {sides}")
        if otherwise * 2 == voted:  # as many people chose it as chose otherwise: a tie, read as one
            return Verdict("SPLIT", "", f"SPLIT: the personas agree on {choices.show(top, shown)}; the people who "
                                        f"voted are split {voted - otherwise}-{otherwise} — {sides}")
        return Verdict("SPLIT", "", f"SPLIT: the personas agree on {choices.show(top, shown)}, but most people who "
                                    f"voted chose otherwise — {sides}")
    if top != UNDECIDED and n * 2 > len(personas) and list(mine.values()).count(n) == 1:
        return Verdict("LEANING", top, f"LEANING: {choices.show(top, shown)} — {sides}")
    return Verdict("SPLIT", "", f"SPLIT — {sides}")


def verdict(personas: list[str], people: list[str] | None = None, shown: dict[str, str] | None = None,
            aside: list[str] | None = None) -> str:
    return judge(personas, people, shown, aside).text


def of_rows(rows: list[Row], people: list[str] | None = None, shown: dict[str, str] | None = None) -> Verdict:
    """The verdict of a stance table: its counted rows decide, the Contrarian's is shown beside them."""
    return judge([r.choice for r in rows if r.counted], people, shown, [r.choice for r in rows if not r.counted])


def text(rows: list[Row], round_: int, people: list[str] | None = None, *, with_verdict: bool = True,
         shown: dict[str, str] | None = None) -> str:
    """The stance table as chat text (no markdown table: chat clients do not render them) and, unless the post
    gives its verdict elsewhere, the verdict (one verdict per post)."""
    if not rows:
        return ""
    lines = [f"**Stances after round {round_}**"]
    for r in rows:
        aside = "" if r.counted else " _(the Contrarian: shown, not counted)_"
        lines.append(f"- {r.persona}: **{r.label or 'undecided'}** ({r.change}) — {r.stance}{aside}")
    if with_verdict:
        lines.append(f"\n**Verdict:** {of_rows(rows, people or [], shown)}")
    return "\n".join(lines)
