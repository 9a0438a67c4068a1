"""How the meeting closes, inside the transaction that records its recommendation: the owners' tally in the
recommendation format, the dissents, and a ranking poll per place so people rank too."""

from __future__ import annotations

import re

from core.deliberation import choices, stances, tally
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import fixed_options, owner_ballots
from core.deliberation.holders import credited
from core.deliberation.schemas import MeetingRecommendation, RankedVote
from core.models import Ballot, Phase, Poll, Role

PLACES = 3  # people rank their top three, one poll per place
RANK_POLL = re.compile(r":rank(\d+)$")  # the key of a place poll ends with its place

def seated_first_choices(state: State, ballots: dict[str, list[str]]) -> list[str]:
    """Every owner's first choice (an option id); an owner who cast no ranking (skipped, failed) is undecided."""
    cast = {t.persona_key: t for t in state.done_turns(Phase.RANKED_VOTE)}
    return [(ballots.get(credited(p, cast.get(p.key))) or [""])[0] for p in state.personas if p.role == Role.OWNER]


def ranking_text(vote: RankedVote, options: list[Option]) -> str:
    """An owner's ballot as posted: each option once with its id and the domain it affects; an item that names
    no option exactly is shown as unmatched (it counts for none)."""
    lines: list[str] = []
    seen: set[str] = set()
    for r in vote.ranking:
        named = choices.named(r.item, options)
        domain = f" _(affects {r.domain})_" if r.domain else ""
        if named is None:
            lines.append(f"- _{r.item.strip()} (unmatched: names no option on the list, not counted)_ — {r.why}")
        elif named not in seen:
            seen.add(named)
            label = next(o.label for o in options if o.id == named)
            lines.append(f"{len(seen)}. **{label}** [{named}]{domain} — {r.why}")
    first = choices.named(vote.ranking[0].item, options) if vote.ranking else None
    shown = choices.show(first, {o.id: o.label for o in options}) if first else "undecided"
    return "\n".join(lines) + f"\n\nStance: {shown} — {vote.stance}"


def recommendation(topic: str, state: State, rec: MeetingRecommendation,
                   verdict: stances.Verdict) -> tuple[str, list[str]]:
    """The recommendation's text and the option ids people are asked to rank. One verdict (`verdict`: over
    every owner's first choice, see `verdicts.of_round`); the heading says what the verdict says."""
    ballots, reasons, unmatched = owner_ballots(state)
    shown = {o.id: o.label for o in fixed_options(state)}
    ranked = tally.tally(ballots)
    heading = {"CONSENSUS": "Consensus Ranking", "LEANING": "Owners' Ranking (leaning, not a consensus)",
               "SPLIT": "Owners' Ranking (split: no consensus)"}.get(verdict.kind, "Owners' Ranking")
    lines = ["**Council Recommendation**", f"**Topic:** {topic}", "", f"**{heading}**"]
    for i, t in enumerate(ranked[:5], 1):
        why = reasons.get(t.item, "")
        lines.append(f"{i}. **{choices.show(t.item, shown)}** — {why} (average rank {t.average:.1f}; "
                     f"{t.firsts} owner{'s' if t.firsts != 1 else ''} ranked this #1)")
    if not ranked:
        lines.append("- (no votes were cast)")
    for name, items in unmatched.items():  # read, never guessed: an item that names no option counts for none
        lines.append(f"_Not counted (names no option on the list): {name}: {'; '.join(items)}_")
    lines += ["", f"**Verdict:** {verdict.text}", "", "**Key Arguments**", *[f"- {a}" for a in rec.key_arguments]]
    dissents = list(rec.dissents)
    if ranked:  # an owner who left the winner out of their top three dissents strongly, whatever the prose says
        top = ranked[0].item
        for name, items in ballots.items():
            if top not in items[:3]:
                dissents.append(f"{name} left {choices.show(top, shown)} out of their top three "
                                f"(their #1: {choices.show(items[0], shown) if items else 'none'})")
    consensus = verdict.kind == "CONSENSUS"
    lines += ["", "**Dissents**"]
    if dissents:
        lines += [f"- {x}" for x in dissents]
    elif not ranked:
        lines.append("- None: no owner cast a ranking")
    else:
        lines.append("- None — the owners agree" if consensus else
                     "- None voiced, but the owners' first choices differ")
    if not consensus and len(ranked) > 1:
        # The record says who decides; where people rank is the poll's to say (an export has no polls below).
        lines += ["", f"**The owners are split** after {state.discussion.round} rounds: people decide."]
    lines += ["", "**Suggested Next Steps**", *[f"- {s}" for s in rec.next_steps],
              "", "_A recommendation only: nothing is executed automatically._"]
    return "\n".join(lines), [t.item for t in ranked[:5]]


def place_polls(key: str, items: list[Option]) -> list[tuple[str, str, list[Option], bool]]:
    """(poll key, question, options, final) for each place people rank."""
    if len(items) < 2:
        return []
    return [(f"{key}:rank{place}", f"Your #{place} priority", items, True)
            for place in range(1, min(PLACES, len(items)) + 1)]


def ranking_of(poll_key: str) -> str:
    """The key the places of one ranking share ("" for a poll that is not a place in a ranking)."""
    return RANK_POLL.sub("", poll_key) if RANK_POLL.search(poll_key) else ""


def chosen(poll: Poll, ballot: Ballot) -> str:
    """What a ballot means: the id of the option chosen (a poll opened before ids were kept: its wording)."""
    if not 0 <= ballot.choice < len(poll.options):
        return ""
    return poll.option_ids[ballot.choice] if ballot.choice < len(poll.option_ids) else poll.options[ballot.choice]



def people_choices(polls: list[tuple[Poll, list[Ballot]]], round_: int) -> list[str]:
    """What people chose in this round's polls (live ballots only), as option ids; in a ranking, only each
    person's first choice. An earlier round's poll asked another question, so it is not read as this round's.
    A poll whose results are hidden counts for nothing until it closes."""
    out: list[str] = []
    for poll, ballots in polls:
        place = RANK_POLL.search(poll.key)
        hidden = poll.hide_results and not poll.closed
        if poll.round == round_ and not hidden and (place is None or place.group(1) == "1"):
            out += [chosen(poll, b) for b in ballots if not b.is_ai and not b.superseded and chosen(poll, b)]
    return out


def people_ballots(places: list[tuple[Poll, list[Ballot]]]) -> dict[str, list[str]]:
    """Each person's ranking (voter -> option ids, best first) from their live ballot in each place's poll; an
    option a person already placed higher is not counted again."""
    rankings: dict[str, list[str]] = {}
    for poll, ballots in sorted(places, key=lambda pb: pb[0].key):  # ":rank1" < ":rank2" < ":rank3"
        for b in ballots:
            if b.is_ai or b.superseded or not chosen(poll, b):
                continue
            mine = rankings.setdefault(b.voter_name or b.voter_id, [])
            if chosen(poll, b) not in mine:
                mine.append(chosen(poll, b))
    return rankings


def people_beside_owners(owners: dict[str, list[str]], people: dict[str, list[str]], shown: dict[str, str],
                         owner_firsts: list[str] | None = None) -> str:
    """The closed ranking: the people's tally beside the owners', item by item in the owners' order, and the
    verdict over every owner's first choice and the people's first choices (`owner_firsts`: one per seated
    owner)."""
    by_owners = {t.item: t for t in tally.tally(owners)}
    by_people = {t.item: t for t in tally.tally(people)}
    lines = ["**The people's ranking beside the owners'**",
             f"_{len(people)} {'person' if len(people) == 1 else 'people'} ranked, {len(owners)} owners._", ""]
    order = [*by_owners, *(k for k in by_people if k not in by_owners)]  # tallies come sorted: dicts keep it
    for i, k in enumerate(order, 1):
        o, p = by_owners.get(k), by_people.get(k)
        ours = f"owners: average rank {o.average:.1f}, {o.firsts}× #1" if o else "owners: not ranked"
        theirs = f"people: average rank {p.average:.1f}, {p.firsts}× #1" if p else "people: not ranked"
        lines.append(f"{i}. **{choices.show(k, shown)}** — {ours} · {theirs}")
    if not by_people:
        lines.append("_Nobody ranked: the owners' ranking stands alone._")
    else:
        top_people = next(iter(by_people))
        lines += ["", "People and owners put the same option first." if next(iter(by_owners), "") == top_people
                  else f"People put **{choices.show(top_people, shown)}** first; the owners did not."]
    firsts = owner_firsts if owner_firsts is not None else [items[0] if items else "" for items in owners.values()]
    lines += ["", f"**Verdict:** {stances.verdict(firsts, tally.first_choices(people), shown)}"]
    return "\n".join(lines)
