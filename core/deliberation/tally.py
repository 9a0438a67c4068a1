"""The meeting's tally (pure): average rank, lowest first, with the count of first places; items are matched by
meaning (case, punctuation, hyphens and articles do not make a new item)."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MISSING_RANK = 6  # an item a voter left out of their top five counts as ranked just below it
ARTICLES = {"a", "an", "the"}
_NOT_WORD = re.compile(r"[^\w]+")


@dataclass
class Tallied:
    item: str
    average: float
    firsts: int
    voters: int  # how many ranked it at all


def key(item: str) -> str:
    """What an item means for counting: "Pack-opening UX.", "the pack opening ux" → "pack opening ux"."""
    text = unicodedata.normalize("NFKC", item).casefold().replace("_", " ")
    words = [w for w in _NOT_WORD.sub(" ", text).split() if w not in ARTICLES]
    return " ".join(words)


def match(item: str, options: list[str]) -> str | None:
    """The one option a free-text item names: the same words, or every word of exactly one option within the
    item (or the item's words within exactly one option); None when it names none or more than one."""
    k = key(item)
    if not k:
        return None
    for option in options:
        if key(option) == k:
            return option
    words = set(k.split())
    named = [o for o in options if key(o) and (set(key(o).split()) <= words or words <= set(key(o).split()))]
    return named[0] if len(named) == 1 and len(words) >= 2 else None


def dedupe(items: list[str]) -> list[str]:
    """A ranking with each meaning once, at its best place (a repeat lower down is dropped)."""
    seen: set[str] = set()
    out = []
    for item in items:
        k = key(item)
        if k and k not in seen:
            seen.add(k)
            out.append(item.strip())
    return out


def tally(ballots: dict[str, list[str]]) -> list[Tallied]:
    """`ballots`: voter -> items, most important first. Items are matched by meaning (see `key`); the first
    wording seen is kept. Ties on the average go to more first places, then to more voters."""
    shown: dict[str, str] = {}
    ranks: dict[str, dict[str, int]] = {}
    for voter, items in ballots.items():
        for place, item in enumerate(dedupe(items)[:5], 1):
            k = key(item)
            shown.setdefault(k, item)
            ranks.setdefault(k, {})[voter] = place
    out = []
    for k, by_voter in ranks.items():
        total = sum(by_voter.get(v, MISSING_RANK) for v in ballots)
        out.append(Tallied(item=shown[k], average=total / max(1, len(ballots)),
                           firsts=sum(1 for r in by_voter.values() if r == 1), voters=len(by_voter)))
    return sorted(out, key=lambda t: (t.average, -t.firsts, -t.voters, key(t.item)))


def first_choices(ballots: dict[str, list[str]]) -> list[str]:
    return [key(items[0]) for items in (dedupe(x) for x in ballots.values()) if items]
