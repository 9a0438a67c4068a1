"""The meeting's tally (pure): average rank, lowest first, with the count of first places; items are option ids,
compared exactly (a wording is never matched to another)."""

from __future__ import annotations

from dataclasses import dataclass

MISSING_RANK = 6  # an item a voter left out of their top five counts as ranked just below it


@dataclass
class Tallied:
    item: str
    average: float
    firsts: int
    voters: int  # how many ranked it at all


def places(items: list[str]) -> list[tuple[int, str]]:
    """A ranking's (place, id) pairs as written: each id once, at its best place; an empty item ("" an unmatched
    one) and a repeat lower down count for none, and keep their places (nothing below moves up)."""
    seen: set[str] = set()
    out = []
    for place, item in enumerate(items[:5], 1):
        if item and item not in seen:
            seen.add(item)
            out.append((place, item))
    return out


def tally(ballots: dict[str, list[str]]) -> list[Tallied]:
    """`ballots`: voter -> option ids, most important first, "" for a place that names none. Ties on the average
    go to more first places, then to more voters, then by id."""
    ranks: dict[str, dict[str, int]] = {}
    for voter, items in ballots.items():
        for place, item in places(items):
            ranks.setdefault(item, {})[voter] = place
    out = []
    for item, by_voter in ranks.items():
        total = sum(by_voter.get(v, MISSING_RANK) for v in ballots)
        out.append(Tallied(item=item, average=total / max(1, len(ballots)),
                           firsts=sum(1 for r in by_voter.values() if r == 1), voters=len(by_voter)))
    return sorted(out, key=lambda t: (t.average, -t.firsts, -t.voters, t.item))


def first_choices(ballots: dict[str, list[str]]) -> list[str]:
    """Each voter's #1 as written ("" when their first place names no option: undecided, never their #2)."""
    return [items[0] for items in ballots.values() if items]
