"""Seats held by people (pure): who holds which seat, what their turn asks in plain words, and how their reply
becomes the turn (its stance, a meeting ranking)."""

from __future__ import annotations

import re
from typing import Any

from core.deliberation import choices, question, stances
from core.deliberation.choices import Option
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.holders import PERSON_ICON
from core.deliberation.quoting import unescape
from core.deliberation.roster import slug
from core.deliberation.schemas import RankedItem, RankedVote
from core.models import Discussion, Persona, Phase, Role

# Turns a seat's holder does not write themselves: bookkeeping (the stand-in bids for them on an open floor) and
# answers to people between rounds.
NOT_PERSONAL = frozenset({Phase.ROSTER, Phase.QUESTION, Phase.PERSONA, Phase.BID, Phase.ANSWER})
SEAT_ROLE = {"moderated": Role.EXPERT, "council": Role.ADVISOR, "meeting": Role.OWNER, "open": Role.EXPERT}
DEFAULT_STANCES = ["for", "against", "undecided"]
_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s*(?P<item>.+?)\s*$")
# An option as the prompt quotes it (quoting.quote), after its id when it has one ("O2: <option>…</option>").
OPTION = re.compile(r"\s*(?:(O\d+): )?<option>(.*?)</option>", re.S)
IN_PERSON = "Takes part in person"  # the title of a seat given without one


def holder_of(state: State, plan: TurnPlan) -> Persona | None:
    """The persona of a turn its seat's person writes (None: the persona speaks)."""
    if plan.phase in NOT_PERSONAL:
        return None
    p = state.persona(plan.persona_key)
    return p if p is not None and p.held_by else None


def people_seats(d: Discussion, taken: list[Persona]) -> list[Persona]:
    """The seats `--seat` gives people, in the flow's speaking role, keyed apart from the seats already taken."""
    out: list[Persona] = []
    keys = {p.key for p in taken}
    held = {p.held_by for p in taken if p.held_by}
    for person in d.options.people:
        if person.user_id in held:
            continue
        key = slug(person.name) if slug(person.name) != "expert" else f"person_{len(out) + 1}"
        while key in keys:
            key += "_p"
        keys.add(key)
        out.append(Persona(key=key, name=person.name[:80], role=SEAT_ROLE.get(d.flow, Role.EXPERT),
                           title=person.title or IN_PERSON, icon=PERSON_ICON, held_by=person.user_id,
                           expertise=["their own experience"]))
    return out


def with_people(d: Discussion, personas: list[Persona]) -> list[Persona]:
    return [*personas, *people_seats(d, personas)]


def stance_choices(state: State) -> list[Option]:
    """What a person may pick as their stance (an id and how it reads): the options on the table, else for /
    against / undecided."""
    listed = question.on_table(state)
    undecided = Option(choices.UNDECIDED, choices.UNDECIDED)
    if not listed:
        return [Option(x, x) for x in DEFAULT_STANCES]
    return [*(Option(o.id, choices.show(o.id, {o.id: o.label})) for o in listed[-4:]), undecided]


def ask_text(task: str, persona: Persona, label: str, wait: str, *, ranked: bool = False) -> str:
    """The turn's task as the person reads it: what the persona would be asked, without the prompt's quoting (the
    options it quotes are listed one a line); `wait` is how long it waits, in words ("30 minutes")."""
    listed = OPTION.sub(lambda m: f"\n- {m.group(1) + ': ' if m.group(1) else ''}{m.group(2).strip()}", task)
    plain = unescape(listed).replace("&quot;", '"')
    seat = f", as {persona.title}" if persona.title and persona.title != IN_PERSON else ""
    how = ("Pick each place from the menus below, or write your ranking here: one item per line, or separated by "
           "semicolons." if ranked else "Your next message here is your turn. You may end it with `Stance: <label> — "
           "<one line>`, or pick your stance below.")
    return (f"**{persona.name}, it is your turn** ({label}{seat}). {plain}\n\n{how} If you don't answer within "
            f"{wait}, an AI stand-in speaks for you this time; write here any time to take your seat back.")


def ranking(text: str) -> RankedVote:
    """A person's ranked vote from their reply: numbered or bulleted lines, most important first (a reply without
    a list counts as one item)."""
    items = []
    for line in text.splitlines():
        m = _ITEM.match(line)
        if m and not line.lower().lstrip("*_ ").startswith("stance"):
            item, _, why = m.group("item").partition(" — ")  # markup is cut from each part: "**X** — why" is X
            items.append(RankedItem(item=item.strip("*_ ")[:200], why=why.strip("*_ ")[:200]))
    if not items:  # one line: `Billing fixes; Mobile app; Platform`
        parts = [x.strip(" .*_") for x in re.split(r";|\s>\s", stances_free(text)) if x.strip(" .*_")]
        items = [RankedItem(item=x[:200], why="") for x in parts] or [RankedItem(item="undecided", why="")]
    return RankedVote(ranking=items[:5], stance=items[0].item, label=items[0].item)


def picked_ranking(ids: list[str], writer: Persona) -> dict[str, Any]:
    """A ranking picked from the menus, place by place: its items are the option ids themselves."""
    vote = RankedVote(ranking=[RankedItem(item=x, why="") for x in ids], stance=ids[0], label=ids[0])
    return vote.model_dump() | {"written_by": writer.held_by, "written_by_name": writer.name}


def stances_free(text: str) -> str:
    """The text without a trailing stance line."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if lines and stances.parse(lines[-1]) is not None:
        lines = lines[:-1]
    return " ".join(" ".join(lines).split())


def answer_data(phase: Phase, text: str, chosen: str, writer: Persona, stance_turn: bool) -> dict[str, Any]:
    """The structured record of a person's turn: their words, their stance (from their last line, else the menu,
    else undecided), and who wrote it."""
    by = {"written_by": writer.held_by, "written_by_name": writer.name}
    if phase == Phase.RANKED_VOTE:
        return ranking(text).model_dump() | by
    parsed = stances.parse(text) or {}
    label = (parsed.get("label") or chosen or "undecided")[:40]  # as written: a `new:` option keeps its case
    stance = parsed.get("stance") or " ".join(text.split())[:200]
    data: dict[str, Any] = {"text": text.strip(), **by}
    if stance_turn or phase == Phase.SPEECH:
        data |= {"stance": stance, "label": label, "builds_on_earlier": True, "proposes_synthesis": False,
                 "open_question": ""}
    return data
