"""The offline model's answers for the council meeting and the open floor (deterministic, clearly artificial)."""

from __future__ import annotations

import hashlib
import re
from typing import Any

from pydantic import BaseModel

from core.deliberation.schemas import (
    Bid,
    ExpertSpec,
    FloorPlan,
    FloorSpeech,
    MeetingOptions,
    MeetingRecommendation,
    PeerReview,
    RankedItem,
    RankedVote,
    Slot,
)
from core.ports import Prompt

CULTURE_NAMES = {
    "korean": "Ji-woo Han", "nigerian": "Chidi Okeke", "brazilian": "Marina Duarte", "german": "Lena Hoffmann",
    "indian": "Arjun Mehta", "japanese": "Haruto Sato", "egyptian": "Nour Hassan", "mexican": "Diego Ramírez",
    "swedish": "Astrid Lindqvist", "vietnamese": "Linh Tran", "turkish": "Emre Yildiz", "ghanaian": "Akosua Mensah",
}
BRIEFS = [
    ("Twenty-year veteran of the field with a regulatory background", "for", "measured"),
    ("Early-career founder who has shipped fast and broken things", "against", "blunt"),
    ("Academic researcher who studies the long-run effects", "undecided", "careful"),
    ("Operations lead who carries the pager when things go wrong", "against", "wry"),
    ("Customer advocate who hears every complaint first", "for", "warm"),
    ("Finance partner who signs off the budget", "undecided", "dry"),
    ("Designer who came from theatre production", "for", "playful"),
    ("Former union organiser turned manager", "against", "direct"),
]
OPTIONS = ["Stabilise the core first", "Ship the customer-facing fix", "Automate the pipeline", "Cut scope"]


# The words a yes/no topic opens with; what follows is the action the question asks about.
_ASKS = re.compile(r"^(?:should|shall|do|must|can|could|would)\s+(?:we|i|the team|our team|they)\s+", re.I)
OPEN_ANSWERS = ["Run a four-week reversible trial", "Gather evidence first, decide next month"]


def answers(topic: str) -> list[str]:
    """The offline model's framing of a topic's question, from its words alone: an either/or topic's two
    alternatives, a yes/no topic's action and staying as we are, else two generic first steps."""
    text = " ".join(topic.split()).rstrip("?!. ")
    head, _, rest = text.partition(": ")
    text = rest or head
    asked = _ASKS.sub("", text)
    if " or " in asked:
        first, _, second = asked.partition(" or ")
        return [f"Choose {first.strip(' ,')}", f"Choose {second.strip(' ,')}"]
    if asked != text and asked:
        return [asked[0].upper() + asked[1:], "Stay as we are"]
    return list(OPEN_ANSWERS)


def ids_offered(text: str) -> list[str]:
    """The option ids a prompt lists ("- O1: …" or "O1: …"), in order."""
    return list(dict.fromkeys(re.findall(r"^(?:- )?(O\d+): ", text, re.M)))


def _n(prompt: Prompt, salt: str = "") -> int:
    seed = f"{prompt.purpose.persona}|{prompt.purpose.round}|{len(''.join(b.text for b in prompt.shared))}|{salt}"
    return hashlib.sha256(seed.encode()).digest()[0]


def structure(prompt: Prompt, schema: type[BaseModel]) -> dict[str, Any] | None:
    """The structured answer for these flows' schemas, or None for a schema they do not use."""
    p, text = prompt.purpose, prompt.instruction
    if schema is PeerReview:  # the letters it was shown are in the prompt's purpose: ranked by a fixed hash
        order = sorted(p.others, key=lambda x: hashlib.sha256(f"{p.persona}|{p.round}|{x}".encode()).digest())
        return PeerReview(ranking=order, strongest=order[0] if order else "",
                          why="(offline) It ties its proposal to a concrete cost and a way to undo it; the others "
                              "stay general.").model_dump()
    if schema is FloorPlan:
        count = next((int(w) for w in text.split() if w.isdigit()), 4)
        cultures = list(CULTURE_NAMES)
        return FloorPlan(slots=[Slot(brief=b, name_culture=cultures[i].capitalize(), position=pos, tone=tone)
                                for i, (b, pos, tone) in enumerate(BRIEFS[:count])],
                         options=answers(p.topic)).model_dump()
    if schema is ExpertSpec:
        m = re.search(r"name culture: ([A-Za-z ]+)", text)
        name = CULTURE_NAMES.get((m.group(1) if m else "").strip().lower(), "Sam Carter")
        return ExpertSpec(name=name, title="Practitioner", expertise=["field practice", "trade-offs"],
                          thinking_style="grounded", bias="Trusts what was tried",
                          reply_tendency="Answers with a story").model_dump()
    if schema is Bid:
        return Bid(urgency=1 + _n(prompt) % 10, point=f"{p.persona} has a point on {p.topic[:40]}",
                   answers=p.others[0] if p.others else "").model_dump()
    if schema is FloorSpeech:
        later = "not your first speech" in text
        ids = ids_offered(text)  # the question's options: a speech names one by its id
        picks = [ids[0], ids[-1], "undecided"] if ids else ["for", "against", "undecided"]
        label = picks[_n(prompt, "label") % 3] if not later else picks[0]
        return FloorSpeech(
            text=(f"Building on what was said: on {p.topic}, a small, reversible step is where I land, and I "
                  "propose we converge on that." if later else
                  f"From where I stand, {p.topic} turns on who carries the cost. What would change your mind?"),
            stance=f"{label.capitalize()}: a reversible first step", label=label, builds_on_earlier=later,
            proposes_synthesis=later, open_question="" if later else "What would change your mind?",
        ).model_dump()
    if schema is RankedVote:
        offered = ids_offered(text) or OPTIONS
        shift = _n(prompt) % len(offered)
        order = offered[shift:] + offered[:shift] if _n(prompt, "agree") % 3 else offered
        items = [RankedItem(item=o, why="it unblocks the most work", domain=p.persona)
                 for o in order[:5]]
        return RankedVote(ranking=items, stance=f"{items[0].item} first", label=items[0].item).model_dump()
    if schema is MeetingOptions:
        argued = re.findall(r"<option>\s*(.+?)\s*</option>", text, re.S)
        return MeetingOptions(options=list(dict.fromkeys([*argued, *OPTIONS]))[:5]).model_dump()
    if schema is MeetingRecommendation:
        return MeetingRecommendation(
            key_arguments=["Stability first lowers every later cost", "Customers feel the fix within weeks"],
            dissents=[], next_steps=["Write down the top item's owner and date", "Review the ranking in a month"],
        ).model_dump()
    return None
