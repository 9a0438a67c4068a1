"""Pure translation of what the console user types into commands, menu picks and answers."""

from __future__ import annotations

from dataclasses import dataclass

from core.control import commands as c
from core.models import Action, Discussion

USER_ID = "console-user"
# The terminal's one person, in its one channel: the facts the core's permission checks read.
FACTS = {"user_id": USER_ID, "platform": "console", "in_channel": "console"}

HELP = """Commands (type them at any time):
  /help             this list
  /vote POLL N      vote for option N of poll POLL (each poll's panel shows its number)
  /close POLL       close poll POLL for everyone: its verdict is then final
  /pause            pause after the current turn; continue later with --resume
  /resume           go on after a pause (or retry a blocked discussion)
  /synthesize       ask for the final synthesis after the current turn
  /stop             end the discussion for good
  /retry, /skip     when a turn failed: try it again, or go on without it
At a numbered prompt, a number picks that choice. Anything else you type is a message to the council.
Ctrl-C stops at the next safe point, saves and exports (resume later); Ctrl-C twice quits at once."""


@dataclass(frozen=True)
class Answer:
    """Typed text the terminal answers itself (help, a mistake), with no command for the council."""

    text: str
    mistake: bool = False


def choices(actions: list[Action]) -> list[Action]:
    """The actions a terminal offers as numbered choices, in the order shown: it runs no scheduler, so the
    "Next round in 1 hour"-style buttons (sched:*) are left out."""
    return [a for a in actions if not a.id.startswith("sched:")]


def votable(d: Discussion, ranking: bool) -> bool:
    """Whether a final poll is the terminal person's to vote on before the program ends: a meeting's ranking
    always, a council's question too (people answer it beside the advisors), and another flow's when the person
    chose the end; after unattended rounds of another flow it only shows the council's positions."""
    return ranking or d.flow == "council" or d.auto_rounds is None


def pick(text: str, menu: list[Action]) -> Action | Answer | None:
    """A number typed at a numbered prompt: the choice it names, a refusal when no choice has that number, or
    None when the text is not a number at all (then it is read as anything else typed)."""
    if not text.strip().isdigit():
        return None
    n = int(text)
    if 1 <= n <= len(menu):
        return menu[n - 1]
    return Answer(f"There is no choice {n}: type a number from 1 to {len(menu)}.", mistake=True)


def parse_control(text: str, discussion_id: str, user_name: str) -> c.Command | Answer | None:
    """A /command, or a message to the council; None for an empty line."""
    who = {**FACTS, "user_name": user_name}
    word, _, rest = text.strip().partition(" ")
    if word in ("/help", "/?"):
        return Answer(HELP)
    if word == "/pause":
        return c.Pause(discussion_id=discussion_id, **who)
    if word == "/stop":
        return c.Stop(discussion_id=discussion_id, **who)
    if word == "/resume":
        return c.Resume(discussion_id=discussion_id, **who)
    if word == "/synthesize":
        return c.Synthesize(discussion_id=discussion_id, **who)
    if word in ("/retry", "/skip"):
        cls = c.RetryTurns if word == "/retry" else c.SkipTurns
        return cls(discussion_id=discussion_id, **who)
    if word == "/vote":
        poll, _, choice = rest.strip().partition(" ")
        if poll.isdigit() and choice.strip().isdigit():
            return c.CastBallot(poll_id=int(poll), choice=int(choice) - 1, **who)
        return Answer("To vote, type /vote POLL N: the poll's number (its panel's title) and your option's "
                      "number, e.g. /vote 1 2.", mistake=True)
    if word == "/close":
        if rest.strip().isdigit():
            return c.ClosePoll(poll_id=int(rest.strip()), **who)
        return Answer("To close a poll, type /close POLL: the poll's number (its panel's title), e.g. /close 2.",
                      mistake=True)
    if word.startswith("/"):
        return Answer(f"There is no command {word}. /help lists the commands; to say something to the council, "
                      "write it without the leading /.", mistake=True)
    if not text.strip():
        return None
    if text.strip().isdigit():
        return Answer("No choice is open right now: a number answers a numbered prompt. To tell the council a "
                      "number, write it in a sentence.", mistake=True)
    return c.PostHumanMessage(discussion_id=discussion_id, text=text.strip(), **who)
