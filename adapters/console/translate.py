"""Pure translation of what the console user types into commands."""

from __future__ import annotations

from core.control import commands as c
from core.models import NextAction

ACTIONS = list(NextAction)
USER_ID = "console-user"
# The terminal's one person, in its one channel: the facts the core's permission checks read.
FACTS = {"user_id": USER_ID, "platform": "console", "in_channel": "console"}


def parse_choice(line: str, discussion_id: str, user_name: str) -> c.Command | None:
    """A digit picks the numbered next action; '/pause', '/stop', '/synthesize' work any time."""
    text = line.strip()
    who = {**FACTS, "user_name": user_name}
    if text.isdigit() and 1 <= int(text) <= len(ACTIONS):
        return c.ChooseNextAction(discussion_id=discussion_id, action=ACTIONS[int(text) - 1], **who)
    return parse_control(text, discussion_id, user_name)


def parse_control(text: str, discussion_id: str, user_name: str) -> c.Command | None:
    who = {**FACTS, "user_name": user_name}
    word, _, rest = text.strip().partition(" ")
    if word == "/pause":
        return c.Pause(discussion_id=discussion_id, **who)
    if word == "/stop":
        return c.Stop(discussion_id=discussion_id, **who)
    if word == "/resume":
        return c.Resume(discussion_id=discussion_id, **who)
    if word in ("/retry", "/skip"):
        cls = c.RetryTurns if word == "/retry" else c.SkipTurns
        return cls(discussion_id=discussion_id, **who)
    if word == "/vote":
        poll, _, choice = rest.partition(" ")
        if poll.isdigit() and choice.isdigit():
            return c.CastBallot(poll_id=int(poll), choice=int(choice) - 1, **who)
        return None
    if word.startswith("/"):
        return None
    if not text:
        return None
    return c.PostHumanMessage(discussion_id=discussion_id, text=text, **who)
