"""The one vocabulary of positions (pure): options are records with stable ids, and a choice is read strictly."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

FOR, AGAINST, UNDECIDED, UNREADABLE = "for", "against", "undecided", "unreadable"
POSITIONS = (FOR, AGAINST, UNDECIDED)
NEW = "new:"  # a stance label `new: <a few words>` puts a new option on the table

# Each language's whole word for the three positions where no list of options exists. A label is one of these
# words exactly, or an option's id, or it is not read as a position at all.
WORDS: dict[str, str] = {
    "for": FOR, "against": AGAINST, "undecided": UNDECIDED,
    "dafür": FOR, "dafur": FOR, "dagegen": AGAINST, "unentschieden": UNDECIDED, "unentschlossen": UNDECIDED,
    "pour": FOR, "contre": AGAINST, "indécis": UNDECIDED, "indécise": UNDECIDED,
    "a favor": FOR, "en contra": AGAINST, "contra": AGAINST, "indeciso": UNDECIDED, "indecisa": UNDECIDED,
    "a favore": FOR, "contro": AGAINST, "indecisi": UNDECIDED,
    "voor": FOR, "tegen": AGAINST, "onbeslist": UNDECIDED,
}
# A label that hedges is undecided; it is shown as undecided, not as unreadable. Checked on whole labels and on
# a label's first words ("undecided, leaning for"): a hedge never becomes a position, whatever follows it.
HEDGES = {
    "unsure", "not sure", "mixed", "neutral", "abstain", "it depends", "depends", "no position", "n/a", "na",
    "none", "leaning", "tbd", "unclear", "open", "maybe", "undetermined",
    "weiß nicht", "weiss nicht", "unsicher", "enthaltung", "kommt darauf an", "keine position",
    "je nachdem", "vielleicht", "tendenz", "incertain", "ça dépend", "sans avis", "peut-être", "depende",
    "no sé", "quizás", "dipende", "forse", "weet niet", "hangt ervan af",
}
ID = re.compile(r"^O[1-9]\d{0,2}$")
_EDGES = "*_`~>\"'“”‘’«»„.,;:!?()[]{} \t"


@dataclass(frozen=True)
class Option:
    id: str  # "O1", "O2", …: stable for the whole discussion, never reused (or for / against)
    label: str


SIDES = [Option(FOR, "For"), Option(AGAINST, "Against")]  # what people choose where no list of options exists


def norm(text: str) -> str:
    """A label as compared for exact equality: one Unicode form, case folded, spacing and edge marks dropped.
    Nothing else: no word is removed, so "Option A" stays apart from "Option B"."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(text.split()).strip(_EDGES)


def is_hedge(label: str) -> bool:
    t = norm(label)
    head = re.split(r"[,;:(/—–-]| but | aber | mais | pero ", t, maxsplit=1)[0].strip(_EDGES)
    return t in HEDGES or head in HEDGES or WORDS.get(head) == UNDECIDED or any(
        t.startswith(h + " ") for h in HEDGES)


# The forms an option takes where the bot shows it or a model restates it: "O2", "[O2]", "O2: label",
# "O2 (label)", "O2 — label", "label [O2]", "label (O2)". The id decides; the words beside it only have to not be
# another option's whole label.
_ID_FIRST = re.compile(r"^[\[(]?(?P<id>o[1-9]\d{0,2})[\])]?(?:\s*(?:[:(—–]|\s-\s)\s*(?P<rest>.*?)\)?)?$")
_ID_LAST = re.compile(r"^(?P<rest>.+?)\s*[\[(](?P<id>o[1-9]\d{0,2})[\])]?$")
_ANY_ID = re.compile(r"\bo[1-9]\d{0,2}\b")


def _by_id(t: str, listed: list[Option]) -> str | None:
    """The option a label names by its id in one of the shown forms; UNREADABLE when the words beside the id are
    another option's whole label or name another id (the label contradicts itself); None when no id form matches."""
    m = _ID_FIRST.match(t) or _ID_LAST.match(t)
    if m is None:
        return None
    found = next((o for o in listed if o.id.casefold() == m.group("id")), None)
    if found is None:
        return None
    rest = norm(m.group("rest") or "")
    if rest and (_ANY_ID.search(rest) or any(norm(o.label) == rest for o in listed if o.id != found.id)):
        return UNREADABLE  # "O1 (or O2)", "O1 (Stabilise the core first)" where that is O2: which one?
    return found.id


def read(label: str, options: Iterable[Option]) -> str:
    """The choice a stance label records, strictly: an option's id (alone or in a form the bot shows, such as
    `O2 (label)` or `label [O2]`), or its whole label exactly; else undecided in one of the languages above; for /
    against only where no option is listed (an old discussion's sides); a hedge is undecided; anything else is
    unreadable."""
    t = norm(label)
    listed = list(options)
    by_id = _by_id(t, listed)
    if by_id is not None:
        return by_id
    same = [o.id for o in listed if norm(o.label) == t]
    if len(same) == 1:
        return same[0]
    sides = not any(ID.match(o.id) for o in listed)  # "for" names no option of a list: which one would it be?
    if t in WORDS and (sides or WORDS[t] == UNDECIDED):
        return WORDS[t]
    if not t or is_hedge(label):
        return UNDECIDED
    return UNREADABLE


def named(text: str, options: Iterable[Option]) -> str | None:
    """The option a person's free text names: only when the whole text is exactly one option's id or label.
    Anything longer ("do not adopt X", "X and Y") names none and stays unmatched."""
    choice = read(text, options)
    return choice if ID.match(choice) else None


def proposed(label: str) -> str:
    """The new option a `new: <words>` label puts on the table ("" when the label proposes none)."""
    t = " ".join(unicodedata.normalize("NFKC", label).split()).strip("*_` ")
    return t[len(NEW):].strip(_EDGES)[:80] if t.casefold().startswith(NEW) else ""


def catalogue(turns: Iterable[Any]) -> list[Option]:
    """Every option the discussion put on the table, in order: the `listed` records finished turns keep."""
    out: dict[str, Option] = {}
    for t in turns:
        for raw in (t.data or {}).get("listed", []) if isinstance(t.data, dict) else []:
            o = Option(id=str(raw["id"]), label=str(raw["label"]))
            out.setdefault(o.id, o)
    return list(out.values())


def extend(known: list[Option], labels: Iterable[str]) -> list[Option]:
    """The options for `labels`, in order and each once: an exact repeat of a known label keeps its id, a new
    one takes the next id."""
    by_label = {norm(o.label): o for o in known}
    n = max((int(o.id[1:]) for o in known if ID.match(o.id)), default=0)
    out: list[Option] = []
    for label in labels:
        clean = " ".join(label.split()).strip("*_` ")
        if not norm(clean):
            continue
        o = by_label.get(norm(clean))
        if o is None:
            n += 1
            o = by_label[norm(clean)] = Option(id=f"O{n}", label=clean)
        if o not in out:
            out.append(o)
    return out


def records(options: Iterable[Option]) -> list[dict[str, str]]:
    """Options as turn data keeps them."""
    return [{"id": o.id, "label": o.label} for o in options]


def show(choice: str, names: dict[str, str]) -> str:
    """A choice as people read it: an option's label with its id, or the position's word."""
    if choice == UNREADABLE:
        return "undecided (unreadable)"
    if choice in names:
        return f"{names[choice]} [{choice}]"
    if ID.match(choice):
        return f"option {choice}"
    return choice or UNDECIDED


def listing(options: Iterable[Option]) -> str:
    return "\n".join(f"- {o.id}: {o.label}" for o in options)
