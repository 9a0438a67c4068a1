"""What people see of decision records: the "Earlier here" opening, search results, the Revisit button (pure)."""

from __future__ import annotations

from core.models import Action, Decision, Discussion, Post
from core.showing.moments import mark

REVISIT = "mem:revisit"  # each button's id adds its place: ids are unique within a message's block
DECIDED_SHOWN = 280


def _decided(d: Decision) -> str:
    text = " ".join(d.decided.split())
    return text if len(text) <= DECIDED_SHOWN else text[: DECIDED_SHOWN - 1].rstrip() + "…"


def line(d: Decision, tz: str = "UTC") -> str:
    """One record: dated, linked, with what was decided."""
    link = f" · {d.link}" if d.link else ""
    people = (" People: " + ", ".join(f"{o} {n}" for o, n in d.people.items()) + ".") if d.people else ""
    return (f"• **{d.topic[:150]}** — {mark(d.decided_at, tz)} ({d.flow}){link}\n  Decided: {_decided(d)}"
            + (f" {d.verdict}." if d.verdict else "") + people)


def earlier_post(d: Discussion, records: list[Decision]) -> Post:
    """The opening's "Earlier here": the records the discussion starts from, each with a Revisit button."""
    where = "in this workspace" if d.options.memory == "workspace" else "here"
    text = (f"🗂️ **Earlier {where}** — decisions on related topics; the council reads them as context:\n"
            + "\n".join(line(r, d.tz) for r in records))
    actions = [Action(id=f"{REVISIT}{i}", label=f"Revisit {r.decided_at:%d %b %Y}", value=str(r.id))
               for i, r in enumerate(records)]
    return Post(kind="notice", key=f"{d.id}:earlier", text=text, actions=actions)


def decisions_text(records: list[Decision], words: str, *, everywhere: bool, tz: str = "UTC") -> str:
    scope = "this workspace" if everywhere else "the channels you are in"
    if not records:
        what = f" matching “{words.strip()}”" if words.strip() else ""
        return f"No decisions{what} in {scope} yet."
    head = (f"Decisions matching “{words.strip()}” in {scope}:" if words.strip() else
            f"Recent decisions in {scope}:")
    return "\n".join([head, *(f"{line(r, tz)} (record {r.id}: `/council revisit {r.id}`)" for r in records)])
