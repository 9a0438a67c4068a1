"""The deliberation protocols and their registry: the engine dispatches on `discussion.flow`."""

from __future__ import annotations

from core.deliberation.flows.base import Flow
from core.deliberation.flows.council import Council
from core.deliberation.flows.meeting import Meeting
from core.deliberation.flows.moderated import Moderated
from core.deliberation.flows.open_floor import OpenFloor

FLOWS: dict[str, Flow] = {f.name: f for f in (Moderated(), Council(), Meeting(), OpenFloor())}
DEFAULT = "moderated"


def get(name: str) -> Flow:
    """The flow of that name; an unknown name (a row written by a newer version) runs as moderated."""
    return FLOWS.get(name) or FLOWS[DEFAULT]


def names() -> list[str]:
    return list(FLOWS)


SUMMARIES = {  # one line per flow for help texts, in the order people should read them
    "moderated": "a moderator, topic experts, a contrarian and a cross-domain thinker debate in rounds; you steer",
    "council": "Pragmatist, Visionary and Skeptic advise in rounds, then a referee gives the verdict",
    "meeting": "domain owners propose, challenge and rank; a moderator tallies the ranking",
    "open": "generated personas bid for the floor; the most urgent speaks, until the talk converges",
}


class BadFlow(ValueError):
    """A friendly sentence about a flow option that does not fit."""


def planned_rounds(flow: str, rounds: int | None, style: str) -> int | None:
    """How many rounds a new discussion runs unattended (None: people steer after each round)."""
    if flow == "council":
        if style == "debate" and rounds == 1:
            raise BadFlow("A debate council needs at least 2 rounds (opening, then final positions); "
                          "leave out `--rounds` for 3.")
        if rounds is not None and rounds > 5:
            raise BadFlow("A council runs at most 5 rounds.")
        return rounds or (3 if style == "debate" else 1)
    if flow == "meeting":
        if rounds is not None and not 2 <= rounds <= 5:
            raise BadFlow("A meeting runs 2 to 5 rounds (proposals, deliberation, then the final vote).")
        return rounds or 3
    return rounds


STYLES = ("parallel", "sequential", "debate")
TIERS = ("light", "medium", "heavy")


def choice(option: str, raw: str, allowed: tuple[str, ...]) -> str:
    """A typed option value checked against its choices, with a sentence naming them when it is not one."""
    value = raw.strip().lower()
    if value == "open-floor":
        value = "open"
    if value not in allowed:
        raise BadFlow(f"`--{option}` takes one of {', '.join(f'`{a}`' for a in allowed)}; you wrote `{raw}`.")
    return value


def language(raw: str) -> str:
    """A language name people typed (`German`, `pt-BR`, `français`): letters, spaces and hyphens, short."""
    value = " ".join(raw.split())
    if not value or len(value) > 30 or not all(ch.isalpha() or ch in " -" for ch in value):
        raise BadFlow(f"`--lang` takes a language name such as `German` or `pt-BR`; you wrote `{raw}`.")
    return value


def ignored_options(flow: str, *, style: str = "parallel", tier: str = "", hints: list[str] | None = None,
                    experts: int = 4, mode: str = "open", roles: list[str] | None = None) -> list[str]:
    """Options given that the chosen flow does not use, each as a sentence (a warning, not a refusal)."""
    out = []
    if style != "parallel" and flow != "council":
        out.append(f"`--style {style}` applies to the council only")
    if tier and flow not in ("council", "meeting"):
        out.append(f"`--tier {tier}` applies to the council and the meeting only")
    if hints and flow != "open":
        out.append("`--hints` applies to the open floor only")
    if experts != 4 and flow == "council":
        out.append("`--experts` does not apply to the council (its advisors are fixed, or set with `--roles`)")
    if mode == "debate" and flow in ("council", "meeting"):
        out.append("`--debate` does not apply here" + (" (use `--style debate`)" if flow == "council" else ""))
    if roles and flow == "meeting":
        out.append("`--roles` does not apply to a meeting (its owners come from `/council config owners`)")
    return out


def help_lines() -> list[str]:
    return [f"`{name}` — {line}" for name, line in SUMMARIES.items()]
