"""The full record of a discussion as JSON, and its Markdown artifacts (synthesis.md, open-questions.md)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from core.deliberation import stances
from core.deliberation.holders import credited
from core.deliberation.roster import VISITORS
from core.deliberation.schemas import FinalSynthesis, RoundSynthesis
from core.models import Author, Ballot, Poll
from core.showing import formats
from core.storage.store import Store


async def export(store: Store, discussion_id: str, *, operator: bool = False) -> dict[str, Any] | None:
    """The record. An open poll whose results are hidden shows neither its tally nor its ballots until it closes
    (the page and exports asked for in chat); `operator` (the server's command line) shows them, marked."""
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
    return {
        "discussion": {
            **d.model_dump(mode="json", include={
                "id", "topic", "flow", "status", "platform", "workspace", "channel", "thread_ref", "created_by",
                "created_by_name", "round", "round_topic", "mode", "created_at", "updated_at", "blocked_reason",
                "options",
            }),
        },
        "personas": [p.model_dump(mode="json") for p in personas],
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
                "stance": ({"label": stances.label_of(t), "text": str((t.data or {}).get("stance", ""))}
                           if stances.has_stance(t) else None),
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
    }


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


def artifacts(doc: dict[str, Any]) -> dict[str, str]:
    """synthesis.md and open-questions.md, from an export document."""
    topic = doc["discussion"]["topic"]
    rounds = [RoundSynthesis.model_validate(s["data"]) for s in doc["syntheses"] if s["kind"] == "round"]
    finals = [s for s in doc["syntheses"] if s["kind"] == "final"]
    final = _final(finals[-1]["data"]) if finals else None
    if final is not None:
        synthesis = formats.synthesis_markdown(topic, final)
    elif finals:  # another flow's closing (a referee's verdict, a meeting's recommendation): its text as written
        synthesis = f"# Synthesis: {topic}\n\n{finals[-1]['text']}\n"
    elif rounds:
        synthesis = f"# Synthesis: {topic}\n\n_No final synthesis yet; latest round synthesis:_\n\n" + \
            formats.round_synthesis_text(rounds[-1], len(rounds)) + "\n"
    else:
        synthesis = f"# Synthesis: {topic}\n\n_No synthesis yet._\n"
    return {"synthesis.md": synthesis, "open-questions.md": formats.open_questions_markdown(topic, rounds, final)}


def _final(data: dict[str, Any] | None) -> FinalSynthesis | None:
    try:
        return FinalSynthesis.model_validate(data)
    except ValidationError:
        return None
