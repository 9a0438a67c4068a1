"""The full record of a discussion as JSON, and its Markdown artifacts (synthesis.md, open-questions.md)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from core.deliberation import closings, context, flows, routes, stances, verdicts
from core.deliberation.flows.base import State
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
        "closing": _closing(state, polls, syntheses),
        "stances": _backed(state),
    }


def _closing(state: State, polls: list[tuple[Poll, list[Ballot]]], syntheses: list[dict[str, Any]]) -> dict[str, Any]:
    """What a team files: the last round's stance table and verdict (personas and people, as the thread showed it),
    the questions left open (the closing's own, the referee's tensions, the debates left unresolved) and the people's
    messages nobody answered."""
    d = state.discussion
    rows = stances.table(state, d.round, carry=flows.get(d.flow).keeps_stances)
    people = closings.people_choices(polls, d.round)  # ids, as the post and the decision record count them
    data = next((s["data"] or {} for s in reversed(syntheses) if s["kind"] == "final"), None)
    if data is None:
        data = next((s["data"] or {} for s in reversed(syntheses) if s["kind"] == "round"), {})
    questions = [str(q) for q in data.get("open_questions") or []]
    questions += [f"Unresolved: {x.get('topic', '')}" for x in data.get("unresolved_debates") or []
                  if isinstance(x, dict)]
    questions += [f"Tension: {t}" for t in data.get("tensions") or []]
    questions += [f"Dissent: {t}" for t in data.get("dissents") or []]
    return {
        "round": d.round,
        "verdict": verdicts.of_round(state, d.round, people).text if rows else "",
        "stances": [_row(r) for r in rows],
        "open_questions": questions,
        "people_unanswered": [{"author": m.author_name, "text": m.text} for m in context.unanswered(state)],
    }


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
    closing = doc.get("closing") or {}
    if closing.get("stances"):
        synthesis = synthesis.rstrip("\n") + "\n\n" + _stance_markdown(closing) + "\n"
    return {"synthesis.md": synthesis, "open-questions.md": _open_questions(topic, closing, rounds)}


def _stance_markdown(closing: dict[str, Any]) -> str:
    rows = [f"| {r['persona']} | {r['label']} | {r['change']} | {r['stance']} |".replace("\n", " ")
            for r in closing["stances"]]
    return "\n".join([f"## Stances after round {closing['round']}", "", "| persona | stance | change | why |",
                      "| --- | --- | --- | --- |", *rows, "", f"**Verdict:** {closing['verdict']}"])


def _open_questions(topic: str, closing: dict[str, Any], rounds: list[RoundSynthesis]) -> str:
    """The questions the closing left open (its own, the referee's tensions, the dissents) and the people's
    messages nobody answered."""
    lines = [f"# Open questions: {topic}", ""]
    asked = closing.get("open_questions") or []
    people = closing.get("people_unanswered") or []
    if asked:
        lines += ["## From the council", "", *[f"- {q}" for q in asked], ""]
    if people:
        lines += ["## From people, unanswered", "",
                  *[f"- {p['author']}: {' '.join(str(p['text']).split())}" for p in people], ""]
    for n, r in enumerate(rounds, 1):
        if r.open_questions:
            lines += [f"## Round {n}", "", *[f"- {q}" for q in r.open_questions], ""]
    if len(lines) == 2:
        lines += ["_None left open._", ""]
    return "\n".join(lines)


def _final(data: dict[str, Any] | None) -> FinalSynthesis | None:
    try:
        return FinalSynthesis.model_validate(data)
    except ValidationError:
        return None


def layout(doc: dict[str, Any]) -> dict[str, str]:
    """The discussion as a folder a team can file (relative path -> text): manifest.json, personas/<key>.json,
    rounds/NNN.json (each round's turns, people's messages and synthesis), artifacts/synthesis.json, synthesis.md and
    open-questions.md."""
    d = doc["discussion"]
    files = {"manifest.json": _json({
        "id": d["id"], "title": d["topic"], "flow": d["flow"], "created": d["created_at"], "status": d["status"],
        "currentRound": d["round"], "personas": [{"id": p["key"], "name": p["name"], "role": p["role"]}
                                                 for p in doc["personas"]]})}
    for p in doc["personas"]:
        files[f"personas/{p['key']}.json"] = _json(p)
    rounds = sorted({t["round"] for t in doc["turns"]} | {s["round"] for s in doc["syntheses"]})
    for n in rounds:
        turns = [t for t in doc["turns"] if t["round"] == n and t["kind"] not in ("roster", "bid") and t["text"]]
        start = min((t["created_at"] for t in doc["turns"] if t["round"] == n), default="")
        later = [t["created_at"] for t in doc["turns"] if t["round"] > n]
        end = min(later) if later else None
        said = [m for m in doc["human_messages"] if m["created_at"] >= start and (end is None or m["created_at"] < end)]
        messages = sorted([{"from": t["author"], "kind": t["kind"], "text": t["text"], "stance": t["stance"],
                            "written_by": t["written_by"], "timestamp": t["finished_at"] or t["created_at"]}
                           for t in turns] +
                          [{"from": m["author"], "kind": "person", "text": m["text"], "stance": None,
                            "written_by": m["author"], "timestamp": m["created_at"]} for m in said],
                          key=lambda x: x["timestamp"] or "")
        synthesis = next((s["data"] for s in doc["syntheses"] if s["round"] == n and s["kind"] == "round"), None)
        files[f"rounds/{n:03d}.json"] = _json({
            "roundId": n, "topic": d["topic"],
            "timestamp": start, "messages": messages, "synthesis": synthesis,
            "metadata": {"messageCount": len(messages), "participants": sorted({m["from"] for m in messages})}})
    finals = [s for s in doc["syntheses"] if s["kind"] == "final"]
    files["artifacts/synthesis.json"] = _json({"flow": d["flow"], "final": finals[-1]["data"] if finals else None,
                                               "closing": doc.get("closing")})
    for name, text in artifacts(doc).items():
        files[f"artifacts/{name}"] = text
    return files


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"
