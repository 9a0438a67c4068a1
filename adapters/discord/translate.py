"""Pure translation of Discord payloads (command options, custom ids, modal fields, messages) into commands."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from core import commands as c
from core.models import NextAction, Persona

PREFIX = "cl"
CUSTOM_ID_MAX = 100
# Discord: chat-input names are lowercase, 1-32 characters; one command cannot have both options and subcommands,
# so /council takes the topic and the other verbs are sibling commands.
STRING, INTEGER, BOOLEAN = 3, 4, 5
ADMIN_BITS = (1 << 3) | (1 << 5)  # ADMINISTRATOR, MANAGE_GUILD
_ID_OPTION = {"name": "id", "description": "Discussion id (defaults to the thread you are in)", "type": STRING,
              "required": False, "max_length": 40}
COMMANDS: list[dict[str, Any]] = [
    {"name": "council", "type": 1, "description": "Start a moderated AI council on a topic",
     "contexts": [0], "integration_types": [0],
     "options": [
         {"name": "topic", "description": "What the council should deliberate", "type": STRING, "required": True,
          "min_length": 1, "max_length": 4000},
         {"name": "rounds", "description": "Run this many rounds unattended, then synthesize", "type": INTEGER,
          "required": False, "min_value": 1, "max_value": 10},
         {"name": "experts", "description": "How many topic experts (2-8)", "type": INTEGER, "required": False,
          "min_value": 2, "max_value": 8},
         {"name": "confirm", "description": "Show the roster with Start / Modify before it begins", "type": BOOLEAN,
          "required": False},
     ]},
    {"name": "council-list", "type": 1, "description": "List this channel's councils", "contexts": [0],
     "integration_types": [0]},
    *[{"name": f"council-{verb}", "type": 1, "description": f"{verb.capitalize()} a council", "contexts": [0],
       "integration_types": [0], "options": [_ID_OPTION]} for verb in ("pause", "resume", "stop")],
    {"name": "council-digest", "type": 1, "description": "Post a digest of this channel's councils on a schedule",
     "contexts": [0], "integration_types": [0],
     "options": [
         {"name": "cadence", "description": "How often", "type": STRING, "required": True,
          "choices": [{"name": n, "value": n} for n in ("daily", "weekly", "cron", "off")]},
         {"name": "cron", "description": "5-field cron expression when cadence is cron", "type": STRING,
          "required": False, "max_length": 100},
         {"name": "tz", "description": "Time zone, e.g. Europe/Berlin", "type": STRING, "required": False,
          "max_length": 64},
     ]},
]


class NotUnderstood(Exception):
    """The payload made no sense for us; the message is safe to show the person."""


@dataclass(frozen=True)
class Who:
    user_id: str
    user_name: str
    is_admin: bool = False


@dataclass(frozen=True)
class Where:
    guild_id: str
    channel_id: str  # the text channel (a thread's parent)
    thread_id: str = ""


@dataclass(frozen=True)
class ListDiscussions:
    channel: str


@dataclass(frozen=True)
class OpenModal:
    kind: Literal["reply", "modify"]
    discussion_id: str


@dataclass(frozen=True)
class RosterEdit:
    discussion_id: str
    persona: str
    name: str
    title: str
    remove: bool


Intent = c.Command | ListDiscussions | OpenModal | RosterEdit


def is_admin(permissions: str | int | None) -> bool:
    try:
        return bool(int(permissions or 0) & ADMIN_BITS)
    except ValueError:
        return False


def custom_id(action_id: str, value: str) -> str:
    cid = f"{PREFIX}|{action_id}|{value}"
    if len(cid) > CUSTOM_ID_MAX:
        raise ValueError(f"custom_id longer than {CUSTOM_ID_MAX} characters: {cid!r}")
    return cid


CUSTOM_ID = re.compile(rf"{PREFIX}\|(?P<action>[a-z_]+(?::[a-z0-9_]+)?)\|(?P<value>.*)")


def parse_custom_id(value: str) -> tuple[str, str] | None:
    m = CUSTOM_ID.fullmatch(value)
    return (m["action"], m["value"]) if m else None


def options(data: dict[str, Any]) -> dict[str, Any]:
    """Command options by name (a chat-input command's `data.options`)."""
    return {o["name"]: o.get("value") for o in data.get("options") or [] if "value" in o}


def slash_command(data: dict[str, Any], who: Who, where: Where, current: str = "") -> Intent:
    """`current` is the discussion of the thread the command was typed in, if any."""
    name, opts = data.get("name", ""), options(data)
    base = {"user_id": who.user_id, "user_name": who.user_name, "is_admin": who.is_admin}
    if name == "council":
        return c.StartDiscussion(topic=str(opts.get("topic") or ""), platform="discord", workspace=where.guild_id,
                                 channel=where.channel_id, rounds=_int(opts.get("rounds")),
                                 experts=_int(opts.get("experts")) or 4, confirm=bool(opts.get("confirm")), **base)
    if name == "council-list":
        return ListDiscussions(channel=where.channel_id)
    if name == "council-digest":
        cadence = str(opts.get("cadence") or "")
        if cadence not in ("daily", "weekly", "cron", "off"):
            raise NotUnderstood("Choose a cadence: daily, weekly, cron or off.")
        return c.SetDigest(platform="discord", workspace=where.guild_id, channel=where.channel_id,
                           cadence=cadence, cron=str(opts.get("cron") or ""),  # type: ignore[arg-type]
                           tz=str(opts.get("tz") or "UTC"), **base)
    verbs: dict[str, type[c.Pause | c.Resume | c.Stop]] = {
        "council-pause": c.Pause, "council-resume": c.Resume, "council-stop": c.Stop}
    if name in verbs:
        discussion_id = str(opts.get("id") or current).strip()
        if not discussion_id:
            raise NotUnderstood("Run this inside a council's thread, or give its id (`/council-list` shows them).")
        return verbs[name](discussion_id=discussion_id, **base)
    raise NotUnderstood(f"I don't know the command `/{name}`.")


def component(action: str, value: str, who: Who) -> Intent:
    """A button click: the action id and value the core put on the Action."""
    base = {"user_id": who.user_id, "user_name": who.user_name, "is_admin": who.is_admin}
    kind, _, arg = action.partition(":")
    if kind == "vote":
        poll, _, choice = value.partition("|")
        if not (poll.isdigit() and choice.isdigit()):
            raise NotUnderstood("That vote button is damaged; please use a newer poll.")
        return c.CastBallot(poll_id=int(poll), choice=int(choice), **base)
    if kind == "next":
        discussion_id, _, chosen = value.partition("|")
        try:
            return c.ChooseNextAction(discussion_id=discussion_id, action=NextAction(chosen or arg), **base)
        except ValueError:
            raise NotUnderstood("That choice is no longer offered.") from None
    if kind == "sched":
        discussion_id, _, when = value.partition("|")
        return c.ScheduleRound(discussion_id=discussion_id, when=when, **base)
    if kind in ("reply", "modify") or action == "roster:modify":
        return OpenModal(kind="reply" if kind == "reply" else "modify", discussion_id=value)
    simple: dict[str, type[c.Command]] = {
        "ctl:pause": c.Pause, "ctl:resume": c.Resume, "ctl:stop": c.Stop, "ctl:synthesize": c.Synthesize,
        "roster:start": c.ConfirmRoster,
        "fail:retry": c.RetryTurns, "fail:skip": c.SkipTurns, "fail:stop": c.Stop,
    }
    if action in simple:
        return simple[action](discussion_id=value, **base)  # type: ignore[call-arg]
    raise NotUnderstood("That button is no longer supported.")


def modal_values(data: dict[str, Any]) -> dict[str, str]:
    """Text inputs of a modal submission (`data.components`, rows of inputs) by custom id."""
    values: dict[str, str] = {}
    for row in data.get("components") or []:
        for item in row.get("components") or [row.get("component") or {}]:
            if "custom_id" in item:
                values[item["custom_id"]] = str(item.get("value") or "")
    return values


def modal(data: dict[str, Any], who: Who, interaction_id: str) -> Intent:
    parsed = parse_custom_id(str(data.get("custom_id") or ""))
    if parsed is None:
        raise NotUnderstood("That form is no longer supported.")
    action, discussion_id = parsed
    values = modal_values(data)
    base = {"user_id": who.user_id, "user_name": who.user_name, "is_admin": who.is_admin}
    if action == "reply":
        return c.PostHumanMessage(discussion_id=discussion_id, text=values.get("text", ""),
                                  event_id=f"discord:interaction:{interaction_id}", **base)
    if action == "modify":
        return RosterEdit(discussion_id=discussion_id, persona=values.get("persona", "").strip(),
                          name=values.get("name", "").strip(), title=values.get("title", "").strip(),
                          remove=values.get("remove", "").strip().lower() in ("yes", "y", "remove", "true"))
    raise NotUnderstood("That form is no longer supported.")


def roster_command(edit: RosterEdit, personas: list[Persona], who: Who) -> c.Command:
    """Rename or remove the named participant; a name nobody has yet adds a new expert."""
    base = {"user_id": who.user_id, "user_name": who.user_name, "is_admin": who.is_admin}
    wanted = edit.persona.lower()
    target = next((p for p in personas if wanted in (p.name.lower(), p.key.lower())), None)
    if target is not None:
        return c.ModifyRoster(discussion_id=edit.discussion_id, persona_key=target.key, name=edit.name,
                              title=edit.title, remove=edit.remove, **base)
    if edit.remove:
        raise NotUnderstood(f"Nobody called {edit.persona!r} is on the roster.")
    return c.AddExpert(discussion_id=edit.discussion_id, name=edit.name or edit.persona, title=edit.title, **base)


def human_message(
    content: str, message_id: str, bot_id: str, who: Who, discussion_id: str
) -> c.PostHumanMessage | None:
    """A thread reply; a leading @mention of the bot is dropped. None when nothing readable is left."""
    text = re.sub(rf"<@!?{re.escape(bot_id)}>", "", content).strip() if bot_id else content.strip()
    if not text:
        return None
    return c.PostHumanMessage(discussion_id=discussion_id, text=text, event_id=f"discord:{message_id}",
                              user_id=who.user_id, user_name=who.user_name, is_admin=who.is_admin)


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
