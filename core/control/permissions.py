"""Who may do what (pure): each command's action, decided from the facts the adapter supplies with it.

Adapters never decide: they report who acts, in which workspace (Slack team / Discord guild) and channel, whether
the platform calls them an admin, and their user groups or roles. A discussion belongs to one workspace and one
channel: from anywhere else it does not exist, so its topic, status and cost are never shown there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from core.control import commands as c
from core.control.replies import UserError
from core.models import Discussion, NextAction, Schedule
from core.when import cron


class Act(StrEnum):
    TAKE_PART = "take part"  # reply, vote, see status
    STEER = "choose the next round"  # another round, deep dive, different topic
    MODERATE = "moderate"  # stop, pause, resume, synthesize, roster, retry/skip, schedules, close polls
    DIGEST = "set a digest"
    ADMIN = "see usage"


STEERING = {NextAction.ANOTHER_ROUND, NextAction.DEEP_DIVE, NextAction.DIFFERENT_TOPIC}

# What each moderating command is called in a refusal ("Only Ann or an admin can stop this discussion.").
VERBS: dict[type[c.Command], str] = {
    c.ConfirmRoster: "start", c.ModifyRoster: "edit the roster of", c.AddExpert: "edit the roster of",
    c.Synthesize: "ask for the final synthesis of", c.Pause: "pause", c.Resume: "resume", c.Stop: "stop",
    c.RetryTurns: "retry turns in", c.SkipTurns: "skip turns in", c.ScheduleRound: "schedule rounds of",
    c.ClosePoll: "close a poll in", c.RevokeLinks: "revoke the page links of",
}


class Refused(UserError):
    """A private, friendly refusal that says who may do it."""


@dataclass(frozen=True)
class Policy:
    admins: frozenset[str] = field(default_factory=frozenset)  # people, user groups or roles (COUNCIL_ADMINS)
    members_steer: bool = True  # members may choose another round / deep dive / different topic
    members_configure: bool = False  # members may configure the channel they are in (meeting owners)


def is_admin(policy: Policy, cmd: c.Command) -> bool:
    """An admin of the workspace the command came from: the platform says so, or COUNCIL_ADMINS names them
    or one of their groups or roles."""
    return cmd.is_admin or cmd.user_id in policy.admins or any(g in policy.admins for g in cmd.groups)


def visible(policy: Policy, d: Discussion, cmd: c.Command) -> bool:
    """Found from here: same platform and workspace, and (for non-admins) the discussion's own channel; from a
    direct message, only by the discussion's starter (who alone is sent private notices with buttons)."""
    if cmd.in_dm:
        return (d.platform == cmd.platform and bool(cmd.user_id) and cmd.user_id == d.created_by
                and cmd.workspace in ("", d.workspace))
    if d.platform != cmd.platform or d.workspace != cmd.workspace:
        return False
    return is_admin(policy, cmd) or not d.channel or cmd.in_channel == d.channel


def act_of(cmd: c.Command) -> Act:
    if isinstance(cmd, c.ChooseNextAction):
        return Act.STEER if cmd.action in STEERING else Act.MODERATE
    if type(cmd) in VERBS:
        return Act.MODERATE
    return Act.TAKE_PART


def verb_of(cmd: c.Command) -> str:
    if isinstance(cmd, c.ChooseNextAction):
        return {NextAction.PAUSE: "pause", NextAction.SYNTHESIZE: "ask for the final synthesis of"}.get(
            cmd.action, "choose the next round of")
    return VERBS.get(type(cmd), "change")


def check(policy: Policy, d: Discussion, cmd: c.Command) -> None:
    """Raise Refused unless the command's author may do what it asks to this (visible) discussion."""
    act = act_of(cmd)
    if act == Act.TAKE_PART or (act == Act.STEER and policy.members_steer):
        return
    if (cmd.user_id and cmd.user_id == d.created_by) or is_admin(policy, cmd):
        return
    starter = d.created_by_name or "the person who started it"
    raise Refused(f"Only {starter} or a workspace admin can {verb_of(cmd)} this discussion.")


def may_clarify(policy: Policy, d: Discussion, cmd: c.Command) -> bool:
    """The answer to the clarifying question sets the topic that runs under the starter's name and budget: it is
    theirs to give, or an admin's."""
    return (bool(cmd.user_id) and cmd.user_id == d.created_by) or is_admin(policy, cmd)


def check_digest(policy: Policy, cmd: c.SetDigest, existing: Schedule | None) -> None:
    """Set a digest for the channel you are in, daily, weekly or by a cron that fires at most once an hour; for
    another channel, or more often, admins only. A digest that is on is replaced or turned off only by whoever
    set it and admins."""
    if is_admin(policy, cmd):
        return
    if existing is not None and existing.enabled and existing.created_by != cmd.user_id:
        what = "turn it off" if cmd.cadence == "off" else "replace it"
        raise Refused(f"Only the person who set this digest or a workspace admin can {what}.")
    if cmd.cadence == "off":
        return
    if cmd.channel != cmd.in_channel:
        raise Refused("You can set a digest for the channel you are in; for another channel, ask a workspace admin.")
    if cmd.cadence == "cron" and not hourly_at_most(cmd.cron):
        raise Refused("A digest may post at most one an hour (one minute in the cron's first field, e.g. "
                      "`15 * * * *`); for more often, ask a workspace admin.")


def hourly_at_most(expr: str) -> bool:
    """A cron with one minute in its minute field fires at most once in any hour (every hour holds that minute
    once; a repeated autumn hour fires once). An invalid expression passes here: setting it says what is wrong."""
    try:
        return len(cron.parse(expr).minutes) <= 1
    except cron.CronError:
        return True


def check_configure(policy: Policy, cmd: c.Command, channel: str) -> None:
    """A channel's configuration (its meetings' owners) is for admins; for the channel's own members too when
    COUNCIL_MEMBERS_CONFIGURE is on."""
    if is_admin(policy, cmd):
        return
    if not policy.members_configure:
        raise Refused("Only workspace admins can configure this channel.")
    if cmd.in_channel != channel:
        raise Refused("You can configure the channel you are in; for another channel, ask a workspace admin.")


def check_admin(policy: Policy, cmd: c.Command, what: str) -> None:
    if not is_admin(policy, cmd):
        raise Refused(f"Only workspace admins can {what}.")
