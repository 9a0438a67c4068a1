"""The full record of a discussion as JSON: its turns, messages, polls and syntheses, and what a team files (the
closing's stances, verdict, ranking and open questions; the roster with its seats; the page link)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from core.deliberation import closings, context, flows, question, review, routes, stances, tally, verdicts
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import fixed_options, owner_ballots
from core.deliberation.holders import credited
from core.deliberation.roster import VISITORS
from core.models import Author, Ballot, Persona, Phase, Poll, Turn
from core.showing import deadlines, formats
from core.showing.pages import PageLinks
from core.storage.store import Store


async def export(store: Store, discussion_id: str, *, operator: bool = False, pages: PageLinks | None = None,
                 now: datetime | None = None) -> dict[str, Any] | None:
    """The record. An open poll whose results are hidden shows neither its tally nor its ballots until it closes
    (the page and exports asked for in chat); `operator` (the server's command line) shows them, marked.
    `pages` and `now`: the discussion's page link is given where pages are set up."""
    async with store.tx() as tx:
        d = await tx.discussion(discussion_id)
        if d is None:
            return None
        personas = await tx.personas(d.id)
        turns = await tx.turns(d.id)
        humans = await tx.human_messages(d.id)
        polls = [(p, await tx.ballots(p.id, include_superseded=True)) for p in await tx.polls(d.id)]
        syntheses = await tx.syntheses(d.id)
        usage = await tx.usage_total([d.id])
    seats = {**VISITORS, **{p.key: p for p in personas}}
    names = {key: p.name for key, p in seats.items()}
    state = State(discussion=d, personas=personas, turns=turns, humans=humans)
    return {
        "discussion": {
            **d.model_dump(mode="json", include={
                "id", "topic", "flow", "status", "platform", "workspace", "channel", "thread_ref", "created_by",
                "created_by_name", "round", "round_topic", "mode", "created_at", "updated_at", "blocked_reason",
                "options",
            }),
        },
        "personas": [p.model_dump(mode="json") for p in routes.annotate(state)],  # each with its model
        "turns": [
            {
                "key": t.key, "round": t.round, "step": t.step, "kind": t.phase.value,
                "author": credited(seats[t.persona_key], t) if t.persona_key in seats else t.persona_key,
                "author_key": t.persona_key, "authorship": t.author.value,
                "status": t.status.value, "text": t.text, "data": t.data, "error": t.error,
                "reply_to": t.reply_to,
                # A seat held by a person: the turns they wrote, and those their AI stand-in wrote for them.
                "written_by": names.get(t.persona_key) if t.author == Author.PERSON else None,
                "stand_in_for": names.get(t.persona_key) if t.author == Author.STAND_IN else None,
                # What the stance chose (an option's id) and how people read it (its label with the id).
                "stance": ({"label": stances.label_of(t), "choice": stances.choice_of(t),
                            "shown": str((t.data or {}).get("shown") or stances.choice_of(t)),
                            "text": str((t.data or {}).get("stance", ""))} if stances.has_stance(t) else None),
                "created_at": t.created_at.isoformat(),
                "finished_at": t.finished_at.isoformat() if t.finished_at else None,
            }
            for t in turns
        ],
        "human_messages": [
            {"id": m.id, "author": m.author_name, "author_id": m.author_id, "text": m.text,
             "addressed_to": m.addressed_to, "answered": m.answered, "created_at": m.created_at.isoformat()}
            for m in humans
        ],
        "polls": [_poll(p, ballots, operator) for p, ballots in polls],
        "syntheses": [
            {"round": s["round"], "kind": s["kind"], "data": s["data"], "text": s["text"],
             "created_at": s["created_at"].isoformat()}
            for s in syntheses
        ],
        "usage": usage.model_dump(exclude={"model"}),
        "link": pages.url(d.id, now, d.options.links) if pages is not None and now is not None else "",
        "roster": _roster(personas, turns),
        "closing": _closing(state, polls, syntheses, operator),
        "stances": _backed(state),
        "peer_reviews": _peer_reviews(state),
    }


def _peer_reviews(state: State) -> list[dict[str, Any]]:
    """Each reviewed round's aggregate as the thread showed it, with its standings by author key."""
    out = []
    for r in sorted({t.round for t in review.reviews_of(state, None)}):
        last = max(t.finished_at or t.created_at for t in state.done_turns(Phase.PEER_REVIEW, r))
        out.append({"round": r, "text": review.text(state, r), "at": last.isoformat(),
                    "standings": [vars(s) for s in review.standings(state, r)]})
    return out


def _roster(personas: list[Persona], turns: list[Turn]) -> list[dict[str, Any]]:
    """Who sat at the table: each seat with its role, whether a person held it, and who wrote its turns."""
    done = [t for t in turns if t.text]
    return [{"key": p.key, "name": p.name, "role": p.role.value, "title": p.title, "held_in_person": bool(p.held_by),
             "turns_in_person": sum(1 for t in done if t.persona_key == p.key and t.author == Author.PERSON),
             "turns_by_stand_in": sum(1 for t in done if t.persona_key == p.key and t.author == Author.STAND_IN)}
            for p in personas]


def _closing(state: State, polls: list[tuple[Poll, list[Ballot]]], syntheses: list[dict[str, Any]],
             operator: bool) -> dict[str, Any]:
    """What a team files: the last round's stance table and verdict (personas and people, as the thread showed it),
    the question it asked, the questions left open (the closing's own, the referee's tensions, the debates left
    unresolved), the people's messages nobody answered, and a meeting's ranking beside its owners'."""
    d = state.discussion
    rows = stances.table(state, d.round, carry=flows.get(d.flow).keeps_stances)
    people = closings.people_choices(polls, d.round)  # ids, as the post and the decision record count them
    final = next((s for s in reversed(syntheses) if s["kind"] == "final"), None)
    data = (final["data"] or {}) if final is not None else None
    if data is None:
        data = next((s["data"] or {} for s in reversed(syntheses) if s["kind"] == "round"), {})
    questions = [str(q) for q in data.get("open_questions") or []]
    questions += [f"Unresolved: {x.get('topic', '')}" for x in data.get("unresolved_debates") or []
                  if isinstance(x, dict)]
    questions += [f"Tension: {t}" for t in data.get("tensions") or []]
    questions += [f"Dissent: {t}" for t in data.get("dissents") or []]
    verdict = verdicts.of_round(state, d.round, people) if rows else None
    if verdict is not None:  # "so far" while its poll is open, as the post and the decision record say it
        verdict = deadlines.said(d, verdict, deadlines.open_until(p for p, _ in polls))
    return {
        "round": d.round,
        "question": question.asked(state),
        "verdict": verdict.text if verdict is not None else "",
        "verdict_kind": verdict.kind if verdict is not None else "",
        "stances": [_row(r) for r in rows],
        # The closing as written, without the stance section and verdict the record shows once beside it.
        "body": _body(final, stances.text(rows, d.round, with_verdict=False)) if final is not None else "",
        "open_questions": questions,
        "people_unanswered": [{"author": m.author_name, "text": m.text} for m in context.unanswered(state)],
        "ranking": _ranking(state, polls, operator),
    }


def _body(final: dict[str, Any], section: str) -> str:
    """A closing's text without the stance section and verdict line it was recorded with (both the bot's own
    words, found exactly: the verdict as the record keeps it, refreshed with every vote)."""
    text = str(final["text"] or "")
    if section:
        text = text.replace(f"\n\n{section}", "", 1)
    said = str((final["data"] or {}).get("verdict") or "")
    return text.replace(f"\n\n{verdicts.LINE}{said}", "", 1) if said else text


def _ranking(state: State, polls: list[tuple[Poll, list[Ballot]]], operator: bool) -> dict[str, Any] | None:
    """A meeting's ranking: the people's tally beside the owners', item by item in the owners' order (None when
    people were not asked to rank). While a place's results are hidden, only an operator sees the people's."""
    places = [(p, b) for p, b in polls if closings.ranking_of(p.key)]
    if not places:
        return None
    hidden = any(p.hide_results and not p.closed for p, _ in places) and not operator
    owners = owner_ballots(state)[0]
    people = {} if hidden else closings.people_ballots(places)
    shown = {o.id: o.label for o in fixed_options(state)}
    by_owners = {t.item: t for t in tally.tally(owners)}
    by_people = {t.item: t for t in tally.tally(people)}
    items = []
    for k in [*by_owners, *(k for k in by_people if k not in by_owners)]:
        o, p = by_owners.get(k), by_people.get(k)
        items.append({"id": k, "label": shown.get(k, k),
                      "owners_average": round(o.average, 2) if o else None, "owners_firsts": o.firsts if o else 0,
                      "people_average": round(p.average, 2) if p else None, "people_firsts": p.firsts if p else 0})
    return {"closed": all(p.closed for p, _ in places), "results_hidden": hidden, "owners": len(owners),
            "people": len(people), "items": items}


def _row(r: stances.Row) -> dict[str, Any]:
    return {"persona": r.persona, "choice": r.choice, "label": r.label or "undecided", "counted": r.counted,
            "change": r.change, "stance": r.stance}


def _backed(state: State) -> list[dict[str, Any]]:
    """Who backed which option, round by round: each persona's recorded choice (an id), never a name a
    synthesis wrote beside a proposal."""
    carry = flows.get(state.discussion.flow).keeps_stances
    rounds = sorted({t.round for t in state.done_turns() if stances.has_stance(t)})
    return [{"round": r, "rows": [_row(x) for x in stances.table(state, r, carry=carry)]} for r in rounds]


def _poll(p: Poll, ballots: list[Ballot], operator: bool) -> dict[str, Any]:
    hidden = p.hide_results and not p.closed
    shown = operator or not hidden
    return {
        "id": p.id, "round": p.round, "question": p.question, "options": p.options, "closed": p.closed,
        "anonymous": p.anonymous, "hide_results": p.hide_results, "final": p.final,
        "results_hidden": hidden,  # still hidden from people: an operator's export shows them, marked by this
        "tally": formats.poll_view(p.model_copy(update={"hide_results": False}), ballots).counts if shown else None,
        "ballots": [
            {"user": "(anonymous)" if p.anonymous and not b.is_ai else b.voter_name,
             "choice": b.choice, "option": p.options[b.choice] if b.choice < len(p.options) else None,
             "is_ai": b.is_ai, "superseded": b.superseded, "created_at": b.created_at.isoformat()}
            for b in ballots
        ] if shown else [],
    }
