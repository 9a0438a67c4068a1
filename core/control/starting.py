"""Starting a discussion: the topic checked, the channel's defaults and owners applied, earlier decisions recalled,
the discussion, its seats and its first posts stored in one transaction with its follow-up schedule."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

from core.control import clarify, defaults
from core.control import commands as c
from core.control.desk import Desk
from core.control.guard import Guard
from core.control.recall import Recall
from core.control.replies import Reply, UserError
from core.control.schedules import Schedules
from core.deliberation import engine, flows, routes
from core.deliberation.quoting import NAME_CHARS
from core.deliberation.roster import clean_name, clean_title
from core.deliberation.seats import with_people
from core.models import Discussion, FlowOptions, ModelRoutes, SeatHolder, Status
from core.showing.memory import earlier_post
from core.showing.posts import header_post, header_sig


def seat_holder(s: SeatHolder) -> SeatHolder:
    """A person given a seat, their name and title cleaned of markup and invisible characters as any seat's (the
    name a platform gives is one its owner chose); their id when nothing is left of the name."""
    return s.model_copy(update={"name": clean_name(s.name) or s.user_id, "title": clean_title(s.title, NAME_CHARS)})


def validate_topic(topic: str) -> str:
    topic = " ".join(topic.split())
    if not topic:
        raise UserError("Please give a topic, for example: “Should we move to trunk-based development?”")
    if len(topic) >= c.MAX_TOPIC_CHARS:
        raise UserError(
            f"That topic is {len(topic):,} characters long; please keep it under {c.MAX_TOPIC_CHARS:,}."
        )
    return topic


@dataclass(eq=False)
class Starting(Desk):
    """StartDiscussion; the guard counts the start, recall finds what to remember, the schedules its next round."""

    new_id: Callable[[], str]
    guard: Guard
    recall: Recall
    schedules: Schedules

    def _models(self, cmd: c.StartDiscussion) -> ModelRoutes:
        """The start's models over the deployment's, each one checked against the providers configured here."""
        given, problems = routes.parse(cmd.models)
        if problems:
            raise UserError(f"--models: {'; '.join(problems)}.")
        models = routes.layered(given, self.config.models)
        problems = routes.problems(given, self.config.providers, self.config.priced) if self.config.providers else []
        if problems:
            raise UserError(f"--models: {'; '.join(problems)}.")
        return models

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
        options = FlowOptions(style=cmd.style, tier=cmd.tier, lang=cmd.lang, hints=cmd.hints, models=self._models(cmd),
                              max_speeches=self.config.open_max_speeches, memory=cmd.memory,
                              people=[seat_holder(s) for s in cmd.seats],
                              private=cmd.private, peer_review=cmd.peer_review,
                              review_seed=secrets.randbelow(2**31) if cmd.peer_review else 0,
                              poll_hours=defaults.POLL_HOURS if cmd.poll_hours is None else cmd.poll_hours,
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
