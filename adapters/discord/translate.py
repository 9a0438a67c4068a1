"""Pure translation of Discord payloads (command options, custom ids, modal fields, messages) into commands."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Literal
from zoneinfo import available_timezones

from core.control import commands as c
from core.deliberation import flows
from core.deliberation.roster import owner_lines
from core.models import Discussion, NextAction, Persona, SeatHolder
from core.showing.posts import CONFIRM_POLL, CONFIRM_STOP, CONFIRM_SYNTHESIZE, read_choice
from core.when.timeparse import TimeParseError, parse_every, zone

PREFIX = "cl"
CUSTOM_ID_MAX = 100
ADMIN_BITS = (1 << 3) | (1 << 5)  # ADMINISTRATOR, MANAGE_GUILD
CADENCES = ("daily", "weekly", "cron", "off")
EVERY_SUGGESTIONS = ("12h", "1d", "2d", "1w")
NEXT_SUGGESTIONS = ("in 1 hour", "tomorrow 09:00", "tomorrow morning", "monday 09:00")
CHOICES_MAX = 25  # Discord shows at most 25 autocomplete choices; each name and value at most 100 characters
VERBS: dict[str, type[c.Pause | c.Resume | c.Stop | c.Synthesize | c.RevokeLinks]] = {
    "council-pause": c.Pause, "council-resume": c.Resume, "council-stop": c.Stop, "council-synthesize": c.Synthesize,
    "council-revoke-links": c.RevokeLinks}

HELP = """**Council: moderated AI deliberation in this channel**
• `/council topic:<text>` starts a discussion in a thread; reply there to be heard. Options: `rounds` (run N \
rounds unattended), `experts` (2–8), `confirm` (review the roster first), `debate`, `roles` ("security, finance"), \
`anonymous` and `hidden` (poll ballots), `poll-hours` (how long the final poll stays open, 1–720; default 24), \
`every` (1d), `next` ("tomorrow 09:00"), `tz` (Europe/Berlin), `flow`, \
`style` and `tier` (council), `lang` (German), `hints` (open floor), `check` (a Fact-checker checks claims against \
web sources), `models` ("openai:gpt-5.1 anthropic:claude-sonnet-5-5": the speakers' models, dealt in turn),
`peer_review` (personas rank each other's statements, authors hidden).
• Flows:{flows}
• `/council-list` shows this channel's discussions; `/council-status`, `/council-pause`, `/council-resume`, \
`/council-stop` and `/council-synthesize` take an `id` (inside a council's thread, that one); so does \
`/council-revoke-links`, which stops every link to its page given out so far (its starter or a server admin).
• `/council-schedule id when [every] [tz]` runs the next round later; `when:off` cancels.
• `/council-digest cadence [cron] [tz]` posts a digest of this channel's decisions on a schedule.
• `/council-config owners:"Dana: Billing; Eli: Mobile app"` sets the domain owners a meeting in this channel \
seats (`owners:off` has them generated for each topic); in a forum, `/council-config tag:` picks the tag each new \
post carries.
• A new council opens with up to three earlier decisions of this channel on its topic (`memory`: `workspace` \
looks server-wide, `off` not at all); `/council-decisions words` searches them. `seat:@dana` gives Dana a seat \
of her own: she is asked in the thread when it is her turn.""".replace(
    "{flows}", "".join(f"\n  ◦ {line}" for line in flows.help_lines()))


class NotUnderstood(Exception):
    """The payload made no sense for us; the message is safe to show the person."""


@dataclass(frozen=True)
class Who:
    """Who acts and where: the facts the core decides permissions from (it never trusts us to decide)."""

    user_id: str
    user_name: str
    is_admin: bool = False  # Manage Server (or Administrator) in this guild
    guild_id: str = ""
    channel_id: str = ""  # the text channel (a thread's parent)
    roles: tuple[str, ...] = ()
    # A click in the bot's direct message with the person: Discord sends no guild, so the discussion the button
    # names decides where it is (and only its starter is sent such buttons).
    in_dm: bool = False

    def fields(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "user_name": self.user_name, "is_admin": self.is_admin and not self.in_dm,
                "platform": "discord", "workspace": self.guild_id, "in_channel": self.channel_id,
                "groups": list(self.roles), "in_dm": self.in_dm}


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
class AskConfirm:
    """A button whose action must be confirmed first: answer privately with the question and a button that
    does it."""

    action: str
    value: str
    question: str
    label: str


def confirm_action_id(action_id: str) -> str:
    """The id a confirm-first button carries instead of its own ("ctl:stop" → "ask:ctl_stop")."""
    return "ask:" + action_id.replace(":", "_")


@dataclass(frozen=True)
class RosterEdit:
    discussion_id: str
    persona: str
    name: str
    title: str
    remove: bool
    person: str = ""  # a member who takes the seat: `<@123>` or the id; "none" gives it back to the persona


@dataclass(frozen=True)
class ShowHelp:
    pass


@dataclass(frozen=True)
class ShowStatus:
    discussion_id: str


@dataclass(frozen=True)
class Dismiss:
    """Cancel on a confirm step: the private question goes away, nothing changes."""

    discussion_id: str


Intent = c.Command | AskConfirm | Dismiss | ListDiscussions | OpenModal | RosterEdit | ShowHelp | ShowStatus
CONFIRMS = {"ctl:stop": (CONFIRM_STOP, "Yes, stop"), "fail:stop": (CONFIRM_STOP, "Yes, stop"),
            "ctl:synthesize": (CONFIRM_SYNTHESIZE, "Yes, synthesize"),
            "next:synthesize": (CONFIRM_SYNTHESIZE, "Yes, synthesize"),
            "poll:close": (CONFIRM_POLL, "Yes, close it")}


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


def slash_command(name: str, opts: dict[str, Any], who: Who, where: Where, current: str = "",
                  default_tz: str = "UTC") -> Intent:
    """A slash command's typed options → an intent. `current` is the discussion of the thread it was typed in;
    `default_tz` reads times when the person names no zone (Discord does not tell us theirs)."""
    opts = {k: v for k, v in opts.items() if v is not None and v != ""}
    base = who.fields() | {"workspace": where.guild_id, "in_channel": where.channel_id}
    if name == "council":
        return start_command(opts, where, default_tz, base)
    if name == "council-list":
        return ListDiscussions(channel=where.channel_id)
    if name == "council-help":
        return ShowHelp()
    if name == "council-decisions":
        return c.SearchDecisions(words=str(opts.get("words") or ""), **base)
    if name == "council-config":
        raw = str(opts.get("owners") or "").strip()
        chosen = str(opts.get("defaults") or "").strip()
        if chosen and raw:
            raise NotUnderstood("Set the owners or the defaults, one at a time.")
        if chosen:
            return c.SetDefaults(channel=where.channel_id, text=chosen, **base)
        if not raw:
            raise NotUnderstood('Which owners? For example `owners: Dana: Billing; Eli: Mobile app`, or '
                                '`owners: off` to have them generated for each topic; or which defaults, for '
                                'example `defaults: flow=meeting rounds=3 tier=medium lang=German`.')
        return c.SetOwners(channel=where.channel_id, owners=owner_lines(raw), **base)
    if name == "council-digest":
        cadence = str(opts.get("cadence") or "")
        if cadence not in CADENCES:
            raise NotUnderstood("Choose a cadence: daily, weekly, cron or off.")
        return c.SetDigest(channel=where.channel_id,
                           cadence=cadence, cron=str(opts.get("cron") or ""),  # type: ignore[arg-type]
                           tz=zone_name(opts.get("tz"), default_tz), **base)
    if name in (*VERBS, "council-status", "council-schedule"):
        discussion_id = str(opts.get("id") or current).strip()
        if not discussion_id:
            raise NotUnderstood("Run this inside a council's thread, or give its id (`/council-list` shows them).")
        if name == "council-status":
            return ShowStatus(discussion_id)
        if name == "council-schedule":
            when, every = str(opts.get("when") or "").strip(), every_text(opts.get("every"))
            if not when and not every:
                raise NotUnderstood("When? For example `when: tomorrow 09:00`, or `every: 1d`; `when: off` cancels.")
            return c.ScheduleRound(discussion_id=discussion_id, when=when, every=every,
                                   tz=zone_name(opts.get("tz"), ""), **base)
        return VERBS[name](discussion_id=discussion_id, **base)
    raise NotUnderstood(f"I don't know the command `/{name}`.")


def start_command(opts: dict[str, Any], where: Where, default_tz: str, base: dict[str, Any]) -> c.StartDiscussion:
    topic = " ".join(str(opts.get("topic") or "").split())
    if not topic:
        raise NotUnderstood("Please give a topic, for example `/council topic: Should we move to trunk-based "
                            "development?`")
    roles = [r.strip() for r in str(opts.get("roles") or "").split(",") if r.strip()]
    fields: dict[str, Any] = {key: opts[key] for key in ("flow", "style", "tier") if opts.get(key)}
    if opts.get("lang"):
        try:
            fields["lang"] = flows.language(str(opts["lang"]))
        except flows.BadFlow as exc:
            raise NotUnderstood(str(exc).replace("`--lang`", "`lang`")) from None
    fields["hints"] = [h.strip() for h in str(opts.get("hints") or "").split(",") if h.strip()][:8]
    if opts.get("models"):  # read and checked against the providers by the start itself
        fields["models"] = str(opts["models"])
    return c.StartDiscussion(
        **fields, topic=topic, channel=where.channel_id,
        rounds=_int(opts.get("rounds")), experts=_int(opts.get("experts")) or 4, confirm=bool(opts.get("confirm")),
        mode="debate" if opts.get("debate") else "open", roles=roles[:8], tz=zone_name(opts.get("tz"), default_tz),
        every=every_text(opts.get("every")), next_at=str(opts.get("next") or "").strip(),
        anonymous=bool(opts.get("anonymous")), hide_results=bool(opts.get("hidden")), clarify=True,
        check=None if opts.get("check") is None else bool(opts["check"]),
        peer_review=bool(opts.get("peer_review")),
        memory=opts.get("memory") or "channel", seats=seat_holders(opts.get("seat")),
        poll_hours=_int(opts.get("poll_hours")), **base)


def seat_holders(raw: Any) -> list[SeatHolder]:
    """The `seat` option ("id|display name", as the command layer gives the member picked)."""
    if not raw:
        return []
    user_id, _, name = str(raw).partition("|")
    return [SeatHolder(user_id=user_id, name=(name or user_id).strip()[:80])]


def zone_name(raw: Any, default: str) -> str:
    if not raw:
        return default
    try:
        zone(str(raw))
    except TimeParseError as exc:
        raise NotUnderstood(str(exc)) from None
    return str(raw).strip()


def every_text(raw: Any) -> str:
    if not raw:
        return ""
    try:
        parse_every(str(raw))
    except TimeParseError as exc:
        raise NotUnderstood(str(exc)) from None
    return str(raw).strip().lower()


# autocomplete ---------------------------------------------------------------------------------------
@functools.cache
def _zones() -> tuple[str, ...]:
    return tuple(sorted(available_timezones()))


def zone_choices(current: str) -> list[str]:
    """Time zones matching what was typed so far: names that start with it first, then those containing it."""
    typed = current.strip().lower().replace(" ", "_")
    if not typed:
        return ["UTC", "Europe/London", "Europe/Berlin", "America/New_York", "America/Los_Angeles", "Asia/Tokyo"]
    starts = [z for z in _zones() if z.lower().startswith(typed) or z.lower().split("/")[-1].startswith(typed)]
    within = [z for z in _zones() if typed in z.lower() and z not in starts]
    return (starts + within)[:CHOICES_MAX]


def suggestion_choices(current: str, suggestions: tuple[str, ...]) -> list[str]:
    """What was typed (it may be anything the option accepts) followed by the suggestions that match it."""
    typed = current.strip()[:100]
    matching = [s for s in suggestions if typed.lower() in s.lower() and s != typed]
    return ([typed] if typed else []) + matching[: CHOICES_MAX - 1]


def discussion_choices(discussions: list[Discussion], current: str, here: str = "") -> list[tuple[str, str]]:
    """(name, id) choices for an `id` option: this thread's discussion first, then the channel's, newest first;
    typed text matches an id's start or any part of a topic."""
    typed = current.strip().lower()
    found = [d for d in discussions if d.id.startswith(typed) or typed in d.topic.lower()]
    found.sort(key=lambda d: d.id != here)
    return [(_choice_name(d), d.id) for d in found[:CHOICES_MAX]]


def _choice_name(d: Discussion) -> str:
    head = f"{d.id} · {d.status.value.replace('_', ' ')} · "
    topic = d.topic if len(head) + len(d.topic) <= 100 else d.topic[: 99 - len(head)] + "…"
    return head + topic


def component(action: str, value: str, who: Who) -> Intent:
    """A button click: the action id and value the core put on the Action."""
    base = who.fields()
    kind, _, arg = action.partition(":")
    if kind == "ask":
        wanted = next((a for a in CONFIRMS if confirm_action_id(a) == action), None)
        if wanted is None:
            raise NotUnderstood("That button is no longer supported.")
        question, label = CONFIRMS[wanted]
        return AskConfirm(action=wanted, value=value, question=question, label=label)
    if action == "confirm:cancel":
        return Dismiss(value)
    if kind in ("vote", "pick"):
        poll, _, choice = value.partition("|")
        if not (poll.isdigit() and choice.isdigit()):
            raise NotUnderstood("That vote button is damaged; please use a newer poll.")
        return c.CastBallot(poll_id=int(poll), choice=int(choice), **base)
    if action == "poll:close":
        if not value.isdigit():
            raise NotUnderstood("That button is damaged; please use a newer poll.")
        return c.ClosePoll(poll_id=int(value), **base)
    if kind == "next":
        discussion_id, chosen, after = read_choice(value)
        try:
            return c.ChooseNextAction(discussion_id=discussion_id, action=NextAction(chosen or arg),
                                      after_round=after, **base)
        except ValueError:
            raise NotUnderstood("That choice is no longer offered.") from None
    if action == "check:claims":  # the value is the post's turn key, which starts with the discussion id
        return c.CheckClaims(discussion_id=value.partition(":")[0], turn_key=value, **base)
    if kind == "sched":
        discussion_id, _, when = value.partition("|")
        return c.ScheduleRound(discussion_id=discussion_id, when=when, **base)
    if action.startswith("mem:revisit"):
        if not value.isdigit():
            raise NotUnderstood("That button is damaged; `/council-decisions` lists the records.")
        return c.Revisit(decision_id=int(value), channel=who.channel_id, **base)
    if action.startswith("seat:stance"):
        discussion_id, _, rest = value.partition("|")
        turn_key, _, label = rest.rpartition("|")
        return c.TakeStance(discussion_id=discussion_id, turn_key=turn_key, label=label, **base)
    if action.startswith("seat:rank:"):  # a place of a seated person's ranking, picked from its menu
        turn_key, _, rest = value.partition("|")
        place, _, option_id = rest.partition("|")
        if not place.isdigit() or not option_id:
            raise NotUnderstood("That menu is damaged; please write your ranking in the thread instead.")
        return c.RankPlace(discussion_id=turn_key.partition(":")[0], turn_key=turn_key, place=int(place),
                           option_id=option_id, **base)
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
    base = who.fields()
    if action == "reply":
        return c.PostHumanMessage(discussion_id=discussion_id, text=values.get("text", ""),
                                  event_id=f"discord:interaction:{interaction_id}", **base)
    if action == "modify":
        return RosterEdit(discussion_id=discussion_id, persona=values.get("persona", "").strip(),
                          name=values.get("name", "").strip(), title=values.get("title", "").strip(),
                          remove=values.get("remove", "").strip().lower() in ("yes", "y", "remove", "true"),
                          person=values.get("person", "").strip())
    raise NotUnderstood("That form is no longer supported.")


def roster_command(edit: RosterEdit, personas: list[Persona], who: Who) -> c.Command:
    """Rename or remove the named participant; a name nobody has yet adds a new expert."""
    base = who.fields()
    wanted = edit.persona.lower()
    target = next((p for p in personas if wanted in (p.name.lower(), p.key.lower())), None)
    if target is not None:
        return c.ModifyRoster(discussion_id=edit.discussion_id, persona_key=target.key, name=edit.name,
                              title=edit.title, remove=edit.remove, held_by=person_id(edit.person), **base)
    if edit.remove:
        raise NotUnderstood(f"Nobody called {edit.persona!r} is on the roster.")
    return c.AddExpert(discussion_id=edit.discussion_id, name=edit.name or edit.persona, title=edit.title, **base)


def person_id(raw: str) -> str | None:
    """The roster form's person: a mention (`<@123>`, `<@!123>`) or an id; "none" gives the seat back; "" leaves
    it as it is."""
    text = raw.strip()
    if not text:
        return None
    if text.lower() in ("none", "nobody", "-"):
        return ""
    m = re.fullmatch(r"<@!?(\d{5,25})>|(\d{5,25})", text)
    if m is None:
        raise NotUnderstood(f"{text!r} is not a member: mention them (@name) or give their id.")
    return m.group(1) or m.group(2)


def human_message(
    content: str, message_id: str, bot_id: str, who: Who, discussion_id: str, thread_id: str = ""
) -> c.PostHumanMessage | None:
    """A thread reply; a leading @mention of the bot is dropped. None when nothing readable is left."""
    text = re.sub(rf"<@!?{re.escape(bot_id)}>", "", content).strip() if bot_id else content.strip()
    if not text:
        return None
    return c.PostHumanMessage(discussion_id=discussion_id, text=text, event_id=f"discord:{message_id}",
                              ref=f"{thread_id}:{message_id}" if thread_id else "", **who.fields())


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None
