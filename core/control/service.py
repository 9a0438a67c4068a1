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
from core.control.steering import Steering
from core.control.voting import Voting
from core.deliberation import engine, flows
from core.deliberation.roster import clean_name
from core.deliberation.seats import with_people
from core.models import (
    Discussion,
    FlowOptions,
    SeatHolder,
    Status,
)
from core.ports import Clock
from core.running.driver import Driver
from core.showing.memory import earlier_post
from core.showing.moments import mark
from core.showing.posts import header_post, header_sig
from core.storage.store import Store

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
        self.steering = Steering(store, clock, config, driver)
        self.schedules = Schedules(store, driver, clock, self.steering)
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
            c.ChooseNextAction: self.steering.choose_next_action,
            c.Synthesize: self.steering.synthesize,
            c.Pause: self.steering.pause,
            c.Resume: self.steering.resume_discussion,
            c.Stop: self.steering.stop,
            c.RetryTurns: self.steering.retry_turns,
            c.SkipTurns: self.steering.skip_turns,
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


def list_text(discussions: list[Discussion]) -> str:
    if not discussions:
        return "No discussions yet: start one with a topic."
    return "\n".join(
        f"• `{d.id}` {d.topic[:80]} — {d.status.value}, round {d.round}, "
        f"last active {mark(d.updated_at, d.tz, relative=True)}" for d in discussions
    )


__all__ = ["Reply", "Service", "ServiceConfig", "UserError", "list_text", "validate_topic"]
