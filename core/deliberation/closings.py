"""How the meeting closes, inside the transaction that records its recommendation: the owners' tally in the
recommendation format, the dissents, and a ranking poll per place so people rank too."""

from __future__ import annotations

import re

from core.deliberation import stances, tally
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import fixed_options
from core.deliberation.holders import credited
from core.deliberation.schemas import MeetingRecommendation, RankedVote
from core.models import Ballot, Phase, Poll, Role

PLACES = 3  # people rank their top three, one poll per place
RANK_POLL = re.compile(r":rank(\d+)$")  # the key of a place poll ends with its place


def owner_ballots(state: State) -> tuple[dict[str, list[str]], dict[str, str]]:
    """Each owner's final ranking (name -> items, each meaning once, a free-text item mapped to the option it
    names) and the first reason given for each item; a ranking an AI stand-in cast is credited to the stand-in."""
    ballots: dict[str, list[str]] = {}
    reasons: dict[str, str] = {}
    options = fixed_options(state)
    for t in state.done_turns(Phase.RANKED_VOTE):
        persona = state.persona(t.persona_key)
        if persona is None or not t.data:
            continue
        vote = RankedVote.model_validate(t.data)
        items = [tally.match(r.item, options) or r.item.strip() for r in vote.ranking]
        name = credited(persona, t)
        ballots[name] = tally.dedupe(items)
        for r, item in zip(vote.ranking, items, strict=True):
            reasons.setdefault(tally.key(item), f"{r.why} ({name})")
    return ballots, reasons


def seated_first_choices(state: State, ballots: dict[str, list[str]]) -> list[str]:
    """Every owner's first choice; an owner who cast no ranking (skipped, failed) is undecided."""
    cast = {t.persona_key: t for t in state.done_turns(Phase.RANKED_VOTE)}
    return [(ballots.get(credited(p, cast.get(p.key))) or [""])[0] for p in state.personas if p.role == Role.OWNER]


def ranking_text(vote: RankedVote, options: list[str] | None = None) -> str:
    """An owner's ballot as posted: each meaning once, in the fixed options' wording where it names one."""
    items: list[tuple[str, str]] = []
    seen: set[str] = set()
    for r in vote.ranking:
        item = tally.match(r.item, options or []) or r.item.strip()
        if tally.key(item) and tally.key(item) not in seen:
            seen.add(tally.key(item))
            items.append((item, r.why))
    lines = [f"{i}. **{item}** — {why}" for i, (item, why) in enumerate(items, 1)]
    return "\n".join(lines) + f"\n\nStance: {vote.label or 'undecided'} — {vote.stance}"


def recommendation(topic: str, state: State, rec: MeetingRecommendation, people: list[str]) -> tuple[str, list[str]]:
    """The recommendation's text and the items people are asked to rank. One verdict, over every owner."""
    ballots, reasons = owner_ballots(state)
    ranked = tally.tally(ballots)
    verdict = stances.verdict(seated_first_choices(state, ballots), people)
    lines = ["**Council Recommendation**", f"**Topic:** {topic}", "", "**Consensus Ranking**"]
    for i, t in enumerate(ranked[:5], 1):
        why = reasons.get(tally.key(t.item), "")
        lines.append(f"{i}. **{t.item}** — {why} (average rank {t.average:.1f}; "
                     f"{t.firsts} owner{'s' if t.firsts != 1 else ''} ranked this #1)")
    if not ranked:
        lines.append("- (no votes were cast)")
    lines += ["", f"**Verdict:** {verdict}", "", "**Key Arguments**", *[f"- {a}" for a in rec.key_arguments]]
    dissents = list(rec.dissents)
    if ranked:  # an owner who left the winner out of their top three dissents strongly, whatever the prose says
        top = tally.key(ranked[0].item)
        for name, items in ballots.items():
            if top not in [tally.key(x) for x in items[:3]]:
                dissents.append(f"{name} left {ranked[0].item} out of their top three "
                                f"(their #1: {items[0] if items else 'none'})")
    consensus = verdict.startswith("CONSENSUS")
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


def place_polls(key: str, items: list[str]) -> list[tuple[str, str, list[str], bool]]:
    """(poll key, question, options, final) for each place people rank."""
    if len(items) < 2:
        return []
    return [(f"{key}:rank{place}", f"Your #{place} priority", items, True)
            for place in range(1, min(PLACES, len(items)) + 1)]


def ranking_of(poll_key: str) -> str:
    """The key the places of one ranking share ("" for a poll that is not a place in a ranking)."""
    return RANK_POLL.sub("", poll_key) if RANK_POLL.search(poll_key) else ""


def people_ballots(places: list[tuple[Poll, list[Ballot]]]) -> dict[str, list[str]]:
    """Each person's ranking (voter -> items, best first) from their live ballot in each place's poll; an item a
    person already placed higher is not counted again."""
    rankings: dict[str, list[str]] = {}
    for poll, ballots in sorted(places, key=lambda pb: pb[0].key):  # ":rank1" < ":rank2" < ":rank3"
        for b in ballots:
            if b.is_ai or b.superseded or not 0 <= b.choice < len(poll.options):
                continue
            mine = rankings.setdefault(b.voter_name or b.voter_id, [])
            if poll.options[b.choice] not in mine:
                mine.append(poll.options[b.choice])
    return rankings


def people_beside_owners(owners: dict[str, list[str]], people: dict[str, list[str]],
                         owner_firsts: list[str] | None = None) -> str:
    """The closed ranking: the people's tally beside the owners', item by item in the owners' order, and the
    verdict over every owner's first choice and the people's (`owner_firsts`: one per seated owner)."""
    by_owners = {tally.key(t.item): t for t in tally.tally(owners)}
    by_people = {tally.key(t.item): t for t in tally.tally(people)}
    lines = ["**The people's ranking beside the owners'**",
             f"_{len(people)} {'person' if len(people) == 1 else 'people'} ranked, {len(owners)} owners._", ""]
    shown = {k: t.item for k, t in {**by_people, **by_owners}.items()}  # the owners' wording where both have it
    order = [*by_owners, *(k for k in by_people if k not in by_owners)]  # tallies come sorted: dicts keep it
    for i, k in enumerate(order, 1):
        o, p = by_owners.get(k), by_people.get(k)
        ours = f"owners: average rank {o.average:.1f}, {o.firsts}× #1" if o else "owners: not ranked"
        theirs = f"people: average rank {p.average:.1f}, {p.firsts}× #1" if p else "people: not ranked"
        lines.append(f"{i}. **{shown[k]}** — {ours} · {theirs}")
    if not by_people:
        lines.append("_Nobody ranked: the owners' ranking stands alone._")
    else:
        top_people = next(iter(by_people.values()))
        lines += ["", "People and owners put the same option first." if next(iter(by_owners), "") ==
                  tally.key(top_people.item) else f"People put **{top_people.item}** first; the owners did not."]
    firsts = owner_firsts if owner_firsts is not None else [items[0] if items else "" for items in owners.values()]
    people_firsts = [items[0] for items in people.values() if items]
    lines += ["", f"**Verdict:** {stances.verdict(firsts, people_firsts)}"]
    return "\n".join(lines)
