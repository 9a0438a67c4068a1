"""The meeting's tally (pure): average rank, lowest first, with the count of first places."""

from __future__ import annotations

from dataclasses import dataclass

MISSING_RANK = 6  # an item a voter left out of their top five counts as ranked just below it


@dataclass
class Tallied:
    item: str
    average: float
    firsts: int
    voters: int  # how many ranked it at all


def key(item: str) -> str:
    return " ".join(item.lower().strip(" .*_").split())


def tally(ballots: dict[str, list[str]]) -> list[Tallied]:
    """`ballots`: voter -> items, most important first. Items are matched case- and space-insensitively; the
    first wording seen is kept. Ties on the average go to more first places, then to more voters."""
    shown: dict[str, str] = {}
    ranks: dict[str, dict[str, int]] = {}
    for voter, items in ballots.items():
        seen: set[str] = set()
        for place, item in enumerate(items[:5], 1):
            k = key(item)
            if not k or k in seen:
                continue
            seen.add(k)
            shown.setdefault(k, item.strip())
            ranks.setdefault(k, {})[voter] = place
    out = []
    for k, by_voter in ranks.items():
        total = sum(by_voter.get(v, MISSING_RANK) for v in ballots)
        out.append(Tallied(item=shown[k], average=total / max(1, len(ballots)),
                           firsts=sum(1 for r in by_voter.values() if r == 1), voters=len(by_voter)))
    return sorted(out, key=lambda t: (t.average, -t.firsts, -t.voters, key(t.item)))


def first_choices(ballots: dict[str, list[str]]) -> list[str]:
    return [key(items[0]) for items in ballots.values() if items]
