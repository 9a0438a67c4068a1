"""The thin driver: one per discussion driven in this process, its work done by the parts it composes (the lease,
the step loop, the turns, the outbox and the placeholders), each handed in its constructor what it calls of another."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from datetime import timedelta

from core.models import Discussion
from core.ports import LLM, ChatPort, Clock
from core.running.admission import Admission
from core.running.config import SEND_LANDS_S, DriverConfig
from core.running.kept import Kept, load_state
from core.running.lease import Lease, LeaseLost
from core.running.outbox import Outbox
from core.running.placeholders import Placeholders
from core.running.steps import Steps
from core.running.turns import Turns
from core.storage.store import Store

__all__ = ["SEND_LANDS_S", "Driver", "DriverConfig", "load_state"]  # where the wiring and tests find them

log = logging.getLogger(__name__)

SPEND_KEPT = timedelta(days=31)  # the longest spend window read is the last 30 days (the admins' usage view)
EVENT_IDS_KEPT = timedelta(days=1)  # platforms retry a delivery for minutes, not days: older ids are dropped


class Driver:
    """Drives the discussions of this process: starts a driver per discussion (`kick`, `sweep`), runs its steps
    under the lease (`drive`), and stops them (`halt`, `shutdown`). The work is its parts', composed here: the lease,
    the placeholders, the outbox, the turns and the step loop, each handed what it calls of another."""

    def __init__(
        self, store: Store, llm: LLM, chats: Mapping[str, ChatPort], clock: Clock, config: DriverConfig
    ) -> None:
        self.store, self.llm, self.chats, self.clock, self.config = store, llm, chats, clock, config
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._halted: set[str] = set()  # discussions whose step loop a Stop cancelled
        self._closing = False
        self._wake: set[str] = set()
        self._later: dict[str, float] = {}  # discussions to drive again after the platform's Retry-After
        self.admission = Admission(config.admit_per_pass)
        # The state each discussion driven here was last read at, kept up to date with this process's own writes.
        self.kept = Kept()
        self.lease = Lease(store, clock, config, self.kept)
        self.placeholders = Placeholders(store, chats, clock, config)
        self.outbox = Outbox(store, chats, clock, config, self.kept, fenced=self.lease.fenced,
                             held_until=self.lease.held_until, placeholders=self.placeholders,
                             come_back=self._come_back)
        self.turns = Turns(llm, chats, clock, config, self.kept, self.admission, fenced=self.lease.fenced,
                           sending=self.outbox.sending, jot=self._jot)
        self.steps = Steps(llm, chats, clock, config, self.kept, self.admission, fenced=self.lease.fenced,
                           outbox=self.outbox, turns=self.turns, woken=self._woken)

    # scheduling of drivers inside this process ------------------------------------------------------
    def kick(self, discussion_id: str) -> asyncio.Task[None]:
        """Make sure a driver runs for this discussion in this process (or wakes the running one)."""
        task = self._tasks.get(discussion_id)
        if self._closing:  # shutting down: the next process (or replica) resumes this discussion
            return task or asyncio.create_task(asyncio.sleep(0))
        if task is not None and not task.done():
            self._wake.add(discussion_id)
            return task
        task = asyncio.create_task(self._drive_logged(discussion_id), name=f"drive:{discussion_id}")
        self._tasks[discussion_id] = task
        return task

    async def idle(self) -> None:
        """Wait until every driver of this process has nothing left to do (tests, console, shutdown)."""
        while running := [t for t in self._tasks.values() if not t.done()]:
            await asyncio.gather(*running, return_exceptions=True)

    async def shutdown(self, grace_s: float = 0.0) -> None:
        """Let running turns finish for up to `grace_s` (none by default), then stop every driver, each releasing
        its lease as it goes: another process resumes the rest at once, re-running only the turns cut short."""
        self._closing = True  # no driver starts while stopping (a late wake-up, a racing kick)
        try:
            if grace_s > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.idle(), grace_s)
            running = [t for t in self._tasks.values() if not t.done()]
            if running:
                log.warning("stopping %d discussion driver(s) mid-step; their leases are released now", len(running))
            for task in running:
                task.cancel()
            await asyncio.gather(*running, return_exceptions=True)
            await self.lease.stop()  # nothing is driven here any more
        finally:
            self._closing = False  # a client that reconnects (Discord without an intent) drives again

    async def _drive_logged(self, discussion_id: str) -> None:
        try:
            await self.drive(discussion_id)
        except Exception:
            log.exception("driver for %s failed; the sweeper will pick it up again", discussion_id)

    async def sweep(self) -> list[str]:
        """Claim discussions with work and no live driver (crashed replicas, missed wake-ups)."""
        now = self.clock.now()
        async with self.store.tx() as tx:
            ids = await tx.claim_stale(self.config.owner, now, self.config.lease_ttl, platforms=list(self.chats))
            await tx.prune_events(now - EVENT_IDS_KEPT)
            await tx.prune_spend(now - SPEND_KEPT)
        for i in ids:
            self.kick(i)
        return ids

    # the loop ---------------------------------------------------------------------------------------
    async def drive(self, discussion_id: str) -> None:
        # Every placeholder stored is read with the lease, once: the driver keeps them from then on.
        stored = await self.lease.take(discussion_id, lambda tx: tx.placeholders(discussion_id))
        if stored is None:
            self._tasks.pop(discussion_id, None)
            return
        # The steps run in their own task so that a heartbeat that fails can stop them mid-step (model calls
        # included) instead of at the next loop.
        work = asyncio.create_task(self._steps(discussion_id, stored), name=f"steps:{discussion_id}")
        self.lease.hold(discussion_id, work)
        try:
            await asyncio.wait({work})
            if work.cancelled() and discussion_id in self._halted:
                log.info("%s was stopped mid-step; its model calls were cancelled", discussion_id)
            elif work.cancelled() or isinstance(work.exception(), LeaseLost):
                log.warning("lost the lease on %s; stopped its driver here", discussion_id)
            else:
                work.result()  # re-raise anything else
        finally:
            work.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # already raised above
                await work
            self.placeholders.forget(discussion_id)
            self.kept.drop(discussion_id)
            self._halted.discard(discussion_id)
            await self.lease.let_go(discussion_id)
            # A wake-up that raced with our exit gets a fresh driver: no await between check and pop.
            self._tasks.pop(discussion_id, None)
            self.outbox.forget(discussion_id)  # every publish of this driver has returned
            later = self._later.pop(discussion_id, None)
            if discussion_id in self._wake:
                self._wake.discard(discussion_id)
                self.kick(discussion_id)
            elif later is not None and not self._closing:  # a task of its own, so idle() waits for it too
                self._tasks[discussion_id] = asyncio.create_task(self._drive_later(discussion_id, later),
                                                                 name=f"drive-later:{discussion_id}")

    def halt(self, discussion_id: str) -> None:
        """A discussion was stopped: cancel its step here, model calls included (the loop comes back for the
        stop notice, which a wake-up publishes)."""
        work = self.lease.work.get(discussion_id)
        if work is not None and not work.done():
            self._halted.add(discussion_id)
            self._wake.add(discussion_id)
            work.cancel()

    async def _steps(self, discussion_id: str, stored: list[tuple[str, str, str]]) -> None:
        """The work done under the lease: the placeholders another process left go first, then the step loop."""
        await self.placeholders.retract_left(discussion_id, stored)
        await self.steps.run(discussion_id)

    def _woken(self, discussion_id: str) -> bool:
        """Whether a wake-up came while the discussion's steps ran (taken: the loop decides once more)."""
        if discussion_id not in self._wake:
            return False
        self._wake.discard(discussion_id)
        return True

    def _come_back(self, discussion_id: str, after_s: float) -> None:
        """Drive the discussion again once the wait the platform asked for is over, not a whole sweep later."""
        self._later[discussion_id] = max(after_s, self._later.get(discussion_id, 0.0))

    async def _jot(self, discussion_id: str, key: str, text: str) -> None:
        """A turn's words so far, kept for its page (a display, as the chat's live text is: no fence)."""
        async with self.store.tx() as tx:
            await tx.live_text_shown(discussion_id, key, text, self.clock.now())

    async def _drive_later(self, discussion_id: str, after_s: float) -> None:
        await asyncio.sleep(after_s)
        await self._drive_logged(discussion_id)

    # the outbox, as the wiring and tests reach it ---------------------------------------------------
    async def publish(self, discussion_id: str) -> bool:
        """Send the discussion's unsent posts in order (see `Outbox.publish`)."""
        return await self.outbox.publish(discussion_id)

    async def placeholder_shown(self, d: Discussion, key: str, ref: str) -> None:
        """A chat showed a placeholder for the turn `key` (see `Placeholders.shown`)."""
        await self.placeholders.shown(d, key, ref)
