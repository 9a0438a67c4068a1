"""What people see of decision records: the "Earlier here" opening, search results, the Revisit button (pure)."""

from __future__ import annotations

from core.deliberation.memory import parts
from core.models import Action, Decision, Discussion, Post
from core.showing.moments import mark

REVISIT = "mem:revisit"  # each button's id adds its place: ids are unique within a message's block
DECIDED_SHOWN = 200  # of a record's prose in one line; its verdict is shown whole


def _decided(d: Decision) -> str:
    """The prose cut short, the verdict whole: the verdict is what a reader scans for."""
    prose, verdict = parts(d)
    if len(prose) > DECIDED_SHOWN:
        prose = prose[: DECIDED_SHOWN - 1].rstrip() + "…"
    return " ".join(x for x in (prose, verdict) if x)


def line(d: Decision, tz: str = "UTC") -> str:
    """One record on one line: its topic, when, what was decided (the verdict once: the people's vote is in it),
    and its thread's link where the platform gives one."""
    link = f" · {d.link}" if d.link else ""
    return f"• **{' '.join(d.topic.split())[:150]}** · {mark(d.decided_at, tz)} — {_decided(d)}{link}"


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
