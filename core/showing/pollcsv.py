"""A discussion's polls as CSV, from its export record: one row per option, with what the poll shows people and
nothing more (an anonymous poll's counts without names; a hidden poll's nothing until it closes) (pure)."""

from __future__ import annotations

import csv
import io
from typing import Any

COLUMNS = ("poll", "round", "question", "status", "option", "people", "personas", "voters")


def rows(doc: dict[str, Any], number: int | None = None) -> list[dict[str, Any]]:
    """The rows of every poll, or of the `number`th (1-based, in the order the discussion opened them)."""
    out: list[dict[str, Any]] = []
    for n, p in enumerate(doc["polls"], start=1):
        if (number is not None and n != number) or p.get("results_hidden"):
            continue  # results hidden until the poll closes: not even a count leaves the poll
        current = [b for b in p["ballots"] if not b["superseded"]]
        status = "closed" if p["closed"] else "open"
        for i, option in enumerate(p["options"]):
            people = [b for b in current if b["choice"] == i and not b["is_ai"]]
            out.append({"poll": n, "round": p["round"], "question": p["question"], "status": status,
                        "option": option, "people": len(people),
                        "personas": sum(1 for b in current if b["choice"] == i and b["is_ai"]),
                        "voters": "" if p["anonymous"] else "; ".join(b["user"] for b in people)})
    return out


def count(doc: dict[str, Any]) -> int:
    return len(doc["polls"])


def write(doc: dict[str, Any], number: int | None = None) -> str:
    """The CSV text (a header row even when nothing may be shown yet)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows(doc, number))
    return out.getvalue()
