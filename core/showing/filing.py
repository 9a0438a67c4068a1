"""The files a team keeps of a discussion, from its export record: synthesis.md and open-questions.md (each section
once, under a header naming the topic, flow, date, roster and link), the charts beside them, and the folder layout
(manifest, personas, rounds, artifacts, context/summary.md) (pure)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from core.deliberation import links
from core.deliberation.schemas import FinalSynthesis, RoundSynthesis
from core.models import PostFile
from core.showing import formats, pollcsv

UNDECIDED_KINDS = {"SPLIT", "NO VERDICT"}  # a verdict that leaves the question itself open


def artifacts(doc: dict[str, Any], charts: list[PostFile] | None = None) -> dict[str, str]:
    """synthesis.md and open-questions.md; `charts`: the pictures written beside them, which synthesis.md shows."""
    return {"synthesis.md": synthesis(doc, charts or []), "open-questions.md": open_questions(doc)}


def _when(iso: str) -> str:
    try:
        moment = datetime.fromisoformat(iso)
    except (TypeError, ValueError):
        return str(iso)
    utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    return f"{utc:%a} {utc.day} {utc:%b %Y, %H:%M} UTC"


def _seat(p: dict[str, Any]) -> str:
    what = p.get("title") or str(p.get("role", "")).replace("_", " ")
    notes = []
    if p.get("held_in_person"):
        notes.append("seat held in person")
    if p.get("turns_by_stand_in"):
        n = p["turns_by_stand_in"]
        notes.append(f"{n} turn{'s' * (n != 1)} by the AI stand-in")
    return f"{p['name']} ({what}{'; ' + '; '.join(notes) if notes else ''})"


def header(doc: dict[str, Any], title: str) -> list[str]:
    """The lines that open every file: what was discussed, how, when, by whom, and where to read it."""
    d = doc["discussion"]
    topic = links.plain(str(d["topic"]))  # typed by a person: a link in it is shown, not followed
    rounds = d.get("round") or 0
    link = doc.get("link") or ""
    roster = [_seat(p) for p in doc.get("roster") or []]
    return [
        f"# {title}: {topic}", "",
        f"- **Topic:** {topic}",
        f"- **Flow:** {d['flow']} · {rounds} round{'s' * (rounds != 1)} · {str(d['status']).replace('_', ' ')}",
        f"- **Date:** {_when(d['created_at'])} (last change {_when(d['updated_at'])})",
        f"- **Roster:** {'; '.join(roster) if roster else '(none seated)'}",
        f"- **Link:** {link}" if link else f"- **Discussion:** `{d['id']}` on {d.get('platform') or 'console'} "
                                           "(no page link: pages are not set up)",
        "",
    ]


def _final(data: dict[str, Any] | None) -> FinalSynthesis | None:
    try:
        return FinalSynthesis.model_validate(data)
    except ValidationError:
        return None


def _body(doc: dict[str, Any]) -> str:
    """The closing itself: a structured final synthesis in sections, another flow's closing as it was written
    (its stance section and verdict left to the table below), else the latest round's synthesis."""
    topic = doc["discussion"]["topic"]
    finals = [s for s in doc["syntheses"] if s["kind"] == "final"]
    rounds = [RoundSynthesis.model_validate(s["data"]) for s in doc["syntheses"] if s["kind"] == "round"]
    final = _final(finals[-1]["data"]) if finals else None
    if final is not None:
        return formats.synthesis_markdown(topic, final).removeprefix(f"# Synthesis: {topic}\n\n").strip()
    if finals:
        return str((doc.get("closing") or {}).get("body") or finals[-1]["text"]).strip()
    if rounds:
        return "_No final synthesis yet; latest round synthesis:_\n\n" + \
            formats.round_synthesis_text(rounds[-1], len(rounds)).strip()
    return "_No synthesis yet._"


def synthesis(doc: dict[str, Any], charts: list[PostFile]) -> str:
    closing = doc.get("closing") or {}
    body = _body(doc)
    lines = [*header(doc, "Synthesis"), body, ""]
    # The table replaces the stance bullets a closing was posted with; a closing recorded otherwise keeps its own.
    if closing.get("stances") and f"**Stances after round {closing['round']}**" not in body:
        lines += [_stance_markdown(closing), ""]
    if closing.get("verdict") and "**Verdict:**" not in body:
        lines += [f"**Verdict:** {closing['verdict']}", ""]
    if closing.get("ranking"):
        lines += [_ranking_markdown(closing["ranking"]), ""]
    if charts:
        lines += ["## Charts", ""]
        for f in charts:
            lines += [f"![{_escaped(f.alt)}]({f.name})", "", f"_{f.title}_", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _escaped(text: str) -> str:
    return " ".join(text.split()).replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _stance_markdown(closing: dict[str, Any]) -> str:
    rows = [f"| {_cell(r['persona'])}{'' if r.get('counted', True) else ' (shown, not counted)'} | "
            f"{_cell(r['label'])} | {_cell(r['change'])} | {_cell(r['stance'])} |" for r in closing["stances"]]
    return "\n".join([f"## Stances after round {closing['round']}", "", "| persona | stance | change | why |",
                      "| --- | --- | --- | --- |", *rows])


def _ranking_markdown(ranking: dict[str, Any]) -> str:
    """The people's ranking beside the owners', item by item (average rank: lower is better)."""
    def avg(x: float | None) -> str:
        return f"{x:.1f}" if x is not None else "not ranked"

    people = ranking["people"]
    state = "" if ranking.get("closed") else " (the ranking is still open)"
    lines = ["## The people's ranking beside the owners'", "",
             f"_{people} {'person' if people == 1 else 'people'} ranked, {ranking['owners']} owners{state}._", ""]
    if ranking.get("results_hidden"):
        return "\n".join([*lines, "_The people's ranking is hidden until it closes._"])
    lines += ["| # | option | owners: average rank | owners' #1 | people: average rank | people's #1 |",
              "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {i} | {_cell(x['label'])} [{x['id']}] | {avg(x['owners_average'])} | {x['owners_firsts']} | "
              f"{avg(x['people_average'])} | {x['people_firsts']} |" for i, x in enumerate(ranking["items"], 1)]
    if not people:
        lines += ["", "_Nobody ranked: the owners' ranking stands alone._"]
    return "\n".join(lines)


def open_items(doc: dict[str, Any]) -> list[str]:
    """What is still open, each once: the question itself when the verdict left it open, then the questions the
    closing and the round syntheses left (one asked in several rounds is listed once, with its rounds)."""
    closing = doc.get("closing") or {}
    items: list[str] = []
    if closing.get("verdict_kind") in UNDECIDED_KINDS and closing.get("question"):
        items.append(f"**{closing['question']}** — still undecided: {closing['verdict']}")
    asked: dict[str, tuple[str, list[int]]] = {}
    for q in closing.get("open_questions") or []:
        asked.setdefault(_same(q), (str(q), []))
    for s in doc["syntheses"]:
        if s["kind"] != "round":
            continue
        for q in (s["data"] or {}).get("open_questions") or []:
            seen = asked.setdefault(_same(q), (str(q), []))[1]
            if s["round"] not in seen:
                seen.append(s["round"])
    for text, rounds in asked.values():
        where = f" _(round{'s' * (len(rounds) > 1)} {', '.join(map(str, rounds))})_" if rounds else ""
        items.append(f"{text}{where}")
    return items


def _same(question: Any) -> str:
    """A question's identity across rounds: its words, whatever their case and spacing."""
    return " ".join(str(question).casefold().split()).rstrip("?.! ")


def open_questions(doc: dict[str, Any]) -> str:
    closing = doc.get("closing") or {}
    lines = header(doc, "Open questions")
    items = open_items(doc)
    people = closing.get("people_unanswered") or []
    if items:
        lines += ["## Left open", "", *[f"- {q}" for q in items], ""]
    if people:
        lines += ["## From people, unanswered", "",
                  *[f"- {p['author']}: {' '.join(str(p['text']).split())}" for p in people], ""]
    if not items and not people:
        lines += ["_None left open._", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def summary(doc: dict[str, Any]) -> str:
    """context/summary.md: what someone picking the discussion up needs: where it stands, who holds which
    position, what is open, and the pause's own summary when it was paused."""
    d, closing = doc["discussion"], doc.get("closing") or {}
    lines = header(doc, "Where it stands")
    paused = [s for s in doc["syntheses"] if s["kind"] == "resume"]
    if paused:
        lines += ["## Where we paused", "", str(paused[-1]["text"]).strip(), ""]
    rounds = [s for s in doc["syntheses"] if s["kind"] == "round"]
    if rounds:
        lines += ["## Round by round", ""]
        lines += [f"- Round {s['round']}: {' '.join(str((s['data'] or {}).get('summary') or '').split())}"
                  for s in rounds]
        lines += [""]
    if closing.get("stances"):
        lines += [f"## Positions after round {closing['round']}", ""]
        lines += [f"- {r['persona']}: {r['label']} — {' '.join(str(r['stance']).split())}"
                  + ("" if r.get("counted", True) else " (shown, not counted)") for r in closing["stances"]]
        lines += ["", f"**Verdict:** {closing['verdict']}", ""]
    items = open_items(doc)
    if items:
        lines += ["## Next time", "", *[f"- {q}" for q in items], ""]
    if d.get("platform") == "console" and d["status"] not in ("done", "stopped"):
        lines += [f"Resume with: `python -m bot console --resume {d['id']}`", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def layout(doc: dict[str, Any], charts: list[PostFile] | None = None) -> dict[str, str]:
    """The discussion as a folder a team can file (relative path -> text), each file once: manifest.json,
    personas/<key>.json, rounds/NNN.json (each round's turns, people's messages and synthesis),
    artifacts/synthesis.json, artifacts/synthesis.md and artifacts/open-questions.md (the charts, written by the
    caller, go beside them in artifacts/), artifacts/polls.csv (when it had polls), context/summary.md, and
    transcript.json (the full record)."""
    d = doc["discussion"]
    files = {"manifest.json": _json({
        "id": d["id"], "title": d["topic"], "flow": d["flow"], "created": d["created_at"], "status": d["status"],
        "lastActive": d["updated_at"], "currentRound": d["round"], "link": doc.get("link") or "",
        "personas": [{"id": p["key"], "name": p["name"], "role": p["role"]} for p in doc["personas"]],
        "charts": [f"artifacts/{f.name}" for f in charts or []]})}
    for p in doc["personas"]:
        files[f"personas/{p['key']}.json"] = _json(p)
    for n in sorted({t["round"] for t in doc["turns"]} | {s["round"] for s in doc["syntheses"]}):
        files[f"rounds/{n:03d}.json"] = _json(_round(doc, n))
    finals = [s for s in doc["syntheses"] if s["kind"] == "final"]
    files["artifacts/synthesis.json"] = _json({"flow": d["flow"], "final": finals[-1]["data"] if finals else None,
                                               "closing": doc.get("closing")})
    for name, text in artifacts(doc, charts).items():
        files[f"artifacts/{name}"] = text
    files["context/summary.md"] = summary(doc)
    if doc.get("polls"):
        files["artifacts/polls.csv"] = pollcsv.write(doc)
    files["transcript.json"] = _json(doc)
    return files


def _round(doc: dict[str, Any], n: int) -> dict[str, Any]:
    d = doc["discussion"]
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
    synthesis_ = next((s["data"] for s in doc["syntheses"] if s["round"] == n and s["kind"] == "round"), None)
    return {"roundId": n, "topic": d["topic"], "timestamp": start, "messages": messages, "synthesis": synthesis_,
            "metadata": {"messageCount": len(messages), "participants": sorted({m["from"] for m in messages})}}


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def folder(doc: dict[str, Any], charts: list[PostFile] | None = None) -> dict[str, str | bytes]:
    """Every file of the folder layout, the charts' bytes in artifacts/ beside the synthesis that shows them."""
    files: dict[str, str | bytes] = dict(layout(doc, charts))
    return files | {f"artifacts/{f.name}": f.data for f in charts or []}


def flat(doc: dict[str, Any], charts: list[PostFile] | None = None) -> dict[str, str | bytes]:
    """transcript.json, synthesis.md, open-questions.md, polls.csv (when it had polls) and the charts, side by
    side."""
    files: dict[str, str | bytes] = {"transcript.json": _json(doc), **artifacts(doc, charts)}
    if doc.get("polls"):
        files["polls.csv"] = pollcsv.write(doc)
    return files | {f.name: f.data for f in charts or []}
