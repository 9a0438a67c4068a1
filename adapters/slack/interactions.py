"""Pure translation of button clicks and modal submissions into core commands (no I/O)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from adapters.slack.translate import PLATFORM, BadInput, Who, unescape
from core.control import commands as c
from core.deliberation import flows
from core.models import NextAction, Persona, Role
from core.showing.posts import read_choice

START_VIEW = "council_start"
ROSTER_VIEW = "council_roster"
SHORTCUT = "council_thread"
TOPIC_VIEW = "council_next_topic"
ACTION_PREFIXES = ("ctl:", "next:", "roster:", "vote:", "fail:", "sched:", "confirm:", "poll:", "pick", "check:",
                   "mem:", "seat:")
ROUND_CHOICES = ["steer", "1", "2", "3", "4", "5"]
OPTION_FLAGS = ("confirm", "anonymous", "hidden", "check")


@dataclass
class OpenRosterModal:
    discussion_id: str


@dataclass
class ExportFiles:
    """The header's Export button: synthesis.md and the transcript, uploaded into the thread."""

    discussion_id: str


@dataclass
class Dismiss:
    """Cancel on a confirm step: the private question goes away, nothing changes."""

    discussion_id: str


def action_command(action_id: str, value: str, who: Who) -> c.Command | OpenRosterModal | ExportFiles | Dismiss | None:
    """A button's action_id and value (as the core's effects set them) → the command it stands for."""
    family, _, name = action_id.partition(":")
    f = who.fields()
    try:
        if action_id == "ctl:export":
            return ExportFiles(value)
        if action_id == "confirm:cancel":
            return Dismiss(value)
        if family == "ctl":
            controls = {"pause": c.Pause, "resume": c.Resume, "stop": c.Stop, "synthesize": c.Synthesize}
            return controls[name](discussion_id=value, **f)
        if family == "next":
            did, action, after = read_choice(value)
            return c.ChooseNextAction(discussion_id=did, action=NextAction(action or name), after_round=after, **f)
        if family == "roster":
            return c.ConfirmRoster(discussion_id=value, **f) if name == "start" else OpenRosterModal(value)
        if family in ("vote", "pick"):  # a button, or a place in a ranking picked from one of its menus
            poll, _, choice = value.partition("|")
            return c.CastBallot(poll_id=int(poll), choice=int(choice or name), **f)
        if action_id == "check:claims":  # the value is the post's turn key, which starts with the discussion id
            return c.CheckClaims(discussion_id=value.partition(":")[0], turn_key=value, **f)
        if action_id == "poll:close":
            return c.ClosePoll(poll_id=int(value), **f)
        if family == "sched":
            did, _, when = value.partition("|")
            return c.ScheduleRound(discussion_id=did, when=when, **f)
        if action_id.startswith("mem:revisit"):
            return c.Revisit(decision_id=int(value), **f)
        if action_id.startswith("seat:stance"):
            did, turn_key, label = value.split("|", 2)
            return c.TakeStance(discussion_id=did, turn_key=turn_key, label=label, **f)
        if action_id.startswith("seat:rank:"):  # a place of a seated person's ranking, picked from its menu
            turn_key, place, option_id = value.split("|", 2)
            return c.RankPlace(discussion_id=turn_key.partition(":")[0], turn_key=turn_key, place=int(place),
                               option_id=option_id, **f)
        if family == "fail":
            return {"retry": c.RetryTurns, "skip": c.SkipTurns, "stop": c.Stop}[name](discussion_id=value, **f)
    except (KeyError, ValueError):
        return None
    return None


def opens_modal(action_id: str, value: str) -> bool:
    """Whether this click answers with a form: the listener opens it at once, before any other work."""
    intent = action_command(action_id, value, Who(""))
    return isinstance(intent, OpenRosterModal) or (isinstance(intent, c.ChooseNextAction) and intent.action in (
        NextAction.DEEP_DIVE, NextAction.DIFFERENT_TOPIC))


def _value(values: dict[str, Any], block: str) -> Any:
    item = values.get(block, {}).get("value") or {}
    if "selected_option" in item:
        return (item["selected_option"] or {}).get("value")
    if "selected_options" in item:
        return [o.get("value") for o in item["selected_options"] or []]
    if "selected_conversation" in item:
        return item["selected_conversation"]
    if "selected_user" in item:
        return item["selected_user"] or ""
    return item.get("value")


def start_from_view(values: dict[str, Any], private_metadata: str, who: Who, team_id: str,
                    default_tz: str) -> c.StartDiscussion:
    """The start modal's answers → StartDiscussion; raises BadInput naming the field in its first word."""
    meta = json.loads(private_metadata or "{}")
    topic = " ".join(unescape(_value(values, "topic") or "").split())
    if not topic:
        raise BadInput("topic: Please give a topic for the council.")
    if len(topic) >= c.MAX_TOPIC_CHARS:
        raise BadInput(f"topic: Please keep the topic under {c.MAX_TOPIC_CHARS:,} characters.")
    experts = int(_value(values, "experts") or 4)
    rounds_raw = _value(values, "rounds") or "steer"
    flags = set(_value(values, "options") or [])
    roles = [r.strip() for r in (_value(values, "roles") or "").replace("\n", ",").split(",") if r.strip()]
    fields = {"flow": _value(values, "flow") or "moderated", "style": _value(values, "style") or "parallel",
              "tier": _value(values, "tier") or "light"}
    if (_value(values, "lang") or "").strip():
        try:
            fields["lang"] = flows.language(_value(values, "lang"))
        except flows.BadFlow as exc:
            raise BadInput(f"lang: {exc}") from None
    return c.StartDiscussion(
        topic=topic, platform=PLATFORM, workspace=team_id,
        channel=meta.get("channel") or _value(values, "channel") or "",
        thread_ref=meta.get("thread_ts", ""), experts=max(2, min(8, experts)),
        rounds=None if rounds_raw == "steer" else int(rounds_raw),
        mode="debate" if _value(values, "mode") == "debate" else "open", roles=roles[:8],
        confirm="confirm" in flags, anonymous="anonymous" in flags, hide_results="hidden" in flags,
        check=True if "check" in flags else None, tz=default_tz, **fields, **who.fields(),
    )


def roster_commands(values: dict[str, Any], discussion_id: str, personas: list[Persona], who: Who) -> list[c.Command]:
    """The roster modal's answers → renames, removals and an added expert, in that order."""
    f = who.fields()
    removed = set(_value(values, "remove") or [])
    out: list[c.Command] = []
    for p in personas:
        if p.role != Role.EXPERT or p.key in removed:
            continue
        name = (_value(values, f"name:{p.key}") or "").strip()
        title = (_value(values, f"title:{p.key}") or "").strip()
        held = _value(values, f"seat:{p.key}") if f"seat:{p.key}" in values else None  # a person takes the seat
        held = None if held is None or held == p.held_by else held
        if (name and name != p.name) or (title and title != p.title) or held is not None:
            out.append(c.ModifyRoster(discussion_id=discussion_id, persona_key=p.key, name=name, title=title,
                                      held_by=held, **f))
    out += [c.ModifyRoster(discussion_id=discussion_id, persona_key=k, remove=True, **f) for k in sorted(removed)]
    new_name = (_value(values, "add_name") or "").strip()
    if new_name:
        out.append(c.AddExpert(discussion_id=discussion_id, name=new_name,
                               title=(_value(values, "add_title") or "").strip() or "Expert", **f))
    return out


def view_errors(exc: BadInput) -> dict[str, str]:
    """A BadInput from start_from_view as Slack's `response_action: errors` mapping."""
    block, _, message = str(exc).partition(": ")
    return {block: message or str(exc)}


def roster_metadata(private_metadata: str) -> tuple[str, str]:
    """(discussion id, the channel the roster form was opened from)."""
    try:
        meta = json.loads(private_metadata or "{}")
    except ValueError:
        return private_metadata, ""
    if not isinstance(meta, dict):
        return str(meta), ""
    return str(meta.get("discussion_id", "")), str(meta.get("channel", ""))


def topic_metadata(discussion_id: str, action: str, channel: str, thread_ts: str, after_round: int = 0) -> str:
    return json.dumps({"discussion_id": discussion_id, "action": action, "channel": channel, "thread_ts": thread_ts,
                       "after_round": after_round})


def next_from_view(values: dict[str, Any], private_metadata: str, who: Who) -> c.ChooseNextAction:
    """The Deep dive / Different topic form: the person's own topic (or the suggestion they kept)."""
    meta = json.loads(private_metadata or "{}")
    topic = " ".join(unescape(_value(values, "topic") or "").split())
    if not topic:
        raise BadInput("topic: Please give the topic for the next round.")
    return c.ChooseNextAction(discussion_id=meta.get("discussion_id", ""), action=NextAction(meta.get("action")),
                              topic=topic[:500], after_round=int(meta.get("after_round") or 0), **who.fields())


def start_metadata(channel: str, thread_ts: str = "") -> str:
    return json.dumps({"channel": channel, "thread_ts": thread_ts})
