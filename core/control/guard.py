"""The service's gate: every command is checked here before it runs (who may, spending limits), and the read-only
answers (status, list, usage) are scoped to the asker's workspace and channel."""

from __future__ import annotations

from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Protocol

from core.control import commands as c
from core.control import permissions as perm
from core.control.replies import UserError
from core.deliberation import engine
from core.models import Discussion, Persona, Poll, Status
from core.ports import Clock
from core.running.driver import load_state
from core.running.spending import Limits, day_refusal, day_window
from core.showing.moments import mark
from core.storage.store import Store, Tx

# The command being handled, for the permission check inside each handler's transaction (unset for the timer).
ASKER: ContextVar[c.Command | None] = ContextVar("council_asker", default=None)


NO_POLL = "I can't find that poll: its number is not one of a discussion you can see."


def not_found(discussion_id: str) -> UserError:
    """The same words whether the id does not exist or belongs to another workspace or channel."""
    return UserError(f"I can't find a discussion with id `{discussion_id.strip()}`; the list command shows them.")


def _who(asker: c.Command) -> dict[str, object]:
    """The facts of who asks and where, to check another action for the same person."""
    return {name: getattr(asker, name) for name in c.Command.model_fields}


def readable(d: Discussion, asker: c.Command, member_of: list[str] | None) -> bool:
    """Whether the asker may read this discussion's topic: a public channel's, or a private channel's they are in
    (the one they ask from, or one the platform says they are in). Being an admin is no reason to read a private
    channel: an admin sees what it spends, not what it is about."""
    return not d.options.private or d.channel in {asker.in_channel, *(member_of or [])}


class GuardConfig(Protocol):
    policy: perm.Policy
    limits: Limits


class Guard:
    """Held by the service: authorize(cmd) before any handler, scoped look-ups and the admins' usage view."""

    def __init__(self, store: Store, clock: Clock, config: GuardConfig) -> None:
        self.store, self.clock, self.config = store, clock, config

    async def authorize(self, cmd: c.Command) -> None:
        """Refuse (privately, saying why) a start past the limits. A digest is checked by set_digest, against
        the digest it reads in the transaction that replaces it."""
        if not isinstance(cmd, c.StartDiscussion):
            return
        async with self.store.tx() as tx:
            await self._may_start(tx, cmd)

    async def visible(self, tx: Tx, discussion_id: str, asker: c.Command) -> Discussion:
        d = await tx.discussion(discussion_id.strip())
        if d is None or not perm.visible(self.config.policy, d, asker):
            raise not_found(discussion_id)
        return d

    async def may(self, cmd: c.Command, discussion_id: str) -> Discussion:
        """Check, changing nothing, that the asker may do `cmd` to this discussion: the same "no such
        discussion" or refusal the command itself would meet (a confirm step is offered only to who may
        confirm; the command is checked again when it runs)."""
        async with self.store.tx() as tx:
            d = await self.visible(tx, discussion_id, cmd)
        perm.check(self.config.policy, d, cmd)
        return d

    async def poll(self, tx: Tx, poll_id: int, asker: c.Command | None, *, for_update: bool = False
                   ) -> tuple[Poll, Discussion]:
        """A poll and its discussion, when the asker (None: the timer) can see them from where they are; one answer
        for every poll they cannot see, so no id tells anything (existing, closed, its options) elsewhere."""
        poll = await tx.poll(poll_id, for_update=for_update)
        d = await tx.discussion(poll.discussion_id, for_update=True) if poll is not None else None
        if poll is None or d is None or (asker is not None and not perm.visible(self.config.policy, d, asker)):
            raise UserError(NO_POLL)
        if asker is not None:
            perm.check(self.config.policy, d, asker)
        return poll, d

    async def roster(self, asker: c.Command, discussion_id: str) -> tuple[Discussion, list[Persona]]:
        """The roster, read only for someone who may edit it (the roster form, Discord's roster edit)."""
        d = await self.may(c.ModifyRoster(**_who(asker), discussion_id=discussion_id, persona_key=""), discussion_id)
        async with self.store.tx() as tx:
            return d, await tx.personas(d.id)

    async def suggestions(self, cmd: c.ChooseNextAction) -> list[str]:
        """The council's ideas for the next round (Deep dive's and Different topic's forms), read only for
        someone who may choose it."""
        d = await self.may(cmd, cmd.discussion_id)
        async with self.store.tx() as tx:
            state = await load_state(tx, d.id)
        if state is None or state.discussion.status != Status.WAITING:
            raise UserError("The next step was already chosen.")
        return engine.suggestions(state)

    async def may_stop(self, cmd: c.Stop) -> Discussion:
        """Before a typed stop asks "for good?": whether there is anything this person may stop."""
        d = await self.may(cmd, cmd.discussion_id)
        if d.status in (Status.DONE, Status.STOPPED):
            raise UserError(f"This discussion is already {d.status.value}.")
        return d

    async def _may_start(self, tx: Tx, cmd: c.StartDiscussion) -> None:
        """Checked before anything is read for the start; the person's count is checked again, atomically with
        the insert, by may_start_now."""
        await self.may_start_now(tx, cmd)
        limits = self.config.limits
        now = self.clock.now()
        since = day_window(now, limits.tz)[0]
        spent = (await tx.workspace_spend(cmd.platform, cmd.workspace, since)
                 if limits.workspace_usd_per_day > 0 else 0.0)
        process = await tx.process_spend(since) if limits.process_usd_per_day > 0 else 0.0
        refusal = day_refusal(limits, spent, process, now)
        if refusal:
            raise UserError(f"I can't start a new discussion: {refusal}.")

    async def may_start_now(self, tx: Tx, cmd: c.StartDiscussion) -> None:
        """The person's starts in the last hour, counted in the transaction that inserts this one and under a
        lock on the person (one transaction at a time on SQLite): twelve starts sent at once let exactly the
        limit through."""
        limits = self.config.limits
        if limits.starts_per_user_per_hour <= 0 or not cmd.user_id:
            return
        await tx.serialize("starts", cmd.platform, cmd.workspace, cmd.user_id)
        since = self.clock.now() - timedelta(hours=1)
        started = await tx.starts_since(cmd.platform, cmd.workspace, cmd.user_id, since)
        if started >= limits.starts_per_user_per_hour:
            raise UserError(
                f"You have started {started} discussion{'s' if started != 1 else ''} in the last hour, the limit "
                f"per person (COUNCIL_STARTS_PER_USER_PER_HOUR = {limits.starts_per_user_per_hour}); please try "
                f"again later, or continue {'one of them' if started != 1 else 'it'}.")

    async def answered_lately(self, tx: Tx, discussion_id: str, user_id: str, now: datetime) -> bool:
        """Paid answers between rounds are paced: at most one per person per COUNCIL_ANSWER_INTERVAL_S."""
        interval = self.config.limits.answer_interval_s
        if interval <= 0:
            return False
        since = now - timedelta(seconds=interval)
        return any(m.author_id == user_id and m.needs_answer and m.created_at >= since
                   for m in await tx.human_messages(discussion_id))

    # reading -----------------------------------------------------------------------------------------
    async def discussions(self, asker: c.Command | None = None, *, limit: int = 50) -> list[Discussion]:
        """The discussions of the asker's channel (in their workspace); every one for the operator (None)."""
        async with self.store.tx() as tx:
            if asker is None:
                return await tx.discussions(limit=limit)
            return await tx.discussions(channel=asker.in_channel, platform=asker.platform,
                                        workspace=asker.workspace, limit=limit)

    async def status_text(self, discussion_id: str, asker: c.Command | None = None,
                          member_of: list[str] | None = None) -> str:
        """One line on a discussion, for the asker (None: the operator, from anywhere); `member_of`: the channels
        the platform says the asker is in (an admin reads a private channel's discussion only from those)."""
        async with self.store.tx() as tx:
            d = (await self.visible(tx, discussion_id, asker) if asker is not None
                 else await tx.discussion(discussion_id.strip()))
            if d is None or (asker is not None and not readable(d, asker, member_of)):
                raise not_found(discussion_id)
            polls = await tx.polls(d.id)
            rounds = await tx.find_schedule("round", d.platform, d.workspace, d.id)
        budget = f" of ${d.budget_usd:.2f}" if d.budget_usd > 0 else ""
        line = f"`{d.id}` “{d.topic}”: {d.status.value}, round {d.round}, ${d.cost_usd:.2f}{budget} spent"
        if d.blocked_reason:
            line += f" ({d.blocked_reason})"
        if d.status == Status.BLOCKED:
            line += "; resume it to retry"
        open_polls = [p for p in polls if not p.closed]
        line += f", {len(open_polls)} open poll(s)" if open_polls else ""
        ended = d.status in (Status.DONE, Status.STOPPED)  # its schedule ends at its next firing: none to show
        if rounds is not None and rounds.enabled and rounds.next_run_at is not None and not ended:
            line += f"; next scheduled round {mark(rounds.next_run_at, rounds.tz, relative=True)}"
        return line

    async def usage_text(self, asker: c.Command, member_of: list[str] | None = None) -> str:
        """Admins only: the workspace's spend today and over 30 days, and its most expensive discussions (those of
        private channels the admin is not in by their cost alone; `member_of` as for `status_text`)."""
        perm.check_admin(self.config.policy, asker, "see this workspace's usage")
        limits = self.config.limits
        now = self.clock.now()
        today, reset = day_window(now, limits.tz)
        async with self.store.tx() as tx:
            spent_today = await tx.workspace_spend(asker.platform, asker.workspace, today)
            spent_30 = await tx.workspace_spend(asker.platform, asker.workspace, now - timedelta(days=30))
            top = await tx.costliest(asker.platform, asker.workspace, now - timedelta(days=30))
        cap = (f" of ${limits.workspace_usd_per_day:.2f} (resets {reset:%H:%M} {limits.tz})"
               if limits.workspace_usd_per_day > 0 else " (no daily limit)")
        lines = [f"*Council usage in this workspace*: ${spent_today:.2f} today{cap}; ${spent_30:.2f} in the last "
                 f"30 days."]
        if limits.starts_per_user_per_hour > 0:
            n = limits.starts_per_user_per_hour
            lines.append(f"Each person may start {n} discussion{'s' if n != 1 else ''} an hour.")
        lines += [(f"• `{d.id}` {d.topic[:60]}" if readable(d, asker, member_of) else "• a discussion in a private "
                   "channel you are not in") + f" — ${d.cost_usd:.2f}, {d.status.value}" for d in top if d.cost_usd]
        return "\n".join(lines)
