"""Inbound intents, imperative: what a human (or a timer) asks the service to do."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.models import NextAction, SeatHolder

MAX_TOPIC_CHARS = 4000


class Command(BaseModel):
    """Who asks, and where: facts the adapter supplies; the core decides from them what the person may do."""

    user_id: str = ""
    user_name: str = ""
    is_admin: bool = False  # the platform calls this user an admin of the workspace (Slack admin, Manage Server)
    groups: list[str] = Field(default_factory=list)  # the user's Slack user groups / Discord roles
    platform: str = "console"
    workspace: str = ""  # Slack team id / Discord guild id
    in_channel: str = ""  # the channel the command was typed or clicked in
    # Clicked on a private notice in a direct message with Council: its channel is the DM (and Discord sends no
    # guild), so the discussion named in the button decides where it is, and only its starter got that notice.
    in_dm: bool = False


FlowName = Literal["moderated", "council", "meeting", "open"]
FLOW_NAMES: tuple[str, ...] = ("moderated", "council", "meeting", "open")


class StartDiscussion(Command):
    topic: str
    flow: FlowName = "moderated"
    style: Literal["parallel", "sequential", "debate"] = "parallel"  # council only
    tier: Literal["", "light", "medium", "heavy"] = ""  # "" is the flow's own default (council: light)
    lang: str = ""  # speak this language instead of the topic's own
    hints: list[str] = Field(default_factory=list)  # open floor: controversy axes
    platform: str = "console"
    workspace: str = ""
    channel: str = ""
    rounds: int | None = None  # run unattended for this many rounds, then synthesize
    experts: int = Field(default=4, ge=2, le=8)
    confirm: bool = False  # show the roster with Start / Modify before running
    mode: Literal["open", "debate"] = "open"
    roles: list[str] = Field(default_factory=list)  # extra perspectives to include
    context: str = ""
    thread_ref: str = ""  # start inside an existing thread (Slack shortcut / mention)
    tz: str = "UTC"
    every: str = ""  # follow-up rounds on a cadence: "1d", "12h", "1w"
    next_at: str = ""  # the next round at a time: "tomorrow 09:00", "in 1 hour", "monday", ISO 8601
    anonymous: bool = False  # polls record who voted but do not show it
    hide_results: bool = False  # poll counts stay hidden until the poll closes
    # How long its final poll stays open; None: the channel's default, else 24; 0: it closes with the discussion.
    poll_hours: int | None = Field(default=None, ge=0, le=720)
    check: bool | None = None  # --check / --no-check: a Fact-checker checks claims; None: COUNCIL_FACT_CHECK
    peer_review: bool = False  # --peer-review: after each round's statements the personas rank them, authors hidden
    memory: Literal["channel", "workspace", "off"] = "channel"  # earlier decisions to open with (off: --no-memory)
    seats: list[SeatHolder] = Field(default_factory=list)  # people who take a seat themselves (--seat @dana)
    revisits: int = 0  # a decision record this discussion revisits (its Revisit button), 0 for none
    member_of: list[str] = Field(default_factory=list)  # channels the platform says the starter is in (memory)
    private: bool = False  # the platform says the channel is private: its record will stay in it
    # The platform says people outside this workspace read the channel (shared with another organisation or
    # workspace, or guests in it, or a Discord channel other servers follow): other channels' records stay out.
    shared: bool = False
    clarify: bool = False  # typed by a person: a one-word topic gets one clarifying question before it starts
    models: str = ""  # --models as typed: `[tier=|persona=]provider:model` entries (core.deliberation.routes)


class ConfirmRoster(Command):
    discussion_id: str


class ModifyRoster(Command):
    discussion_id: str
    persona_key: str
    name: str = ""
    title: str = ""
    remove: bool = False
    held_by: str | None = None  # the person who takes this seat ("" gives it back to the persona; None: unchanged)
    held_by_name: str = ""


class AddExpert(Command):
    discussion_id: str
    name: str
    title: str


class PostHumanMessage(Command):
    discussion_id: str
    text: str
    event_id: str = ""
    ref: str = ""  # the person's message on the platform: marked (a reaction) once a turn answers it


class CheckClaims(Command):
    """*Check claims* on a persona's post: the Fact-checker checks that post alone."""

    discussion_id: str
    turn_key: str


class CastBallot(Command):
    poll_id: int
    choice: int


class ClosePoll(Command):
    poll_id: int


class ChooseNextAction(Command):
    discussion_id: str
    action: NextAction
    topic: str = ""  # for deep dive / different topic
    after_round: int = 0  # the round whose choice was pressed (a button names it); 0: whichever waits now


class Synthesize(Command):
    """Go to the final synthesis now: mid-round (after the current step), between rounds, or from a pause."""

    discussion_id: str


class Pause(Command):
    discussion_id: str


class Resume(Command):
    discussion_id: str


class Stop(Command):
    discussion_id: str


class RevokeLinks(Command):
    """Every page link given out for this discussion stops working; posts from now on carry fresh ones."""

    discussion_id: str


class RetryTurns(Command):
    """After an LLM failure: try the failed turns again."""

    discussion_id: str


class SkipTurns(Command):
    """After an LLM failure: go on without the failed turns."""

    discussion_id: str


class ScheduleRound(Command):
    """Run the discussion's next round at `when` (and then every `every`, if given)."""

    discussion_id: str
    when: str = ""
    every: str = ""
    tz: str = ""  # the workspace's or user's zone; "" means the discussion's


class SetDigest(Command):
    """Post a synthesis digest of a channel's discussions on a schedule; cadence "off" removes it."""

    platform: str
    workspace: str = ""
    channel: str
    cadence: Literal["daily", "weekly", "cron", "off"]
    cron: str = ""  # standard 5-field expression when cadence is "cron"
    tz: str = "UTC"


class SetDefaults(Command):
    """`/council config defaults flow=meeting rounds=3 tier=medium lang=German` (or `off`): what a new discussion in
    this channel uses when its start does not say otherwise."""

    platform: str
    workspace: str = ""
    channel: str
    text: str


class SetOwners(Command):
    """`/council config owners "Name: domain; ..."`: the domain owners a meeting in this channel seats."""

    platform: str
    workspace: str = ""
    channel: str
    owners: list[str] = Field(default_factory=list)  # empty: back to owners generated for each topic


class ForgetWorkspace(Command):
    """The platform says the app left a workspace (uninstalled, its bot token revoked, removed from the guild):
    its schedules and digests go; its discussions and exports stay."""


class SearchDecisions(Command):
    """`/council decisions [words]`: this workspace's decision records the asker may see, best match first."""

    words: str = ""
    member_of: list[str] = Field(default_factory=list)  # channels the platform says the asker is in


class Revisit(Command):
    """A record's Revisit button: a new discussion in the asker's channel, seeded with that decision."""

    decision_id: int
    channel: str = ""
    tz: str = "UTC"
    private: bool = False  # the platform says the channel is private
    shared: bool = False  # the platform says people outside this workspace read it (as StartDiscussion's)


class TakeStance(Command):
    """A seated person's stance, picked from the menu under their turn."""

    discussion_id: str
    turn_key: str
    label: str


class RankPlace(Command):
    """A seated person's pick for one place of their ranking, from the menus under their turn: an option id."""

    discussion_id: str
    turn_key: str
    place: int
    option_id: str
