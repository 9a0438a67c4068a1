"""Pure translation of `/council` text, mentions and thread replies into core commands (no I/O)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.control import commands as c
from core.control import defaults
from core.deliberation import flows
from core.deliberation.roster import owner_lines
from core.models import SeatHolder

PLATFORM = "slack"
VALUE_OPTIONS = {"rounds", "experts", "every", "next", "tz", "roles", "flow", "style", "tier", "lang", "hints",
                 "memory", "seat", "models", "poll-hours"}
FLAG_OPTIONS = {"confirm", "anonymous", "hidden", "debate", "check", "no-memory", "peer-review"}
NEGATED_FLAGS = {"no-check"}  # turns off what a channel setting turns on (COUNCIL_FACT_CHECK)
CONTROL_WORDS = {"pause", "resume", "stop", "status", "synthesize"}
CADENCES = {"daily", "weekly", "cron", "off"}
HUMAN_SUBTYPES = {None, "thread_broadcast", "file_share"}

HELP = """*Council: moderated AI deliberation in this channel*
• `/council <topic>` starts a discussion; the personas talk in its thread. Reply there to be heard.
• Options: `--rounds N` (run N rounds unattended, 1–10), `--experts N` (2–8), `--confirm` (review the roster \
first), `--debate`, `--roles "security, finance"`, `--anonymous` and `--hidden` (poll ballots), \
`--poll-hours N` (how long the final poll stays open after the discussion, 1–720; default 24), \
`--every 1d`, `--next "tomorrow 09:00"`, `--tz Europe/Berlin`, \
`--check` (a Fact-checker checks claims against web sources; `--no-check` when the channel checks by default), \
`--peer-review` (any flow: after each round's statements every persona ranks the others', authors hidden)
• `--flow NAME` picks how they deliberate (default `moderated`):{flows}
• Council: `--style parallel|sequential|debate`; council and meeting: \
`--tier light|medium|heavy`. Any flow: `--lang German` (otherwise the topic's language); open floor: \
`--hints "cost, privacy"`. Any flow: `--models "openai:gpt-5.1 anthropic:claude-sonnet-5-5"` seats its \
speakers on those models in turn (`heavy=provider:model` for a tier, `Name=provider:model` for one persona).
• `/council config owners "Dana: Billing; Eli: Mobile app"` sets the domain owners a meeting in this channel \
seats (`off`: generated for each topic); `/council config defaults flow=meeting rounds=3 tier=medium \
lang=German poll_hours=48` sets what new discussions here use unless their start says otherwise (`off` clears them).
• Memory: a new discussion opens with up to three earlier decisions of this channel on its topic; \
`--memory workspace` looks across the workspace, `--no-memory` not at all. \
`/council decisions [words]` searches the decisions of the channels you are in and links this channel's decision log; \
`/council revisit N` starts a new discussion from record N.
• `--seat @dana` gives Dana a seat of her own: she is asked in the thread when it is her turn.
• `/council` alone opens a form. `/council list` shows this channel's discussions.
• `/council pause|resume|stop|status ID` steers one (pause, resume and stop: its starter or an admin); \
`/council revoke-links ID` stops every link to its page given out so far (the same people).
• `/council usage` (admins): what this workspace spent today and this month.
• `/council schedule ID <when> [--every 1d]` runs its next round later.
• `/council digest daily|weekly|cron "0 9 * * 1"|off [#channel] [--tz Zone]` posts a digest of decisions.
• In a discussion's thread: `@Council pause|resume|stop|synthesize|status`. In any other thread, \
`@Council <topic>` or the message shortcut *Start a council on this* starts one about that thread.""".replace(
    "{flows}", "".join(f"\n   ◦ {line}" for line in flows.help_lines()))


class BadInput(ValueError):
    """A friendly sentence explaining what was wrong with what someone typed."""


@dataclass
class Who:
    user_id: str
    user_name: str = ""
    is_admin: bool = False  # Slack is_admin / is_owner
    groups: tuple[str, ...] = ()  # the user groups the person belongs to

    def fields(self) -> dict[str, Any]:
        return {"user_id": self.user_id, "user_name": self.user_name or self.user_id, "is_admin": self.is_admin,
                "groups": list(self.groups)}


def from_dm(body: dict[str, Any]) -> bool:
    """Whether an interaction came from a direct message with the app (channel D…, or Slack names it so)."""
    channel = body.get("channel") or {}
    container_channel = str((body.get("container") or {}).get("channel_id") or "")
    return (str(channel.get("id") or container_channel).startswith("D") or channel.get("name") == "directmessage"
            or body.get("channel_type") == "im")


@dataclass
class Intent:
    """What a `/council` invocation or a mention asks for."""

    kind: Literal["help", "list", "status", "usage", "modal", "command"]
    command: c.Command | None = None
    discussion_id: str = ""
    tz_explicit: bool = False
    notes: list[str] = field(default_factory=list)


# text -------------------------------------------------------------------------------------------
_LINK = re.compile(r"<([^<>|]+)(?:\|([^<>]*))?>")


def unescape(text: str) -> str:
    """Slack's wire format to plain text: `<@U1|ann>` → `@ann`, `<#C1|dev>` → `#dev`, `&amp;` → `&`."""

    def one(m: re.Match[str]) -> str:
        target, label = m.group(1), m.group(2)
        if target.startswith("@"):
            return f"@{label or target[1:]}"
        if target.startswith("#"):
            return f"#{label or target[1:]}"
        if target.startswith("!"):
            return f"@{label or target[1:].split('^')[0]}"
        return f"{label} ({target})" if label and label != target else target

    return html.unescape(_LINK.sub(one, text))


def channel_ref(token: str) -> str | None:
    """The channel id in an escaped `<#C123|name>` token."""
    m = re.fullmatch(r"<#([A-Z0-9]+)(?:\|[^>]*)?>", token)
    return m.group(1) if m else None


_TOKEN = re.compile(r'"([^"]*)"|“([^”]*)”|(\S+)')


def tokens(text: str) -> list[tuple[str, bool]]:
    """Words, with double-quoted phrases kept whole; (word, was_quoted)."""
    out = []
    for m in _TOKEN.finditer(text):
        quoted = m.group(1) if m.group(1) is not None else m.group(2)
        out.append((quoted, True) if quoted is not None else (m.group(3), False))
    return out


def _option_name(word: str) -> str | None:
    for dash in ("--", "—", "–"):  # clients turn "--" into dashes ("smart punctuation")
        if word.startswith(dash) and len(word) > len(dash):
            return word[len(dash):].lower()
    return None


def _int(name: str, raw: str, low: int, high: int) -> int:
    if not raw.strip().isdigit() or not low <= int(raw) <= high:
        raise BadInput(f"`--{name}` takes a whole number from {low} to {high}; you wrote `{raw}`.")
    return int(raw)


def _zone(raw: str) -> str:
    try:
        ZoneInfo(raw)
    except (ZoneInfoNotFoundError, ValueError):
        raise BadInput(f"I don't know the time zone `{raw}`; use a name like `Europe/Berlin` or `UTC`.") from None
    return raw


def _options(words: list[tuple[str, bool]]) -> tuple[dict[str, str], list[str]]:
    """Split `--name value` / `--flag` options from the remaining words; unknown options are errors."""
    opts: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(words):
        word, quoted = words[i]
        name = None if quoted else _option_name(word)
        if word == "--" and not quoted:
            rest += [w for w, _ in words[i + 1:]]
            break
        if name is None:
            rest.append(f'"{word}"' if quoted else word)
            i += 1
            continue
        name, eq, value = name.partition("=")
        if name in FLAG_OPTIONS | NEGATED_FLAGS:
            opts[name] = "1"
        elif name in VALUE_OPTIONS:
            if not eq:
                if i + 1 >= len(words):
                    raise BadInput(f"`--{name}` needs a value, for example `--{name} {_EXAMPLES[name]}`.")
                i += 1
                value = words[i][0]
            opts[name] = f"{opts[name]} {value}" if name == "seat" and name in opts else value
        else:
            known = ", ".join(f"`--{o}`" for o in sorted(VALUE_OPTIONS | FLAG_OPTIONS | NEGATED_FLAGS))
            raise BadInput(f"I don't know the option `{word}`. The options are {known}; `/council help` explains.")
        i += 1
    return opts, rest


_EXAMPLES = {"flow": "council", "style": "debate", "tier": "medium", "lang": "German", "hints": '"cost, privacy"',
             "rounds": "3", "experts": "4", "every": "1d", "next": '"tomorrow 09:00"', "tz": "Europe/Berlin",
             "roles": '"security, finance"', "memory": "workspace", "seat": "@dana",
             "models": '"openai:gpt-5.1 anthropic:claude-sonnet-5-5"', "poll-hours": "48"}


def _discussion_id(word: str) -> str:
    return word.strip("`'\"<>").strip()


# /council ---------------------------------------------------------------------------------------
def parse_council(text: str, *, who: Who, team_id: str, channel_id: str, default_tz: str = "UTC",
                  thread_ref: str = "", context: str = "") -> Intent:
    """Parse what follows `/council` (or an @mention) into an intent; raises BadInput with a friendly note."""
    raw = text.strip()
    if not raw:
        return Intent(kind="modal")
    words = tokens(raw)
    head = words[0][0].lower() if not words[0][1] else ""
    args = words[1:]
    if head == "help" and not args:
        return Intent(kind="help")
    if head == "list" and not args:
        return Intent(kind="list")
    if head == "usage" and not args:
        return Intent(kind="usage")
    if head in ("pause", "resume", "stop", "status", "revoke-links") and len(args) <= 1:
        if not args:
            raise BadInput(f"Which discussion? Use `/council {head} ID`; `/council list` shows the ids.")
        did = _discussion_id(args[0][0])
        if head == "status":
            return Intent(kind="status", discussion_id=did)
        cls = {"pause": c.Pause, "resume": c.Resume, "stop": c.Stop, "revoke-links": c.RevokeLinks}[head]
        return Intent(kind="command", command=cls(discussion_id=did, **who.fields()), discussion_id=did)
    if head == "schedule" and args and re.fullmatch(r"`?[0-9a-f]{4,32}`?", args[0][0]):
        return _schedule(args, who)
    if head == "digest" and args and args[0][0].lower() in CADENCES:
        return _digest(args, who, team_id, channel_id, default_tz)
    if head == "decisions":
        asked = unescape(" ".join(w for w, _ in args))
        return Intent(kind="command", command=c.SearchDecisions(words=asked, platform=PLATFORM, workspace=team_id,
                                                                **who.fields()))
    if head == "revisit" and len(args) == 1:
        if not args[0][0].strip("`#").isdigit():
            raise BadInput("Which record? `/council decisions` lists them with their numbers, e.g. "
                           "`/council revisit 12`.")
        return Intent(kind="command", command=c.Revisit(decision_id=int(args[0][0].strip("`#")), platform=PLATFORM,
                                                        workspace=team_id, channel=channel_id, **who.fields()))
    if head == "config" and args and args[0][0].lower() == "owners":
        return _owners(args[1:], who, team_id, channel_id)
    if head == "config" and args and args[0][0].lower() == "defaults":
        raw = unescape(re.sub(r"^\s*config\s+defaults\b", "", raw, flags=re.IGNORECASE)).strip()
        if not raw:
            raise BadInput("Which defaults? For example `/council config defaults flow=meeting rounds=3 tier=medium "
                           "lang=German`, or `/council config defaults off`.")
        return Intent(kind="command", command=c.SetDefaults(platform=PLATFORM, workspace=team_id,
                                                            channel=channel_id, text=raw, **who.fields()))
    return _start(words, who, team_id, channel_id, default_tz, thread_ref, context)


def _start(words: list[tuple[str, bool]], who: Who, team_id: str, channel_id: str, default_tz: str,
           thread_ref: str, context: str) -> Intent:
    opts, rest = _options(words)
    topic = " ".join(unescape(" ".join(rest)).split())
    if not topic:
        raise BadInput("Please give a topic, for example: `/council Should we move to trunk-based development?`")
    if len(topic) >= c.MAX_TOPIC_CHARS:
        raise BadInput(f"That topic is {len(topic):,} characters long; please keep it under "
                       f"{c.MAX_TOPIC_CHARS:,}. Longer background fits better in a thread: start the council "
                       "from there with the message shortcut.")
    roles = [r.strip() for r in opts.get("roles", "").split(",") if r.strip()]
    cmd = c.StartDiscussion(
        topic=topic, platform=PLATFORM, workspace=team_id, channel=channel_id, thread_ref=thread_ref,
        context=context, **flow_fields(opts),
        rounds=_int("rounds", opts["rounds"], 1, 10) if "rounds" in opts else None,
        experts=_int("experts", opts["experts"], 2, 8) if "experts" in opts else 4,
        confirm="confirm" in opts, mode="debate" if "debate" in opts else "open", roles=roles,
        tz=_zone(opts["tz"]) if "tz" in opts else default_tz,
        every=_every(opts["every"]) if "every" in opts else "", next_at=opts.get("next", "").strip(),
        anonymous="anonymous" in opts, hide_results="hidden" in opts, memory=_memory(opts),
        seats=people(opts.get("seat", "")), clarify=True, poll_hours=_poll_hours(opts),
        check=True if "check" in opts else False if "no-check" in opts else None,
        peer_review="peer-review" in opts, **who.fields(),
    )
    return Intent(kind="command", command=cmd, tz_explicit="tz" in opts)


def _poll_hours(opts: dict[str, str]) -> int | None:
    if "poll-hours" not in opts:
        return None  # the channel's default, else a day
    try:
        return defaults.poll_hours(opts["poll-hours"])
    except ValueError as exc:
        raise BadInput(f"{exc}.") from None


def _memory(opts: dict[str, str]) -> Literal["channel", "workspace", "off"]:
    if "no-memory" in opts:
        return "off"
    value = opts.get("memory", "channel").strip().lower()
    if value not in ("channel", "workspace", "off"):
        raise BadInput(f"`--memory` takes `channel` (the default) or `workspace`; you wrote `{value}`.")
    return value  # type: ignore[return-value]


_PERSON = re.compile(r"<@([UW][A-Z0-9]+)(?:\|([^>]*))?>")


def people(raw: str) -> list[SeatHolder]:
    """`--seat @dana @eli`: each mention, as Slack sends it (`<@U123|dana>`), a person who takes a seat."""
    if not raw.strip():
        return []
    found = [SeatHolder(user_id=m.group(1), name=(m.group(2) or m.group(1)).strip()[:80])
             for m in _PERSON.finditer(raw)]
    left = _PERSON.sub(" ", raw).strip(" ,;")
    if left or not found:
        raise BadInput(f"`--seat` takes people, mentioned with @ so that Slack links them (e.g. `--seat @dana`); "
                       f"`{unescape(left or raw)}` is not one.")
    return list({p.user_id: p for p in found}.values())[:8]


def flow_fields(opts: dict[str, str]) -> dict[str, Any]:
    """`--flow`, `--style`, `--tier`, `--lang` and `--hints` as StartDiscussion fields (BadInput when wrong)."""
    try:
        out: dict[str, Any] = {}  # only what was given: the channel's defaults fill in the rest
        if "flow" in opts:
            out["flow"] = flows.choice("flow", opts["flow"], c.FLOW_NAMES)
        if "style" in opts:
            out["style"] = flows.choice("style", opts["style"], flows.STYLES)
        if "tier" in opts:
            out["tier"] = flows.choice("tier", opts["tier"], flows.TIERS)
        if "lang" in opts:
            out["lang"] = flows.language(opts["lang"])
        if "models" in opts:  # read and checked against the providers by the start itself
            out["models"] = opts["models"]
    except flows.BadFlow as exc:
        raise BadInput(str(exc)) from None
    out["hints"] = [h.strip() for h in opts.get("hints", "").split(",") if h.strip()][:8]
    return out


def _every(raw: str) -> str:
    value = raw.strip().lower()
    if not re.fullmatch(r"\d+\s*[mhdw]", value) or int(value[:-1]) == 0:
        raise BadInput(f"`--every` takes a cadence like `12h`, `1d` or `1w`; you wrote `{raw}`.")
    return value.replace(" ", "")


def _schedule(args: list[tuple[str, bool]], who: Who) -> Intent:
    did = _discussion_id(args[0][0])
    opts, rest = _options(args[1:])
    when = " ".join(w.strip('"') for w in rest)
    every = _every(opts["every"]) if "every" in opts else ""
    if not when and not every:
        raise BadInput(f'When? For example `/council schedule {did} "tomorrow 09:00"` or '
                       f"`/council schedule {did} --every 1d`.")
    cmd = c.ScheduleRound(discussion_id=did, when=when, every=every,
                          tz=_zone(opts["tz"]) if "tz" in opts else "", **who.fields())
    return Intent(kind="command", command=cmd, discussion_id=did, tz_explicit="tz" in opts)


def _digest(args: list[tuple[str, bool]], who: Who, team_id: str, channel_id: str, default_tz: str) -> Intent:
    cadence = args[0][0].lower()
    opts, rest = _options(args[1:])
    cron = ""
    if cadence == "cron":
        if not rest or len(rest[0].strip('"').split()) != 5:
            raise BadInput('A cron digest needs a standard 5-field expression in quotes, for example '
                           '`/council digest cron "0 9 * * 1"`.')
        cron, rest = rest[0].strip('"'), rest[1:]
    channel = channel_id
    if rest:
        target = channel_ref(rest[0])
        if target is None or len(rest) > 1:
            raise BadInput(f"After `{cadence}` I expected a channel, and `{' '.join(rest)}` isn't one I can use. "
                           "Pick it from the list Slack suggests as you type #, so that it becomes a link.")
        channel = target
    cmd = c.SetDigest(platform=PLATFORM, workspace=team_id, channel=channel, cadence=cadence,  # type: ignore[arg-type]
                      cron=cron, tz=_zone(opts["tz"]) if "tz" in opts else default_tz, **who.fields())
    return Intent(kind="command", command=cmd, tz_explicit="tz" in opts)


def _owners(args: list[tuple[str, bool]], who: Who, team_id: str, channel_id: str) -> Intent:
    """`config owners "Dana: Billing; Eli: Mobile app"` (or `off`): the owners a meeting here seats."""
    raw = " ".join(w for w, _ in args).strip()
    if not raw:
        raise BadInput('Which owners? For example `/council config owners "Dana: Billing; Eli: Mobile app"`, '
                       "or `/council config owners off` to have them generated for each topic.")
    cmd = c.SetOwners(platform=PLATFORM, workspace=team_id, channel=channel_id,
                      owners=[_owner_line(line) for line in owner_lines(unescape(_PERSON.sub(_held, raw)))],
                      **who.fields())
    return Intent(kind="command", command=cmd)


_HELD = re.compile("\x00([UW][A-Z0-9]+)\\|([^\x00]*)\x00")


def _held(m: re.Match[str]) -> str:
    """A mention kept whole through unescaping and splitting (its label may hold `;` or `&amp;`)."""
    return f"\x00{m.group(1)}|{(m.group(2) or '').replace(';', ' ')}\x00"


def _owner_line(line: str) -> str:
    """One owner, a mentioned person kept as a person (`<@U123|dana>: Billing` → `dana <@U123>: Billing`): the
    real Dana takes that seat."""
    name, colon, domain = line.partition(":")
    m = _HELD.search(name)
    if m is None:
        return _HELD.sub(lambda x: "@" + (x.group(2) or x.group(1)), line)
    shown = _HELD.sub(" ", name).strip(" @") or (m.group(2) or m.group(1)).strip()
    return f"{shown} <@{m.group(1)}>{colon}{domain}"


def has_topic(text: str) -> bool:
    """Whether the text names a topic (or a subcommand) besides its options."""
    try:
        return bool(_options(tokens(text))[1])
    except BadInput:
        return True  # let the parser explain


# mentions and thread replies --------------------------------------------------------------------
def strip_mention(text: str, bot_user_id: str) -> str:
    """The text of an @mention without the mention of this app."""
    return re.sub(rf"<@{re.escape(bot_user_id)}(\|[^>]*)?>", " ", text).strip() if bot_user_id else text.strip()


def mentions(text: str, bot_user_id: str) -> bool:
    return bool(bot_user_id) and re.search(rf"<@{re.escape(bot_user_id)}(\|[^>]*)?>", text) is not None


def control(text: str, discussion_id: str, who: Who) -> Intent | None:
    """`@Council pause|resume|stop|synthesize|status` inside a discussion's thread."""
    words = text.strip().lower().rstrip(".!").split()
    if len(words) != 1 or words[0] not in CONTROL_WORDS:
        return None
    word = words[0]
    if word == "status":
        return Intent(kind="status", discussion_id=discussion_id)
    controls = {"pause": c.Pause, "resume": c.Resume, "stop": c.Stop, "synthesize": c.Synthesize}
    cmd = controls[word](discussion_id=discussion_id, **who.fields())
    return Intent(kind="command", command=cmd, discussion_id=discussion_id)


def is_human_reply(event: dict[str, Any]) -> bool:
    """A person's message inside a thread (not the thread's parent, not a bot, not an edit)."""
    thread_ts = event.get("thread_ts")
    return (
        event.get("subtype") in HUMAN_SUBTYPES
        and not event.get("bot_id")
        and bool(event.get("user"))
        and bool(thread_ts)
        and thread_ts != event.get("ts")
    )


def human_message(event: dict[str, Any], event_id: str, discussion_id: str, who: Who) -> c.PostHumanMessage | None:
    text = unescape(event.get("text") or "").strip()
    if not text:
        return None
    return c.PostHumanMessage(discussion_id=discussion_id, text=text, event_id=event_id or event.get("ts", ""),
                              ref=str(event.get("ts") or ""), **who.fields())


def thread_context(messages: list[dict[str, Any]], names: dict[str, str], limit: int = 6000,
                   unread: int | None = 0) -> str:
    """A thread's human messages as attributed lines, oldest first; when they are long the thread's first message
    and the newest are kept, whole. What was left out is said in a line of its own: the messages never read
    (`unread`; None when Slack did not say how many) and those dropped here."""
    lines = []
    for m in messages:
        if m.get("bot_id") or not (m.get("text") or "").strip():
            continue
        who = names.get(m.get("user", ""), m.get("user", "someone"))
        lines.append(f"{who}: {unescape(m['text']).strip()}")
    first = lines[:1] if messages and messages[0].get("thread_ts") in (None, messages[0].get("ts")) else []
    rest = lines[len(first):]
    room = limit - sum(len(x) + 1 for x in first)
    kept: list[str] = []
    for line in reversed(rest):  # the newest first, while they fit
        if len(line) + 1 > room:
            break
        kept.insert(0, line)
        room -= len(line) + 1
    dropped = len(rest) - len(kept)
    gap = left_out(unread, dropped)
    return "\n".join([*first, *([gap] if gap else []), *kept])


def left_out(unread: int | None, dropped: int) -> str:
    """The line that says how many earlier messages of the thread the context leaves out ("" for none)."""
    if unread is None:
        more = f", and {dropped} more did not fit" if dropped else ""
        return f"[Earlier messages of this thread were not read{more}: only the newest are here.]"
    n = unread + dropped
    if not n:
        return ""
    return f"[{n} earlier message{'s' if n != 1 else ''} of this thread left out: only the newest are here.]"
