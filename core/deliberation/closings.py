"""How the meeting closes, inside the transaction that records its recommendation: the owners' tally in the
recommendation format, the dissents, and a ranking poll per place so people rank too."""

from __future__ import annotations

import re
from datetime import datetime

from core.deliberation import choices, stances, tally
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import as_written, fixed_options, owner_ballots
from core.deliberation.holders import credited
from core.deliberation.schemas import MeetingRecommendation, RankedVote
from core.models import Ballot, Phase, Poll, Role

PLACES = 3  # people rank their top three, one poll per place
RANK_POLL = re.compile(r":rank(\d+)$")  # the key of a place poll ends with its place

def seated_first_choices(state: State, ballots: dict[str, list[str]]) -> list[str]:
    """Every owner's first choice (an option id): their #1 as written; an owner whose #1 names no option, or who
    cast no ranking (skipped, failed), is undecided."""
    cast = {t.persona_key: t for t in state.done_turns(Phase.RANKED_VOTE)}
    return [(ballots.get(credited(p, cast.get(p.key))) or [""])[0] for p in state.personas if p.role == Role.OWNER]


def placed(vote: RankedVote, options: list[Option]) -> list[str]:
    """A ranking as written: for each place, the option id its item names (by id, exact label, or a form the bot
    shows), "" for an item that names none or repeats an option placed higher. Every item keeps its place: an
    unmatched #1 is never replaced by the #2."""
    return as_written(vote, options)


def ranking_text(vote: RankedVote, options: list[Option]) -> str:
    """An owner's ballot as posted, place by place as written: each option with its id and the domain it affects;
    an item that names no option (or repeats one) keeps its place, shown as unmatched (it counts for none)."""
    lines: list[str] = []
    ids = placed(vote, options)
    shown = {o.id: o.label for o in options}
    for place, (r, named) in enumerate(zip(vote.ranking, ids, strict=True), 1):
        domain = f" _(affects {r.domain})_" if r.domain else ""
        if not named:
            why = "repeats an option placed higher" if choices.named(r.item, options) else "names no option on the list"
            lines.append(f"{place}. _{r.item.strip()} (unmatched: {why}, not counted)_ — {r.why}")
        else:
            lines.append(f"{place}. **{shown[named]}** [{named}]{domain} — {r.why}")
    first = ids[0] if ids else ""
    said = stances.line({"choice": first, "stance": vote.stance}, shown) if first else \
        f"Stance: undecided{' (their #1 names no option)' if vote.ranking else ''} — {vote.stance}"
    return "\n".join(lines) + f"\n\n{said}"


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
    """What people chose in this round's polls (live ballots only), as option ids, each person once: a person's
    latest choice on any poll of the round stands (one question, one vote each); in a ranking, only a person's #1
    counts. An earlier round's poll asked another question, so it is not read as this round's. A poll whose
    results are hidden counts for nothing until it closes."""
    latest: dict[str, tuple[datetime, int, str]] = {}
    for poll, ballots in polls:
        place = RANK_POLL.search(poll.key)
        hidden = poll.hide_results and not poll.closed
        if poll.round != round_ or hidden or (place is not None and place.group(1) != "1"):
            continue
        for b in ballots:
            if b.is_ai or b.superseded or not chosen(poll, b):
                continue
            seen = latest.get(b.voter_id)
            if seen is None or (b.created_at, poll.id) >= seen[:2]:
                latest[b.voter_id] = (b.created_at, poll.id, chosen(poll, b))
    return [choice for _, _, choice in latest.values()]


def people_ballots(places: list[tuple[Poll, list[Ballot]]]) -> dict[str, list[str]]:
    """Each person's ranking (voter -> option ids, place by place; "" for a place they left empty) from their live
    ballot in each place's poll. An option a person already placed higher leaves the lower place empty: it never
    moves another pick up."""
    rankings: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for poll, ballots in places:
        m = RANK_POLL.search(poll.key)
        if m is None:
            continue
        place = int(m.group(1))
        for b in ballots:
            if b.is_ai or b.superseded or not chosen(poll, b):
                continue
            names.setdefault(b.voter_id, b.voter_name or b.voter_id)
            mine = rankings.setdefault(b.voter_id, [])
            mine.extend([""] * (place - len(mine)))
            mine[place - 1] = chosen(poll, b)
    out: dict[str, list[str]] = {}
    for voter, mine in rankings.items():
        out[names[voter]] = [x if x not in mine[:i] else "" for i, x in enumerate(mine)]
    return out


def repeated_place(places: list[tuple[Poll, list[Ballot]]], poll: Poll, voter_id: str, choice: int) -> str:
    """Why a pick on one place of a ranking is refused ("" when it is not): the option is already the person's
    pick for another place."""
    if not ranking_of(poll.key) or not 0 <= choice < len(poll.options):
        return ""
    picked = poll.option_ids[choice] if choice < len(poll.option_ids) else poll.options[choice]
    for other, ballots in places:
        m = RANK_POLL.search(other.key)
        if other.id == poll.id or m is None or ranking_of(other.key) != ranking_of(poll.key):
            continue
        if any(b.voter_id == voter_id and not b.superseded and chosen(other, b) == picked for b in ballots):
            return (f"You already put {poll.options[choice]} at #{m.group(1)}: pick another option for this place "
                    "(each option takes one place in your ranking).")
    return ""


def people_beside_owners(owners: dict[str, list[str]], people: dict[str, list[str]], shown: dict[str, str],
                         owner_firsts: list[str] | None = None, final: stances.Verdict | None = None) -> str:
    """The closed ranking: the people's tally beside the owners', item by item in the owners' order, and the
    final verdict: `final`, the one the recommendation now shows, else the one over every owner's first choice
    and the people's first choices (`owner_firsts`: one per seated owner)."""
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
    said = final.text if final is not None else stances.verdict(firsts, tally.first_choices(people), shown)
    lines += ["", f"**Final verdict:** {said}"]
    return "\n".join(lines)
