"""One clarifying question before a discussion on a very short topic spends anything (pure): when to ask, what to
ask, and what the answer makes of the topic."""

from __future__ import annotations

import re

from core.models import Action, Discussion, Post

PENDING = "clarify"  # the discussion's pending step while it waits for the answer ("clarify:confirm": then the roster)
GO_WORDS = {"go", "start", "go ahead", "as is", "just go"}
MAX_TOPIC_CHARS = 4000


# Words that carry no subject of their own: "What about our roadmap?" names one thing and asks nothing about it.
FILLER = frozenset("""a an the our we us my your their it this that these those what about how why when where who which
should shall would could can do does did is are was be to of for on in at with and or any some thoughts ideas opinions
views talk discuss discussion question questions""".split())


def vague(topic: str) -> bool:
    """A topic with one word of substance ("Pricing?", "Rust", "What about our roadmap?") leaves the council to
    guess what to decide and for whom."""
    return sum(w.lower() not in FILLER for w in re.findall(r"\w+", topic)) <= 1


def question_post(d: Discussion) -> Post:
    return Post(
        kind="choice", key=f"{d.id}:clarify",
        text=(f"Before the council starts on “{d.topic}”: what exactly should it decide, and for whom? Reply in "
              "this thread with a sentence or two, or say `go` (or press Go) to start with the topic as it is. "
              "Nothing is spent until then."),
        actions=[Action(id="roster:start", label="Go", value=d.id, style="primary")],
    )


def answered_topic(topic: str, answer: str) -> str | None:
    """The topic with the person's answer added, or None when they said to go ahead as it is."""
    text = " ".join(answer.split())
    if text.lower().strip(" .!") in GO_WORDS:
        return None
    return f"{topic} — {text}"[:MAX_TOPIC_CHARS - 1]


def after(d: Discussion) -> str:
    """The pending step once the question is settled: the roster confirmation if it was asked for, else none."""
    return "confirm" if d.pending == f"{PENDING}:confirm" else ""
