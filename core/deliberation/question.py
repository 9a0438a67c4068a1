"""The question on the table (pure): the round it opened in, the turn that opened it with its first options (a
roster's answers, else a question turn of its own), and the one list of options stances and votes choose from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from core.deliberation import choices
from core.deliberation.choices import Option
from core.models import Discussion, Turn

OPENS = "opens"  # a turn's data: this turn opened the question; its `listed` options are the question's first


def opened_in(d: Discussion) -> int:
    """The round the current question opened in: 1, or the round a *Different topic* began."""
    return max(1, d.options.question_round)


def open_new(d: Discussion) -> None:
    """*Different topic*: the round about to run asks a new question; the options of the old one leave the table
    (the turns that listed them keep them for the record)."""
    d.options.question_round = d.round


def options(turns: Iterable[Any], d: Discussion) -> list[Option]:
    """The options on the table: those listed by turns of the current question, in the order they were listed."""
    since = opened_in(d)  # the first question is the whole discussion's until a new topic opens another
    return choices.catalogue(t for t in turns if since == 1 or t.round >= since)


def on_table(state: Any) -> list[Option]:
    """The current question's options, from a state's finished turns."""
    return options(state.done_turns(), state.discussion)


def every(state: Any) -> list[Option]:
    """Every option any question of the discussion listed: a new option's id comes after all of them (an id is
    never given twice, whichever question it was given on)."""
    return choices.catalogue(state.done_turns())


def opening(turns: Iterable[Turn], d: Discussion) -> Turn | None:
    """The turn that opened the current question with its options, if one has."""
    since = opened_in(d)
    return next((t for t in turns if (since == 1 or t.round >= since) and isinstance(t.data, dict)
                 and t.data.get(OPENS)), None)


def key(d: Discussion) -> str:
    """The key of the question turn that opens the current question (one per question)."""
    return f"{d.id}:question:r{opened_in(d)}"


def asked(state: Any) -> str:
    """The question as its opening turn framed it, else the topic it asks about."""
    found = opening(state.done_turns(), state.discussion)
    framed = str((found.data or {}).get("question", "")).strip() if found is not None else ""
    d = state.discussion
    return framed or (d.round_topic or d.topic if opened_in(d) > 1 else d.topic)


def text(asked_: str, listed: list[Option]) -> str:
    """The post that puts a question on the table: the question, then each option with its id."""
    lines = [f"**The question:** {asked_}", "", "**The options** (every stance and every vote names one):"]
    lines += [f"- {o.label} [{o.id}]" for o in listed]
    return "\n".join(lines)


def record(turns: list[Turn], d: Discussion, labels: Iterable[str], asked_: str = "") -> dict[str, Any]:
    """What a turn that frames a question keeps: its answers as options with new ids, and that it opened the
    question (only with at least two answers: one answer is no choice)."""
    every_id = choices.catalogue(turns)
    listed = choices.extend(every_id, [str(x) for x in labels])
    out: dict[str, Any] = {"question": asked_} if asked_ else {}
    if len(listed) >= 2:
        out |= {"listed": choices.records(listed), OPENS: True}
    return out

