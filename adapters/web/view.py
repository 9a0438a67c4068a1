"""The page's view of an export document: rounds with their turns and people's messages, polls, stances (pure)."""

from __future__ import annotations

import base64
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from markdown_it import MarkdownIt
from markupsafe import Markup

from core.models import PostFile

ICONS = {
    "classical_building": "🏛️", "scroll": "📜", "smiling_imp": "😈", "twisted_rightwards_arrows": "🔀",
    "bulb": "💡", "gear": "⚙️", "bar_chart": "📊", "shield": "🛡️", "seedling": "🌱", "compass": "🧭",
    "microscope": "🔬", "hammer": "🔨", "speech_balloon": "💬", "robot_face": "🤖", "brain": "🧠",
    "books": "📚", "rocket": "🚀", "mag": "🔍",
}
KIND_LABELS = {"opening": "Opening", "statement": "Statement", "counterpoint": "Counterpoint",
               "rebuttal": "Rebuttal", "analogy": "Cross-domain view", "answer": "Answer to people",
               "round_synthesis": "Round synthesis", "final_synthesis": "Final synthesis",
               "resume_summary": "Where we paused", "reopening": "Reopening"}


@dataclass
class Entry:
    who: str
    icon: str
    label: str
    text: str
    at: Stamp
    human: bool = False


@dataclass
class Round:
    number: int
    entries: list[Entry] = field(default_factory=list)


@dataclass
class Bar:
    option: str
    personas: int
    people: int
    percent: int


def _safe_link(url: str) -> bool:
    """Links to web pages only (a fact check's cited sources): no javascript:, data: or relative links."""
    return re.match(r"https?://[^\s\"'<>]+$", url, re.I) is not None


def _link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "noopener noreferrer")  # the page's signed address stays on the page
    return str(self.renderToken(tokens, idx, options, env))


# The posts' light Markdown (bold, lists, links) as HTML. Raw HTML in a post stays text (html=False escapes it),
# images are left out (the page fetches nothing), and a line break in a post is a line break, as in chat.
_MD = MarkdownIt("commonmark", {"html": False, "breaks": True}).disable("image")
_MD.validateLink = _safe_link  # type: ignore[method-assign]  # markdown-it's documented hook
_MD.add_render_rule("link_open", _link_open)


def markdown(text: str) -> Markup:
    """A post's Markdown rendered as HTML, everything in it escaped; http and https links only."""
    return Markup(_MD.render(text or ""))  # safe: markdown-it escapes all text, and html is off


def icon(shortcode: str) -> str:
    m = re.fullmatch(r":([a-z0-9_+-]+):", shortcode or "")
    return ICONS.get(m[1], "💬") if m else (shortcode or "💬")


@dataclass(frozen=True)
class Stamp:
    """A moment on the page: `text` for people ("Mon 2 Mar 2026, 08:00 UTC"), `iso` for <time datetime>."""

    iso: str
    text: str


def _time(iso: str) -> Stamp:
    """In UTC, the zone named: the page has one reader's clock no more than any other's."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return Stamp("", iso)
    utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    return Stamp(utc.isoformat(), f"{utc:%a} {utc.day} {utc:%b %Y, %H:%M} UTC")


def rounds(doc: dict[str, Any]) -> list[Round]:
    """Turns and people's messages in time order, each message in the round that was running when it was sent."""
    icons = {p["key"]: icon(p.get("icon", "")) for p in doc["personas"]}
    items: list[tuple[str, int, Entry]] = []
    for t in doc["turns"]:
        if not (t.get("text") or "").strip() or t["kind"] == "roster":
            continue
        label = KIND_LABELS.get(t["kind"], t["kind"].replace("_", " ").capitalize())
        if t.get("written_by"):  # a stand-in's turn is labelled by its author's name, "AI stand-in for Dana"
            label += f" · written by {t['written_by']} in person"
        items.append((t["created_at"], t["round"], Entry(t["author"], icons.get(t["author_key"], "💬"), label,
                                                         t["text"], _time(t["created_at"]))))
    for r in doc.get("peer_reviews") or []:  # the aggregate the thread showed beside the round's synthesis
        items.append((r["at"], r["round"], Entry("Peer review", "🏅", "Aggregate", r["text"], _time(r["at"]))))
    for m in doc["human_messages"]:
        items.append((m["created_at"], -1, Entry(m["author"], "🧑", "Person", m["text"], _time(m["created_at"]),
                                                 human=True)))
    out: list[Round] = []
    for _, number, entry in sorted(items, key=lambda i: i[0]):
        if number == -1:
            number = out[-1].number if out else 1
        if not out or out[-1].number != number:
            out.append(Round(number))
        out[-1].entries.append(entry)
    return out


def polls(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for p in doc["polls"]:
        current = [b for b in p["ballots"] if not b["superseded"]]
        total = max(1, len(current))
        bars = [Bar(option, sum(1 for b in current if b["choice"] == i and b["is_ai"]),
                    sum(1 for b in current if b["choice"] == i and not b["is_ai"]),
                    round(100 * sum(1 for b in current if b["choice"] == i) / total))
                for i, option in enumerate(p["options"])]
        hidden = bool(p.get("results_hidden"))
        out.append({"question": p["question"], "round": p["round"], "closed": p["closed"], "final": p["final"],
                    "bars": [] if hidden else bars, "votes": len(current), "hidden": hidden,
                    "options": p["options"]})
    return out


def stances(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Who backed which option, round by round: the choices each persona recorded (ids, as the export keeps
    them), never the names a synthesis wrote beside a proposal."""
    return [s for s in doc.get("stances") or [] if s.get("rows")]


def ranking(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A meeting's ranking as the page shows it: each option by its label and id, the owners' place (their average
    rank and firsts) beside the people's tally; None when people were not asked to rank."""
    r = (doc.get("closing") or {}).get("ranking")
    if not r:
        return None
    def avg(x: float | None) -> str:
        return f"{x:.1f}" if x is not None else "not ranked"
    rows = [{"place": i, "label": x["label"], "id": x["id"], "owners": avg(x["owners_average"]),
             "owners_firsts": x["owners_firsts"], "people": avg(x["people_average"]),
             "people_firsts": x["people_firsts"]} for i, x in enumerate(r["items"], 1)]
    return {"closed": r["closed"], "hidden": r["results_hidden"], "owners": r["owners"], "people": r["people"],
            "rows": rows}


@dataclass(frozen=True)
class Figure:
    """A chart as the page embeds it: its picture inline (the page fetches nothing), its alt text and caption."""

    src: str
    alt: str
    title: str


def figures(charts: list[PostFile]) -> list[Figure]:
    """The charts as data: URLs, which the page's policy allows as its only images (PNGs, as the charts are drawn)."""
    return [Figure("data:image/png;base64," + base64.b64encode(f.data).decode("ascii"), " ".join(f.alt.split()),
                   f.title or f.name) for f in charts if f.name.lower().endswith(".png")]


ENDED = ("done", "stopped")
STATUS_STEPS = {"awaiting_confirmation": "Waiting for the roster to be confirmed",
                "waiting": "Waiting for someone to choose what comes next", "paused": "Paused",
                "done": "Finished", "stopped": "Stopped", "blocked": "Blocked: it needs someone to step in"}


def progress(doc: dict[str, Any], live: dict[str, str] | None = None) -> dict[str, Any]:
    """Where the discussion stands: its round, its step (the latest turn's kind while it runs), who is writing now
    with their words so far (`live`, by turn key), its spend and its verdict so far."""
    d = doc["discussion"]
    icons = {p["key"]: icon(p.get("icon", "")) for p in doc["personas"]}
    turns = [t for t in doc["turns"] if t["kind"] != "roster"]
    running = [t for t in turns if t["status"] == "running"]
    status = str(d["status"])
    latest = max(turns, key=lambda t: (t["round"], t["step"], t["created_at"]), default=None)
    if status == "running" and latest is not None:
        step = KIND_LABELS.get(latest["kind"], latest["kind"].replace("_", " ").capitalize())
    else:
        step = STATUS_STEPS.get(status, status.replace("_", " ").capitalize())
    writing = [Entry(t["author"], icons.get(t["author_key"], "💬"),
                     KIND_LABELS.get(t["kind"], t["kind"].replace("_", " ").capitalize()),
                     (live or {}).get(t["key"], ""), _time(t["created_at"])) for t in running]
    closing = doc.get("closing") or {}
    # A verdict once someone has taken a position (a choice recorded as an id), or people have voted: before
    # that, "no verdict" says nothing the page does not already show.
    taken = any(r.get("choice") not in ("", "undecided", "unreadable") for r in closing.get("stances") or []) or \
        any(not b["superseded"] for p in doc.get("polls") or [] for b in p.get("ballots") or [])
    return {"round": d["round"], "step": step, "writing": writing, "spent": (doc["usage"] or {}).get("cost_usd") or 0,
            "verdict": closing.get("verdict") or "" if taken or status in ENDED else "", "ended": status in ENDED}


def page(doc: dict[str, Any], live: dict[str, str] | None = None, charts: list[PostFile] | None = None
         ) -> dict[str, Any]:
    d = doc["discussion"]
    finals = [s for s in doc["syntheses"] if s["kind"] == "final"]
    return {
        "d": d, "flow": d.get("flow") or "moderated", "status": str(d["status"]).replace("_", " "),
        "personas": [{**p, "glyph": icon(p.get("icon", ""))} for p in doc["personas"]],
        "rounds": rounds(doc), "polls": polls(doc), "stances": stances(doc), "ranking": ranking(doc),
        "syntheses": [s for s in doc["syntheses"] if s["kind"] == "round"],
        "final": finals[-1] if finals else None, "usage": doc["usage"],
        "created": _time(d["created_at"]), "progress": progress(doc, live), "figures": figures(charts or []),
    }
