"""The step loop: decide a discussion's next step on its state as the fence reads it, start its turns, apply its
transitions, and publish what each step queues before the next is decided."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from core.deliberation import engine
from core.deliberation.engine import RunTurns, State, Transition
from core.models import Discussion, Post, Status
from core.ports import LLM, ChatPort, Clock
from core.running import seat_turns
from core.running.admission import Admission
from core.running.config import DriverConfig
from core.running.effects import close_polls, people_ballots, save_discussion
from core.running.kept import Kept, load_state
from core.running.records import record_decision
from core.running.seams import Draining, Fence, Posting, Running
from core.showing import posts
from core.storage.store import Tx

log = logging.getLogger(__name__)


class Steps:
    """A discussion's steps, one after another, while this process holds its lease.

    Handed by the driver: `fenced` (the lease's transaction), `outbox` (its drains and publishing), `turns`
    (starting and running a step's turns) and `woken` (whether a wake-up came while the loop ran; taken)."""

    def __init__(self, llm: LLM, chats: Mapping[str, ChatPort], clock: Clock, config: DriverConfig, kept: Kept,
                 admission: Admission, *, fenced: Fence, outbox: Posting, turns: Running,
                 woken: Callable[[str], bool]) -> None:
        self.llm, self.chats, self.clock, self.config, self.kept = llm, chats, clock, config, kept
        self.admission, self.fenced, self.outbox, self.turns, self.woken = admission, fenced, outbox, turns, woken

    async def run(self, discussion_id: str) -> None:
        """Decide and take the discussion's steps until it has nothing left to do (or its lease is lost: the
        fence raises LeaseLost), publishing what each queues before the next is decided."""
        kept = self.kept.start(discussion_id)  # this lease's reads of the state: a takeover starts whole
        while True:
            await self.admission.turn()
            drain: Draining | None = None  # claims the queue's first post in this step's transaction; sent below
            try:
                # One fenced transaction reads the state and, when the next step runs turns, starts them.
                async with self.fenced(discussion_id, spent=True) as (tx, d):
                    # Posts still queued go out before anything is decided: the state is not read for nothing (the fence
                    # saw whether any are). With no drain running here, this transaction claims the first of them.
                    queued = bool(tx.queued_at_fence)
                    if queued and (drain := await self.outbox.take(discussion_id)) is not None:
                        await drain.claim(tx, d)
                    if not queued:
                        loaded = await load_state(tx, discussion_id, self.config.context_rounds, d=d, kept=kept)
                        assert loaded is not None
                        state = loaded
                        step = engine.next_step(state)
                        seated = False  # a person's seat asked, nudged, answered or handed to the stand-in
                        if isinstance(step, RunTurns):
                            step, state, seated = await seat_turns.triage(tx, state, step, self.clock.now(),
                                                                          self.config.seat_wait_s)
                        started = await self.turns.start(tx, state, step) if isinstance(step, RunTurns) else None
                        if (isinstance(step, Transition) and step.status != Status.DONE
                                and (drain := await self.outbox.take(discussion_id)) is not None):
                            # Applied in the transaction that decided it, which claims the first post it queues
                            # and sends it below (a finished discussion's link is asked of the chat first: apply).
                            tx.claim_first = True
                            await self._transit(tx, d, state, step, "")  # never DONE here: no record to link
                            await drain.claim(tx, d)
                if drain is not None:
                    if not await drain.send(d):
                        return  # refused (or sent elsewhere); a sweep comes back when it is due
                    continue
            finally:
                if drain is not None:
                    drain.release()
            if queued or seated:  # publish first, then decide on the state as it is after publishing
                if not await self.outbox.publish(discussion_id):
                    return  # refused (or sent elsewhere): no turns nobody sees; a sweep comes back when it is due
                if queued or not isinstance(step, RunTurns):
                    continue
            if isinstance(step, RunTurns):
                assert started is not None  # started with the step, in its transaction
                await self.turns.run(state, step, *started)
            elif isinstance(step, Transition):
                await self.apply(state, step)
            elif not self.woken(discussion_id):
                return

    async def apply(self, state: State, step: Transition) -> None:
        """Apply a transition decided on `state`, unless a human changed the discussion meanwhile (the loop then
        decides again on what is there now)."""
        seen = state.discussion
        link = await self._link(seen) if step.status == Status.DONE else ""
        # What the transition queues (a notice, the header, closed polls) goes out at once, not after another fence.
        async with self.outbox.sending(seen.id) as (tx, d):
            if (d.status, d.pending, d.round) != (seen.status, seen.pending, seen.round):
                return
            await self._transit(tx, d, state, step, link)

    async def _transit(self, tx: Tx, d: Discussion, state: State, step: Transition, link: str) -> None:
        """A transition's writes, in a fenced transaction that read `d` as `state` has it (`link`: the thread's,
        for the decision record of a discussion it finishes)."""
        now = self.clock.now()
        notice = posts.transition_notice(step.notice, state)
        known = self.kept.known(tx, d.id)  # the state as kept here, when nothing else changed it
        if step.status == Status.DONE:
            await record_decision(tx, state, await people_ballots(tx, d.id, d.round), link, now)
        for name in ("status", "pending", "round", "round_topic", "blocked_reason"):
            value = getattr(step, name)
            if value is not None:
                setattr(d, name, value)
        # The polls it leaves behind close before the header says where the discussion is ("✅ Finished"):
        # nothing lands after the ending.
        if d.status in (Status.DONE, Status.STOPPED) or step.round is not None:
            await close_polls(tx, d, now, before_round=d.round, offline=self.llm.offline, kept=known)
        await save_discussion(tx, d, now, kept=known)
        if step.status == Status.BLOCKED:
            await tx.enqueue(d.id, posts.blocked_post(d, [], now.isoformat()), now)
        if notice is not None:
            await tx.enqueue(d.id, self._label(notice), now)

    async def _link(self, d: Discussion) -> str:
        """The thread's link for the decision record (its page's when the platform gives none)."""
        try:
            link = await self.chats[d.platform].link(d)
        except Exception:
            log.warning("no link to %s for its decision record", d.id, exc_info=True)
            link = ""
        return link or self.config.pages.url(d.id, self.clock.now(), d.options.links)

    def _label(self, post: Post) -> Post:
        return post.model_copy(update={"offline": self.llm.offline})
