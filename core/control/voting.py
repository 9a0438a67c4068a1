"""Votes and polls: a ballot cast (its new tally queued behind everything else in the thread) and a poll closed."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from core.control import commands as c
from core.control.desk import Desk
from core.control.guard import ASKER, Guard
from core.control.replies import Reply, UserError
from core.deliberation import closings
from core.models import Ballot, Discussion, Poll
from core.running.driver import Driver
from core.running.effects import close_poll, refresh_verdict
from core.showing import deadlines
from core.showing.posts import poll_post
from core.storage.store import Tx


@dataclass(eq=False)
class Voting(Desk):
    """CastBallot and ClosePoll; the guard finds the poll the asker may see; the driver, woken, sends the new tally."""

    driver: Driver
    guard: Guard

    async def cast_ballot(self, cmd: c.CastBallot) -> Reply:
        now = self.clock.now()
        async with self.store.tx() as tx:
            # Locked: closing the poll waits for this vote (or this vote sees it closed), so the tally queued
            # below is always ahead of the closed poll in the thread's queue.
            poll, d = await self.guard.poll(tx, cmd.poll_id, ASKER.get(), for_update=True)
            late = deadlines.due(poll, now)
            if late:  # past its deadline, whether or not the timer got to it yet: it closes now, without this vote
                await close_poll(tx, d, poll, now, self.driver.llm.offline)
            else:
                await self._cast(tx, d, poll, cmd, now)
        self.driver.kick(d.id)
        if late:
            raise UserError(f"Voting closed {deadlines.shown(d, poll.closes_at or now)}, so your vote was not "
                            "counted; the poll shows its final counts.")
        return Reply(text=f"Your vote: {poll.options[cmd.choice]}. Vote again to change it.")

    async def _cast(self, tx: Tx, d: Discussion, poll: Poll, cmd: c.CastBallot, now: datetime) -> None:
        if poll.closed:
            raise UserError("This poll is closed, so your vote was not counted; it shows its final counts.")
        if not 0 <= cmd.choice < len(poll.options):
            raise UserError("That option is not on this poll.")
        said = closings.repeated_place(await tx.round_ballots(d.id, poll.round), poll, cmd.user_id, cmd.choice)
        if said:
            raise UserError(said)
        await tx.cast(Ballot(poll_id=poll.id, voter_id=cmd.user_id, voter_name=cmd.user_name or cmd.user_id,
                             choice=cmd.choice, created_at=now))
        await self._queue_tally(tx, d, poll, now)
        # The verdict under the synthesis, and the decision record's, follow the people's side.
        await refresh_verdict(tx, d, poll, now, self.driver.llm.offline)

    async def _queue_tally(self, tx: Tx, d: Discussion, poll: Poll, now: datetime) -> None:
        """The poll's new counts go out through the outbox, in order with everything else in the thread: an
        edit can never land after the poll's closing and bring its buttons back. A tally not yet sent is
        replaced by the newer one (one edit for a burst of votes)."""
        prefix = f"{poll.key}:tally:"
        await tx.drop_unsent(d.id, prefix)
        # Keyed by what it shows and by how many ballots were ever cast: a repeat of a tally already sent is
        # nothing to send, while A, then B, then A again are three different edits.
        cast = len(await tx.ballots(poll.id, include_superseded=True))
        tally = poll_post(poll, await tx.ballots(poll.id), self.driver.llm.offline, replaces=poll.key)
        digest = hashlib.sha256(tally.model_dump_json().encode()).hexdigest()[:12]
        await tx.enqueue(d.id, tally.model_copy(update={"key": f"{prefix}{cast}:{digest}"}), now)

    async def close_poll(self, cmd: c.ClosePoll) -> Reply:
        async with self.store.tx() as tx:
            poll, d = await self.guard.poll(tx, cmd.poll_id, ASKER.get(), for_update=True)
            if poll.closed:
                return Reply(text="This poll was already closed; its final counts are in the thread.")
            # Its verdict, and the decision record's, follow (a hidden poll's votes count from now).
            await close_poll(tx, d, poll, self.clock.now(), self.driver.llm.offline)
        return Reply(text="Poll closed: its verdict is now final.", discussion_id=d.id)

    async def close_at_deadline(self, poll_id: int) -> bool:
        """The timer's close of a poll whose deadline has passed (False: not due, already closed, or gone)."""
        try:
            async with self.store.tx() as tx:
                poll, d = await self.guard.poll(tx, poll_id, None, for_update=True)
                if not deadlines.due(poll, self.clock.now()):
                    return False
                await close_poll(tx, d, poll, self.clock.now(), self.driver.llm.offline)
        except UserError:
            return False
        self.driver.kick(d.id)
        return True
