"""Every post and notice people see about a discussion's progress, built in one place (pure)."""

from __future__ import annotations

from datetime import datetime

from core.deliberation import closings, factcheck, flows, routes
from core.deliberation.engine import suggestions
from core.deliberation.flows import meeting
from core.deliberation.flows.base import Notice, State
from core.models import (
    NEXT_ACTION_LABELS,
    Action,
    Ballot,
    Discussion,
    NextAction,
    Persona,
    Phase,
    Poll,
    Post,
    Role,
    Status,
    Turn,
)
from core.showing import formats
from core.showing.moments import mark

SCHEDULE_CHOICES = [  # (action id suffix, button label, when)
    ("1h", "Next round in 1 hour", "in 1 hour"),
    ("tomorrow", "Tomorrow morning", "tomorrow morning"),
    ("monday", "Monday morning", "monday"),
]


CONFIRM_STOP = "Stop this discussion for good? Nobody can resume it afterwards."
CONFIRM_POLL = "Close it for everyone? Nobody can vote after, and the verdict is restated as final."
CONFIRM_RANKING = "Close the ranking for everyone and show the people's ranking beside the owners'?"
CONFIRM_SYNTHESIZE = "End the discussion with the final synthesis now?"


def choice_value(discussion_id: str, action: str, after_round: int) -> str:
    """A next-step button's value: the discussion, the action, and the round whose choice it is."""
    return f"{discussion_id}|{action}|{after_round}"


def read_choice(value: str) -> tuple[str, str, int]:
    """A next-step button's value read back; a button posted before buttons named their round reads round 0
    (whichever round waits now)."""
    discussion_id, action, after = [*value.split("|"), "", ""][:3]
    return discussion_id, action, int(after) if after.isdigit() else 0


def writer_name(d: Discussion, phase: Phase) -> str:
    """Who writes a flow's closing or resume summary, by role ("the Historian", "the Referee", "the Floor Lead")."""
    seats = flows.get(d.flow).seats(d)
    writer = flows.get(d.flow).writer(State(discussion=d, personas=seats, turns=[]), phase)
    return f"the {writer.name}" if writer is not None and writer.role != Role.OWNER else "the council"


def header_post(
    d: Discussion, personas: list[Persona], *, replaces: str = "", seated: bool | None = None,
    next_round: datetime | None = None, stamp: str = "",
) -> Post:
    """The thread's first message: topic, roster, flow, where the discussion stands and the controls that make
    sense now (edited in place whenever its state changes; `stamp` names each edit)."""
    ready = seated if seated is not None else not flows.get(d.flow).needs_roster(
        State(discussion=d, personas=personas, turns=[]))
    personas = routes.annotate(State(discussion=d, personas=personas, turns=[]))  # each says its model
    roster = formats.roster_text(personas) if ready else "_Assembling the council…_"
    return Post(
        kind="header",
        key=f"{d.id}:header" + (f":edit:{stamp}" if stamp else ":roster" if replaces else ""),
        replaces=replaces,
        title=d.topic,
        text=f"{roster}\n\nFlow: {flows.get(d.flow).outline}. Started by {d.created_by_name or 'someone'} · "
             f"id `{d.id}`",
        roster=personas if ready else [],
        actions=header_controls(d),
        state=header_state(d, next_round),
    )


def header_sig(d: Discussion, next_round: datetime | None = None) -> str:
    """What the header shows of the discussion's state: a new value means the header is redrawn."""
    when = f"{next_round.timestamp():.0f}" if next_round is not None else ""
    return f"{d.status.value}|{d.round}|{d.pending}|{d.auto_rounds or ''}|{when}|{d.blocked_reason}"[:255]


def header_state(d: Discussion, next_round: datetime | None = None) -> str:
    """One line for the header: status, round, spend, and what (or whom) the discussion waits for."""
    of = f" of {d.auto_rounds}" if d.auto_rounds and d.status not in (Status.DONE, Status.STOPPED) else ""
    spent = f"${d.cost_usd:.2f} spent" + (f" of ${d.budget_usd:.2f}" if d.budget_usd > 0 else "")
    where = f"Round {d.round}{of} · {spent}"
    scheduled = f"; next round {mark(next_round, d.tz, relative=True)}" if next_round is not None else ""
    if d.status == Status.AWAITING_CONFIRMATION and d.pending.startswith("clarify"):
        return f"❓ Waiting for one answer about the topic (answer it, or say go) · {spent}"
    if d.status == Status.AWAITING_CONFIRMATION:
        return f"🧾 Waiting for the roster to be confirmed · {spent}"  # the post below says how, in its words
    if d.status == Status.BLOCKED:
        return f"⚠️ Blocked: {d.blocked_reason or 'a turn failed'} · {where}. Waiting for Retry (or Stop)."
    if d.status == Status.WAITING:
        return f"⏳ Waiting for the next step to be chosen · {where}{scheduled}"
    if d.status == Status.PAUSED:
        return f"⏸️ Paused · {where}. Waiting for Resume{scheduled}."
    if d.status == Status.DONE:
        return f"✅ Finished after {d.round} round{'s' if d.round != 1 else ''} · {spent}"
    if d.status == Status.STOPPED:
        return f"⏹️ Stopped in round {d.round} · {spent}"
    doing = {"pause": f"⏸️ Pausing: {writer_name(d, Phase.RESUME_SUMMARY)} is writing a resume summary",
             "final": "📜 Writing the final synthesis"}.get(d.pending, "▶️ Running")
    return f"{doing} · {where}"


def header_controls(d: Discussion) -> list[Action]:
    """Only the buttons that make sense now and that no other post offers (Export is added by the adapters that
    offer it): while the round's choice waits in the thread, Pause and Synthesize are among its next steps, so the
    header keeps Stop alone, a next round scheduled or not (the choice stays open until that round starts)."""
    pause = Action(id="ctl:pause", label="Pause", value=d.id)
    resume = Action(id="ctl:resume", label="Resume", value=d.id, style="primary")
    synthesize = Action(id="ctl:synthesize", label="Synthesize", value=d.id, confirm=CONFIRM_SYNTHESIZE)
    stop = Action(id="ctl:stop", label="Stop", value=d.id, style="danger", confirm=CONFIRM_STOP)
    if d.status in (Status.DONE, Status.STOPPED):
        return []
    if d.status == Status.BLOCKED:
        # Resume retries a blocked discussion; a fail: button would close the header's buttons once pressed.
        return [Action(id="ctl:resume", label="Retry", value=d.id, style="primary"), stop]
    if d.status == Status.AWAITING_CONFIRMATION or d.pending == "final":
        return [stop]
    if d.status == Status.PAUSED:
        return [resume, synthesize, stop]
    if d.pending == "pause":
        return [Action(id="ctl:resume", label="Go on (cancel the pause)", value=d.id), stop]
    if d.status == Status.WAITING:  # the choice message offers the next step
        return [stop]
    return [pause, synthesize, stop]


def confirm_stop_post(d: Discussion) -> Post:
    """The private question a typed stop gets first: Stop for good, or leave it as it is."""
    return Post(
        kind="choice",
        key=f"{d.id}:confirm-stop",
        text=f"{CONFIRM_STOP} (“{d.topic}”, id `{d.id}`)",
        actions=[
            Action(id="ctl:stop", label="Yes, stop", value=d.id, style="danger"),
            Action(id="confirm:cancel", label="Cancel", value=d.id),
        ],
    )


CANCELLED = "Cancelled: nothing was changed."


def next_action_post(d: Discussion, suggestions: list[str]) -> Post:
    deep = suggestions[0] if suggestions else "the most important open question"
    lines = [
        f"**Round {d.round} is complete.** What next?",
        f"• *Deep dive*: {deep}",
        "• *Different topic*, *Another round*, *Synthesize* (final synthesis), or *Pause* (resume later)",
        "Write a message at any time: the council hears you on its next turn.",
        f"_Spent so far: ${d.cost_usd:.2f}" + (f" of its ${d.budget_usd:.2f} budget._" if d.budget_usd > 0 else "._"),
    ]
    actions = [
        Action(id=f"next:{a.value}", label=NEXT_ACTION_LABELS[a], value=choice_value(d.id, a.value, d.round),
               style="primary" if a == NextAction.ANOTHER_ROUND else "",
               confirm=CONFIRM_SYNTHESIZE if a == NextAction.SYNTHESIZE else "")
        for a in NextAction
    ]
    # "Next round: …" schedules it instead of running it now; the value carries words core.when.timeparse reads.
    actions += [
        Action(id=f"sched:{key}", label=label, value=f"{d.id}|{when}") for key, label, when in SCHEDULE_CHOICES
    ]
    return Post(kind="choice", key=f"{d.id}:r{d.round}:choice:{d.resume_count}", text="\n".join(lines),
                actions=actions)


def roster_post(d: Discussion, personas: list[Persona]) -> Post:
    personas = routes.annotate(State(discussion=d, personas=personas, turns=[]))
    return Post(
        kind="choice",
        key=f"{d.id}:confirm",
        title="Start the discussion with this council?",
        text="Start the discussion with these participants, or modify the roster first.",
        roster=personas,
        actions=[
            Action(id="roster:start", label="Start", value=d.id, style="primary"),
            Action(id="roster:modify", label="Modify roster", value=d.id),
        ],
    )


def transition_notice(kind: Notice, state: State) -> Post | None:
    """The post a transition names, built from the state it was decided on."""
    d = state.discussion
    if kind == "next_action":
        return next_action_post(d, suggestions(state))
    if kind == "roster":
        return roster_post(d, state.personas)
    if kind == "positions":  # a meeting's next round opens with the positions the last one recorded
        moderator = next((p for p in state.personas if p.role == Role.MODERATOR), None)
        return Post(kind="notice", key=f"{d.id}:r{d.round + 1}:positions", persona=moderator,
                    text=meeting.positions_post(state))
    if kind == "nothing_said":
        return Post(kind="notice", key=f"{d.id}:nothing-said:{d.resume_count}",
                    text="The discussion ends without a synthesis: nobody had said anything yet, so there was "
                         "nothing to synthesise.")
    return None


def blocked_post(d: Discussion, failed: list[Turn], stamp: str) -> Post:
    """`stamp` makes each blocking its own post: a retry resets attempts, so they cannot tell blockings apart."""
    return Post(
        kind="error",
        key=f"{d.id}:blocked:{failed[0].key if failed else 'step'}:{stamp}",
        text=f"⚠️ The discussion is blocked: {d.blocked_reason}. Retry, skip the failed turns, or stop.",
        actions=[
            Action(id="fail:retry", label="Retry", value=d.id, style="primary"),
            Action(id="fail:skip", label="Skip", value=d.id),
            Action(id="fail:stop", label="Stop", value=d.id, style="danger", confirm=CONFIRM_STOP),
        ],
    )


def cannot_post_post(d: Discussion) -> Post:
    """The private message to the starter of a discussion that cannot post in its thread."""
    return Post(
        kind="error",
        key=f"{d.id}:cannot-post",
        title=d.topic,
        text=f"⚠️ Your council “{d.topic}” (id `{d.id}`) is blocked: {d.blocked_reason}. If the channel was "
             "archived or I was removed from it, unarchive it or add me back to it, then press Retry.",
        actions=[
            Action(id="fail:retry", label="Retry", value=d.id, style="primary"),
            Action(id="fail:stop", label="Stop", value=d.id, style="danger", confirm=CONFIRM_STOP),
        ],
    )


def skipped_post(d: Discussion, turn: Turn, name: str) -> Post:
    return Post(
        kind="notice",
        key=f"{turn.key}:skipped:{turn.attempts}",
        text=f"⚠️ {name} could not respond ({turn.error or 'the model did not answer'}) and is skipped this turn.",
    )


def nudge_post(d: Discussion, turn: Turn, name: str) -> Post:
    return Post(kind="notice", key=f"{turn.key}:nudge:{turn.attempts}",
                text=f"⏰ {name} has not answered yet ({turn.error or 'no answer'}); nudging them once more.")


def turn_post(d: Discussion, turn: Turn, persona: Persona | None, text: str, kind: str, offline: bool) -> Post:
    label = flows.get(d.flow).labels.get(turn.phase, turn.phase.value.replace("_", " ").capitalize())
    if turn.data and turn.data.get("stance") and "text" in turn.data and kind == "turn":  # structured turns
        shown = turn.data.get("shown") or turn.data.get("label") or "undecided"  # the choice as people read it
        said = turn.data.get("said") or f"Stance: {shown} — {turn.data['stance']}"  # the id with its label
        text = f"{text}\n\n_{said}_"
    # A persona's words that make checkable claims may be checked against sources, one post at a time: offered in
    # the post's menu of lesser actions, never as a button of its own.
    checkable = kind == "turn" and persona is not None and factcheck.offered(turn)
    actions = [Action(id="check:claims", label="Check claims", value=turn.key, menu=True)] if checkable else []
    return Post(kind=kind, key=turn.key, text=text, persona=persona, offline=offline,  # type: ignore[arg-type]
                title=f"Round {turn.round} · {label}", actions=actions)


def poll_post(poll: Poll, ballots: list[Ballot], offline: bool, *, key: str = "", replaces: str = "") -> Post:
    view = formats.poll_view(poll, ballots)
    place = closings.RANK_POLL.search(poll.key) is not None  # a place in a meeting's ranking: a menu to pick from
    actions = [] if poll.closed else [
        Action(id=f"{'pick' if place else 'vote'}:{i}", label=option, value=f"{poll.id}|{i}")
        for i, option in enumerate(poll.options)
    ]
    if place and not poll.closed:  # closed for everyone once people are done
        actions.append(Action(id="poll:close", label="Close the ranking", value=str(poll.id), confirm=CONFIRM_RANKING))
    elif poll.final and not poll.closed:  # open after the discussion: its starter or an admin may end it sooner
        actions.append(Action(id="poll:close", label="Close the poll", value=str(poll.id), confirm=CONFIRM_POLL))
    return Post(kind="poll", key=key or poll.key, replaces=replaces, text=formats.poll_text(view), poll=view,
                actions=actions, offline=offline)


