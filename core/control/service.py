"""handle(command): validates, records and wakes the driver; the one entry point every adapter calls."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from core.control import clarify, defaults
from core.control import commands as c
from core.control.checks import Checks
from core.control.configuring import Configuring
from core.control.desk import Desk, ServiceConfig
from core.control.guard import ASKER, Guard
from core.control.people import People
from core.control.recall import Recall
from core.control.replies import Reply, UserError
from core.control.rostering import Rostering
from core.control.schedules import Schedules
from core.control.voting import Voting
from core.deliberation import engine, flows
from core.deliberation.roster import clean_name
from core.deliberation.seats import with_people
from core.models import (
    NEXT_ACTION_LABELS,
    Discussion,
    FlowOptions,
    NextAction,
    Phase,
    SeatHolder,
    Status,
    TurnStatus,
)
from core.ports import Clock
from core.running.driver import Driver, load_state
from core.running.effects import close_polls, save_discussion
from core.showing.memory import earlier_post
from core.showing.moments import mark
from core.showing.posts import header_post, header_sig, writer_name
from core.storage.store import Store, Tx

log = logging.getLogger(__name__)


def seat_holder(s: SeatHolder) -> SeatHolder:
    """A person given a seat, their name and title cleaned of markup and invisible characters as any seat's (the
    name a platform gives is one its owner chose); their id when nothing is left of the name."""
    return s.model_copy(update={"name": clean_name(s.name) or s.user_id, "title": clean_name(s.title)})


def validate_topic(topic: str) -> str:
    topic = " ".join(topic.split())
    if not topic:
        raise UserError("Please give a topic, for example: “Should we move to trunk-based development?”")
    if len(topic) >= c.MAX_TOPIC_CHARS:
        raise UserError(
            f"That topic is {len(topic):,} characters long; please keep it under {c.MAX_TOPIC_CHARS:,}."
        )
    return topic


Handler = Callable[[Any], Awaitable[Reply]]


class Service(Desk):
    """handle(command) through one table of handlers; the guard and the schedules are collaborators it holds."""

    def __init__(
        self, store: Store, driver: Driver, clock: Clock, new_id: Callable[[], str], config: ServiceConfig
    ) -> None:
        self.store, self.driver, self.clock, self.new_id, self.config = store, driver, clock, new_id, config
        self.guard = Guard(store, clock, config)
        self.schedules = Schedules(store, driver, clock, self)
        self.checks = Checks(self)
        self.recall = Recall(store, config.policy, self.handle)
        self.configuring = Configuring(store, clock, config)
        self.voting = Voting(store, clock, config, driver, self.guard)
        self.rostering = Rostering(store, clock, config)
        self.people = People(store, clock, config, self.guard)
        # Every command's handler, by the command's class: the one way in, read by people, mypy and editors.
        self.handlers: dict[type[c.Command], Handler] = {
            c.StartDiscussion: self.start_discussion,
            c.SetOwners: self.configuring.set_owners,
            c.SetDefaults: self.configuring.set_defaults,
            c.ConfirmRoster: self.rostering.confirm_roster,
            c.ModifyRoster: self.rostering.modify_roster,
            c.AddExpert: self.rostering.add_expert,
            c.PostHumanMessage: self.people.post_human_message,
            c.CastBallot: self.voting.cast_ballot,
            c.CheckClaims: self.checks.check_claims,
            c.ClosePoll: self.voting.close_poll,
            c.ChooseNextAction: self.choose_next_action,
            c.Synthesize: self.synthesize,
            c.Pause: self.pause,
            c.Resume: self.resume_discussion,
            c.Stop: self.stop,
            c.RetryTurns: self.retry_turns,
            c.SkipTurns: self.skip_turns,
            c.ScheduleRound: self.schedules.schedule_round,
            c.SetDigest: self.schedules.set_digest,
            c.ForgetWorkspace: self.schedules.forget_workspace,
            c.TakeStance: self.people.take_stance,
            c.SearchDecisions: self.recall.search,
            c.Revisit: self.recall.revisit,
        }

    async def handle(self, cmd: c.Command) -> Reply:
        handler = self.handlers.get(type(cmd))
        if handler is None:
            raise TypeError(f"no handler for {type(cmd).__name__}")
        # Who may, and spending limits: refused before anything changes. Commands on a discussion are checked
        # by get(), inside the handler's own transaction; starts and digests here.
        await self.guard.authorize(cmd)
        asking = ASKER.set(cmd)
        try:
            reply: Reply = await handler(cmd)
        finally:
            ASKER.reset(asking)  # before kick(): the driver's task must not inherit the asker
        if reply.discussion_id and not reply.duplicate:
            self.driver.kick(reply.discussion_id)
        return reply

    # starting --------------------------------------------------------------------------------------
    async def start_discussion(self, cmd: c.StartDiscussion) -> Reply:
        topic = validate_topic(cmd.topic)
        if cmd.channel:
            async with self.store.tx() as tx:
                saved = await tx.channel_defaults(cmd.platform, cmd.workspace, cmd.channel)
            cmd = defaults.apply(cmd, defaults.still_valid(saved))
        try:
            rounds = flows.planned_rounds(cmd.flow, cmd.rounds, cmd.style)
        except flows.BadFlow as exc:
            raise UserError(str(exc)) from None
        options = FlowOptions(style=cmd.style, tier=cmd.tier, lang=cmd.lang, hints=cmd.hints,
                              max_speeches=self.config.open_max_speeches, memory=cmd.memory,
                              people=[seat_holder(s) for s in cmd.seats],
                              private=cmd.private,
                              check=self.config.fact_check if cmd.check is None else cmd.check)
        async with self.store.tx() as tx:
            if cmd.flow == "meeting":
                options.owners = await tx.channel_owners(cmd.platform, cmd.workspace, cmd.channel)
            options.recalled = await self.recall.recalled(tx, cmd)
        now = self.clock.now()
        ask = cmd.clarify and clarify.vague(topic) and not (cmd.context or cmd.every or cmd.next_at)
        d = Discussion(
            id=self.new_id(), topic=topic, status=Status.AWAITING_CONFIRMATION if ask else Status.RUNNING,
            platform=cmd.platform, workspace=cmd.workspace,
            channel=cmd.channel, thread_ref=cmd.thread_ref, created_by=cmd.user_id, created_by_name=cmd.user_name,
            round_topic=topic, auto_rounds=rounds, flow=cmd.flow, options=options, experts=cmd.experts,
            mode=cmd.mode, roles=cmd.roles,
            context=cmd.context, budget_usd=self.config.budget_usd,
            pending=(f"{clarify.PENDING}:confirm" if cmd.confirm else clarify.PENDING) if ask else
            "confirm" if cmd.confirm else "",
            tz=cmd.tz, poll_anonymous=cmd.anonymous, poll_hidden=cmd.hide_results, created_at=now,
            updated_at=now,
        )
        d.header_shown = header_sig(d)
        async with self.store.tx() as tx:
            await self.guard.may_start_now(tx, cmd)  # counted and inserted in one transaction
            await tx.add_discussion(d)
            flow = flows.get(d.flow)
            seats = flow.seats(d)
            if not flow.needs_roster(engine.State(discussion=d, personas=seats, turns=[])):
                seats = with_people(d, seats)  # else the people sit down beside the roster once it is generated
            await tx.set_personas(d.id, seats)
            await tx.enqueue(d.id, header_post(d, seats), now)
            if options.recalled:
                await tx.enqueue(d.id, earlier_post(d, options.recalled), now)
            if ask:
                await tx.enqueue(d.id, clarify.question_post(d), now)
            scheduled = await self.schedules.schedule_start(tx, cmd, d)
        if scheduled:
            self.schedules.changed()
        what = {"meeting": "a council meeting", "open": "an open floor"}.get(d.flow, "a council")
        ignored = flows.ignored_options(cmd.flow, style=cmd.style, tier=cmd.tier, hints=cmd.hints,
                                        experts=cmd.experts, mode=cmd.mode, roles=cmd.roles)
        warning = f"\n⚠️ Ignored: {'; '.join(ignored)}." if ignored else ""
        if ask:
            return Reply(text=f"“{topic}” is a short topic, so I asked one question in the thread first: answer it "
                              f"there, or say `go` (id `{d.id}`).{warning}", discussion_id=d.id)
        return Reply(text=f"Starting {what} on “{topic}” (id `{d.id}`).{scheduled}{warning}", discussion_id=d.id)


    # steering --------------------------------------------------------------------------------------
    async def choose_next_action(self, cmd: c.ChooseNextAction) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status != Status.WAITING:
                raise UserError(f"The next step was already chosen; the discussion is {d.status.value}.")
            if cmd.after_round and cmd.after_round != d.round:  # a button left on an earlier round's choice
                raise UserError(f"The next step after round {cmd.after_round} was already chosen; the discussion "
                                f"now waits after round {d.round}: use the newest choice in the thread.")
            label = await self.choose(tx, d, cmd.action, cmd.user_name, cmd.topic)
        return Reply(text=f"{label}: on it.", discussion_id=d.id)

    async def choose(self, tx: Tx, d: Discussion, action: NextAction, user_name: str, topic: str = "") -> str:
        """Record a waiting discussion's next action (inside the caller's transaction); returns its label."""
        now = self.clock.now()
        state = await load_state(tx, d.id)
        assert state is not None
        ideas = engine.suggestions(state)
        chosen_round, label = d.round, NEXT_ACTION_LABELS[action]
        d.status = Status.RUNNING
        if action == NextAction.PAUSE:
            d.pending = "pause"
        elif action == NextAction.SYNTHESIZE:
            d.pending = "final"
        else:
            d.round += 1
            if action == NextAction.DEEP_DIVE:
                d.round_topic = topic.strip() or (ideas[0] if ideas else d.round_topic)
            elif action == NextAction.DIFFERENT_TOPIC:
                d.round_topic = topic.strip() or (ideas[1] if len(ideas) > 1 else d.topic)
        # The choice first, then what it sets off (the round's polls closed, the header's "Running"), so the
        # thread reads in the order things happened.
        detail = f": {d.round_topic}" if action in (NextAction.DEEP_DIVE, NextAction.DIFFERENT_TOPIC) else ""
        end = "" if detail.rstrip().endswith((".", "?", "!")) else "."  # a topic that is a question ends itself
        await self.notice(tx, d, f"{d.id}:r{chosen_round}:chose:{d.resume_count}",
                          f"➡️ {user_name or 'Someone'} chose **{label}**{detail}{end}")
        if d.round > chosen_round:
            await close_polls(tx, d, now, before_round=d.round, offline=self.driver.llm.offline)
        await save_discussion(tx, d, now)
        return label

    async def synthesize(self, cmd: c.Synthesize) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status not in (Status.RUNNING, Status.WAITING, Status.PAUSED) or d.pending == "final":
                raise UserError(f"This discussion can't be synthesized now: it is {d.status.value}.")
            d.status, d.pending = Status.RUNNING, "final"
            await save_discussion(tx, d, self.clock.now())
            await self.notice(tx, d, f"{d.id}:synthesize:{d.round}:{d.resume_count}",
                              f"📜 {cmd.user_name or 'Someone'} asked for the final synthesis; "
                              f"{writer_name(d, Phase.FINAL_SYNTHESIS)} is writing it after the current turn.")
        return Reply(text=f"{writer_name(d, Phase.FINAL_SYNTHESIS).capitalize()} will write the final synthesis.",
                     discussion_id=d.id)

    async def pause(self, cmd: c.Pause) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.pending == "pause" or d.status == Status.PAUSED:
                raise UserError("This discussion is already paused (or pausing).")
            if d.pending == "final":
                raise UserError("The final synthesis is being written; the discussion ends after it.")
            if d.status not in (Status.RUNNING, Status.WAITING):
                raise UserError(f"Only a running or waiting discussion can be paused; this one is "
                                f"{d.status.value.replace('_', ' ')}.")
            d.status, d.pending = Status.RUNNING, "pause"
            await save_discussion(tx, d, self.clock.now())
            await self.notice(tx, d, f"{d.id}:pausing:{d.resume_count}",
                              f"⏸️ {cmd.user_name or 'Someone'} paused the discussion; "
                              f"{writer_name(d, Phase.RESUME_SUMMARY)} is writing a resume summary.")
        return Reply(text="Pausing after the current turn.", discussion_id=d.id)

    async def resume_discussion(self, cmd: c.Resume) -> Reply:
        return await self.resume(cmd, then_round=False)

    async def resume(self, cmd: c.Resume, *, then_round: bool) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status == Status.BLOCKED:
                return await self._retry(tx, d, cmd)
            if d.status == Status.RUNNING and d.pending == "pause":
                return await self._cancel_pause(tx, d, cmd)
            if d.status != Status.PAUSED:
                raise UserError(self._not_paused(d))
            await self.reopen(tx, d, cmd.user_name, then_round=then_round)
        return Reply(text="Resuming.", discussion_id=d.id)

    @staticmethod
    def _not_paused(d: Discussion) -> str:
        if d.status in (Status.DONE, Status.STOPPED):
            return f"This discussion has already finished ({d.status.value}); start a new one to go on."
        if d.status == Status.RUNNING and d.pending.startswith("resume"):
            return "This discussion is already resuming."
        return f"Only a paused discussion can be resumed; this one is {d.status.value.replace('_', ' ')}."

    async def _cancel_pause(self, tx: Tx, d: Discussion, cmd: c.Command) -> Reply:
        """Resume pressed before the pause took effect: the pause is called off and the round goes on.
        The resume count moves on so a later pause writes its own summary instead of finding this one."""
        d.pending = ""
        d.resume_count += 1
        await save_discussion(tx, d, self.clock.now())
        await self.notice(tx, d, f"{d.id}:unpaused:{d.resume_count}",
                          f"▶️ {cmd.user_name or 'Someone'} called off the pause; the discussion goes on.")
        return Reply(text="The pause is called off; the discussion goes on.", discussion_id=d.id)

    async def reopen(self, tx: Tx, d: Discussion, user_name: str, *, then_round: bool) -> None:
        """Resume a paused discussion (inside the caller's transaction), straight into its next round if asked."""
        d.resume_count += 1
        d.status, d.pending = Status.RUNNING, "resume_round" if then_round else "resume"
        state = await load_state(tx, d.id)
        assert state is not None
        if then_round and engine.round_complete(state):
            d.round += 1
        await save_discussion(tx, d, self.clock.now())
        await self.notice(tx, d, f"{d.id}:resumed:{d.resume_count}",
                          f"▶️ {user_name or 'Someone'} resumed the discussion.")

    async def stop(self, cmd: c.Stop) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status in (Status.DONE, Status.STOPPED):
                raise UserError(f"This discussion is already {d.status.value}.")
            d.status, d.pending = Status.STOPPED, ""
            now = self.clock.now()
            # The stop, then what it closes, then the header's "Stopped": nothing lands after the ending.
            await self.notice(tx, d, f"{d.id}:stopped", f"⏹️ {cmd.user_name or 'Someone'} stopped the discussion.")
            await close_polls(tx, d, now, before_round=d.round + 1, offline=self.driver.llm.offline)
            await save_discussion(tx, d, now)
            # Stop is final: turns being written are set aside now, so none of them is posted after the notice.
            unfinished = [t.key for t in await tx.turns(d.id) if t.status in (TurnStatus.PLANNED, TurnStatus.RUNNING)]
            await tx.set_turn_status(unfinished, TurnStatus.SKIPPED)
        self.driver.halt(d.id)  # and the model calls for them stop here (another process's end at their record)
        return Reply(text="Stopped.", discussion_id=d.id)

    async def retry_turns(self, cmd: c.RetryTurns) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status != Status.BLOCKED:
                raise UserError("Nothing to retry: the discussion is not blocked.")
            return await self._retry(tx, d, cmd)

    async def _retry(self, tx: Tx, d: Discussion, cmd: c.Command) -> Reply:
        failed = [t.key for t in await tx.turns(d.id) if t.status == TurnStatus.FAILED]
        await tx.set_turn_status(failed, TurnStatus.PLANNED, reset=True)
        await tx.revive_posts(d.id)  # posts refused or given up on are tried again now
        d.status, d.blocked_reason = Status.RUNNING, ""
        await save_discussion(tx, d, self.clock.now())
        await self.notice(tx, d, f"{d.id}:retry:{self.clock.now().timestamp()}",
                          f"🔁 {cmd.user_name or 'Someone'} asked to retry.")
        return Reply(text="Retrying.", discussion_id=d.id)

    async def skip_turns(self, cmd: c.SkipTurns) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status != Status.BLOCKED:
                raise UserError("Nothing to skip: the discussion is not blocked.")
            turns = [t for t in await tx.turns(d.id) if t.status == TurnStatus.FAILED]
            if any(t.phase in engine.essential(d) for t in turns):
                raise UserError("That turn can't be skipped: the discussion needs it. Retry or stop instead.")
            await tx.set_turn_status([t.key for t in turns], TurnStatus.SKIPPED)
            for t in turns:
                if t.reply_to is not None:
                    await tx.mark_answered(t.reply_to)
            d.status, d.blocked_reason = Status.RUNNING, ""
            await save_discussion(tx, d, self.clock.now())
        return Reply(text="Skipping the failed turns.", discussion_id=d.id)


def list_text(discussions: list[Discussion]) -> str:
    if not discussions:
        return "No discussions yet: start one with a topic."
    return "\n".join(
        f"• `{d.id}` {d.topic[:80]} — {d.status.value}, round {d.round}, "
        f"last active {mark(d.updated_at, d.tz, relative=True)}" for d in discussions
    )


__all__ = ["Reply", "Service", "ServiceConfig", "UserError", "list_text", "validate_topic"]
