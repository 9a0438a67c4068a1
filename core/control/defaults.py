"""A channel's defaults for new discussions (pure): `flow=meeting rounds=3 tier=medium lang=German` read into
values, each bad field named in a warning while the rest apply; and applied to a start that did not say otherwise."""

from __future__ import annotations

import shlex
from typing import Any

from core.control import commands as c
from core.control.replies import UserError
from core.deliberation import flows, routes

FIELDS = ("flow", "rounds", "style", "tier", "lang", "experts", "models", "poll_hours", "poll_reminders", "peer_review")
SWITCH = {"on": "on", "yes": "on", "true": "on", "off": "off", "no": "off", "false": "off"}
EXAMPLE = "`flow=meeting rounds=3 tier=medium lang=German`"
MAX_POLL_HOURS = 720
POLL_HOURS = 24  # a final poll stays open a day unless the channel or the start says otherwise


def parse(text: str) -> tuple[dict[str, Any], list[str]]:
    """The valid `field=value` pairs as StartDiscussion values, and a sentence for each one that is not."""
    values: dict[str, Any] = {}
    warnings: list[str] = []
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    for word in words:
        name, sep, raw = word.partition("=")
        name = name.strip().lower()
        if not sep or not raw.strip():
            warnings.append(f"`{word}` is not `field=value` (for example {EXAMPLE})")
        elif name not in FIELDS:
            warnings.append(f"`{name}` is not a default I keep (I keep {', '.join(f'`{f}`' for f in FIELDS)})")
        else:
            try:
                values[name] = _value(name, raw.strip())
            except (flows.BadFlow, ValueError) as exc:
                warnings.append(str(exc))
    return values, warnings


def _value(name: str, raw: str) -> Any:
    if name == "flow":
        return flows.choice("flow", raw, c.FLOW_NAMES)
    if name in ("style", "tier"):
        return flows.choice(name, raw, flows.STYLES if name == "style" else flows.TIERS)
    if name == "lang":
        return flows.language(raw)
    if name == "models":  # checked against the providers when a discussion starts, as --models is
        given, problems = routes.parse(raw)
        if problems:
            raise ValueError(f"`models`: {'; '.join(problems)}")
        return routes.describe(given)
    if name == "poll_hours":
        return poll_hours(raw, "`poll_hours`")
    if name == "peer_review":
        if raw.lower() not in ("on", "off", "true", "false"):  # true / false: as the value is stored
            raise ValueError(f"`peer_review` takes `on` or `off`; you wrote `{raw}`")
        return raw.lower() in ("on", "true")
    if name == "poll_reminders":  # read when a poll's reminder is due, not copied into a start
        if raw.lower() not in SWITCH:
            raise ValueError(f"`poll_reminders` is `on` or `off`; you wrote `{raw}`")
        return SWITCH[raw.lower()]
    low, high = (1, 10) if name == "rounds" else (2, 8)
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ValueError(f"`{name}` takes a whole number from {low} to {high}; you wrote `{raw}`")
    return int(raw)


def poll_hours(raw: str, named: str = "`--poll-hours`") -> int:
    """How long a final poll stays open, in whole hours from 1 to a month; a ValueError names the bad value."""
    value = raw.strip().lower().removesuffix("h").strip()
    if not value.isdigit() or not 1 <= int(value) <= MAX_POLL_HOURS:
        raise ValueError(f"{named} takes a whole number of hours from 1 to {MAX_POLL_HOURS} (a month), for "
                         f"example `48`; you wrote `{raw}`")
    return int(value)


def still_valid(saved: dict[str, Any]) -> dict[str, Any]:
    """Stored defaults read again field by field (a value of several words stays one value); one that is no
    longer valid (a flow since removed) is left out."""
    values: dict[str, Any] = {}
    for name, raw in saved.items():
        if name in FIELDS:
            try:
                values[name] = _value(name, str(raw))
            except (flows.BadFlow, ValueError):
                continue
    return values


def read(text: str) -> tuple[dict[str, Any], list[str]]:
    """What `/council config defaults …` sets (`off` clears them); a UserError when nothing in it is valid."""
    if text.strip().lower() in ("off", "none", "clear"):
        return {}, []
    values, warnings = parse(text)
    if not values:
        raise UserError("No default set: " + (_listed(warnings) + ". " if warnings else "") +
                        f"For example {EXAMPLE}, or `off` to clear them.")
    return values, warnings


def confirmation(values: dict[str, Any], warnings: list[str]) -> str:
    head = (f"New discussions in this channel start with {describe(values)} unless their start says otherwise."
            if values else "New discussions in this channel use the built-in defaults again.")
    return head + (f"\n⚠️ Not applied: {_listed(warnings)}." if warnings else "")


def _listed(warnings: list[str]) -> str:
    # a warning may end a sentence of its own (a flow's refusal does): one full stop ends the list, not two
    return "; ".join(w.rstrip(".") for w in warnings)


def describe(values: dict[str, Any]) -> str:
    shown = {k: ("on" if v else "off") if isinstance(v, bool) else v for k, v in values.items()}
    return " ".join(f"{k}={shlex.quote(str(shown[k]))}" if k == "models" else f"{k}={shown[k]}"
                    for k in FIELDS if k in shown)


def apply(cmd: c.StartDiscussion, values: dict[str, Any]) -> c.StartDiscussion:
    """The start with the channel's defaults where the person gave nothing of their own."""
    given = cmd.model_fields_set
    update = {k: v for k, v in values.items() if k in c.StartDiscussion.model_fields
              if k not in given or (k in ("rounds", "poll_hours") and getattr(cmd, k) is None)
              or (k == "experts" and cmd.experts == 4) or (k == "models" and not cmd.models)
              or (k == "peer_review" and not cmd.peer_review)}  # a start without the flag takes the channel's
    return cmd.model_copy(update=update) if update else cmd
