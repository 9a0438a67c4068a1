"""handle(command): the one entry point every adapter calls. The guard checks the command, the handler of its
family (starting, steering, voting, rostering, people, configuring, schedules, checks, recall) records it, and
the driver is woken."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

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
from core.control.sharing import Sharing
from core.control.starting import Starting, validate_topic
from core.control.steering import Steering
from core.control.voting import Voting
from core.models import Discussion
from core.ports import Clock
from core.running.driver import Driver
from core.showing.decision_log import LogLinks
from core.showing.moments import mark
from core.storage.store import Store

Handler = Callable[[Any], Awaitable[Reply]]


class Service:
    """handle(command) through one table of handlers, each a method of the family of commands it belongs to;
    the guard checks every command before its handler runs."""

    def __init__(
        self, store: Store, driver: Driver, clock: Clock, new_id: Callable[[], str], config: ServiceConfig
    ) -> None:
        self.store, self.driver, self.clock, self.new_id, self.config = store, driver, clock, new_id, config
        self.guard = Guard(store, clock, config)
        self.steering = Steering(store, clock, config, driver)
        self.schedules = Schedules(store, driver, clock, self.steering)
        self.checks = Checks(Desk(store, clock, config))
        self.recall = Recall(store, config.policy, self.handle, LogLinks(driver.config.pages), clock)
        self.configuring = Configuring(store, clock, config)
        self.voting = Voting(store, clock, config, driver, self.guard)
        self.rostering = Rostering(store, clock, config)
        self.people = People(store, clock, config, self.guard)
        self.sharing = Sharing(store, clock, config)
        self.starting = Starting(store, clock, config, new_id, self.guard, self.recall, self.schedules)
        # Every command's handler, by the command's class and grouped by family: the one way in, read by people,
        # mypy and editors.
        self.handlers: dict[type[c.Command], Handler] = {
            c.StartDiscussion: self.starting.start_discussion,
            c.ChooseNextAction: self.steering.choose_next_action,
            c.Synthesize: self.steering.synthesize,
            c.Pause: self.steering.pause,
            c.Resume: self.steering.resume_discussion,
            c.Stop: self.steering.stop,
            c.RevokeLinks: self.sharing.revoke_links,
            c.RetryTurns: self.steering.retry_turns,
            c.SkipTurns: self.steering.skip_turns,
            c.CastBallot: self.voting.cast_ballot,
            c.ClosePoll: self.voting.close_poll,
            c.ConfirmRoster: self.rostering.confirm_roster,
            c.ModifyRoster: self.rostering.modify_roster,
            c.AddExpert: self.rostering.add_expert,
            c.PostHumanMessage: self.people.post_human_message,
            c.TakeStance: self.people.take_stance,
            c.RankPlace: self.people.rank_place,
            c.SetOwners: self.configuring.set_owners,
            c.SetDefaults: self.configuring.set_defaults,
            c.ScheduleRound: self.schedules.schedule_round,
            c.SetDigest: self.schedules.set_digest,
            c.ForgetWorkspace: self.schedules.forget_workspace,
            c.CheckClaims: self.checks.check_claims,
            c.SearchDecisions: self.recall.search,
            c.Revisit: self.recall.revisit,
        }

    async def handle(self, cmd: c.Command) -> Reply:
        handler = self.handlers.get(type(cmd))
        if handler is None:
            raise TypeError(f"no handler for {type(cmd).__name__}")
        # Who may, and spending limits: refused before anything changes. Commands on a discussion are checked
        # by Desk.get(), inside the handler's own transaction; starts and digests here.
        await self.guard.authorize(cmd)
        asking = ASKER.set(cmd)
        try:
            reply: Reply = await handler(cmd)
        finally:
            ASKER.reset(asking)  # before kick(): the driver's task must not inherit the asker
        if reply.discussion_id and not reply.duplicate:
            self.driver.kick(reply.discussion_id)
        return reply


def list_text(discussions: list[Discussion]) -> str:
    if not discussions:
        return "No discussions yet: start one with a topic."
    return "\n".join(
        f"• `{d.id}` {d.topic[:80]} — {d.status.value}, round {d.round}, "
        f"last active {mark(d.updated_at, d.tz, relative=True)}" for d in discussions
    )


__all__ = ["Reply", "Service", "ServiceConfig", "UserError", "list_text", "validate_topic"]
