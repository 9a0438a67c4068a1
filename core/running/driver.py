"""The durable driver: runs a discussion's steps under a lease and publishes its outbox exactly once."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta

from pydantic import BaseModel

from core.deliberation import engine, factcheck, flows, prompts
from core.deliberation.engine import RunTurns, State, Transition, TurnPlan
from core.models import Discussion, Persona, Phase, Post, Status, Turn, TurnStatus, Usage
from core.ports import (
    LLM,
    Block,
    ChatPort,
    Clock,
    Completion,
    LLMRefused,
    LLMUnavailable,
    Prompt,
)
from core.running import seat_turns
from core.running.admission import Admission
from core.running.config import SEND_LANDS_S, DriverConfig
from core.running.effects import close_polls, people_ballots, record_turn, save_discussion
from core.running.kept import Kept, load_state
from core.running.lease import Lease, LeaseLost
from core.running.live import LiveText
from core.running.outbox import Drain, Outbox
from core.running.placeholders import Placeholders
from core.running.records import record_decision
from core.running.spending import (
    day_window,
    turn_estimate,
    turns_that_fit,
    workspace_exhausted,
    workspace_message,
)
from core.showing import posts
from core.storage.store import Store, Tx

__all__ = ["SEND_LANDS_S", "Driver", "DriverConfig", "load_state"]  # where the wiring and tests find them

log = logging.getLogger(__name__)

SPEND_KEPT = timedelta(days=31)  # the longest spend window read is the last 30 days (the admins' usage view)
EVENT_IDS_KEPT = timedelta(days=1)  # platforms retry a delivery for minutes, not days: older ids are dropped


class Driver:
    def __init__(
        self, store: Store, llm: LLM, chats: Mapping[str, ChatPort], clock: Clock, config: DriverConfig
    ) -> None:
        self.store, self.llm, self.chats, self.clock, self.config = store, llm, chats, clock, config
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._halted: set[str] = set()  # discussions whose step loop a Stop cancelled
        self._refused: set[str] = set()  # turns the model declined (stop_reason refusal), until their step settles
        self._closing = False
        self._wake: set[str] = set()
        self._later: dict[str, float] = {}  # discussions to drive again after the platform's Retry-After
        # The state each discussion driven here was last read at, kept up to date with this process's own writes.
        self.kept = Kept()
        self.lease = Lease(store, clock, config, self.kept)
        self.placeholders = Placeholders(store, chats, clock, config)
        self.outbox = Outbox(store, chats, clock, config, self.kept, fenced=self.lease.fenced,
                             held_until=self.lease.held_until, placeholders=self.placeholders,
                             come_back=self._come_back)
        self.admission = Admission(config.admit_per_pass)

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
        await self.placeholders.retract_left(discussion_id, stored)
        # This lease's reads of the state: a takeover starts from the database, whole.
        kept = self.kept.start(discussion_id)
        while True:
            await self.admission.turn()
            drain: Drain | None = None  # this step's transaction claims the queue's first post, and this loop sends it
            try:
                # One fenced transaction reads the state and, when the next step runs turns, starts them.
                async with self.lease.fenced(discussion_id, spent=True) as (tx, d):
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
                        started = (await self._start_step(tx, state, step) if isinstance(step, RunTurns)
                                   else ([], 0.0, {}))
                        if (isinstance(step, Transition) and step.status != Status.DONE
                                and (drain := await self.outbox.take(discussion_id)) is not None):
                            # Applied in the transaction that decided it, which claims the first post it queues
                            # and sends it below (a finished discussion's link is asked of the chat first: apply).
                            tx.claim_first = True
                            await self._transit(tx, d, state, step)
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
                await self.run_step(state, step, *started)
            elif isinstance(step, Transition):
                await self.apply(state, step)
            elif discussion_id in self._wake:
                self._wake.discard(discussion_id)
            else:
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

    async def _transit(self, tx: Tx, d: Discussion, state: State, step: Transition, link: str = "") -> None:
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
        return link or self.config.pages.url(d.id, self.clock.now())

    def _label(self, post: Post) -> Post:
        return post.model_copy(update={"offline": self.llm.offline})

    # running turns ----------------------------------------------------------------------------------
    async def _start_step(self, tx: Tx, state: State, step: RunTurns
                          ) -> tuple[list[TurnPlan], float, dict[str, Prompt]]:
        """Start the step's turns that fit the budgets (the rest wait for the next step, which sees what these
        cost), in the fenced transaction that decided on the step; the workspace's spend today; and each turn's
        prompt, built here to know its worst case and sent as it is."""
        d = state.discussion
        transcripts: dict[bool, list[Block]] = {}  # one transcript for the step's turns: they read one state
        built = {plan.key: self._prompt(state, plan, transcripts) for plan in step.turns}
        worst = max((self.llm.worst_case_usd(p, search=p.purpose.phase == Phase.FACT_CHECK) for p in built.values()),
                    default=0.0)
        fit, spent_today, estimate = await self._turns_within_budget(tx, d, step, worst)
        turns = step.turns[:fit]
        now = self.clock.now()
        # Each holds its estimate in the workspace's spend while it runs, so parallel discussions see each other's
        # turns.
        await tx.start_turns([
            Turn(key=plan.key, discussion_id=d.id, round=plan.round, step=plan.step, phase=plan.phase,
                 persona_key=plan.persona_key, reply_to=plan.reply_to, created_at=now)
            for plan in turns
        ], hold=(estimate, now))
        return turns, spent_today, built

    @staticmethod
    def _prompt(state: State, plan: TurnPlan, transcripts: dict[bool, list[Block]] | None = None) -> Prompt:
        return factcheck.prompt(state, plan) if plan.phase == Phase.FACT_CHECK else \
            prompts.build(state, plan, transcripts)

    async def run_step(self, state: State, step: RunTurns, turns: list[TurnPlan], spent_today: float,
                       built: dict[str, Prompt] | None = None) -> None:
        """Run the turns `_start_step` started (none: no turn fits the budgets, and the thread says why)."""
        d = state.discussion
        if not turns:
            await self._out_of_budget(d, step, spent_today)
            return
        answered = await asyncio.gather(*(self.run_turn(state, plan, (built or {}).get(plan.key)) for plan in turns))
        if all(answered):
            return  # every turn was recorded done (or already finished): nothing failed, nothing to settle
        keys = {p.key for p in turns}
        refused, self._refused = self._refused & keys, self._refused - keys
        async with self.lease.fenced(d.id) as (tx, current):
            after = await load_state(tx, d.id, self.config.context_rounds, d=current)
            assert after is not None
            step_turns = [t for t in after.turns if t.key in keys]
            reason = engine.should_block(after, step_turns)
            failed = [t for t in step_turns if t.status == TurnStatus.FAILED]
            await self._settle_failures(tx, after.discussion, failed, reason, refused)

    async def run_turn(self, state: State, plan: TurnPlan, prompt: Prompt | None = None) -> bool:
        """Run one turn and record it (`prompt`: the one its reservation was sized on); False when the model
        failed (the turn is recorded failed)."""
        prompt = prompt or self._prompt(state, plan)
        d = state.discussion
        persona = state.persona(plan.persona_key)
        chat = self.chats[d.platform]
        await self.admission.turn()
        if persona is not None and plan.phase not in engine.SILENT:  # a turn that posts nothing shows nothing
            try:
                await chat.thinking(d, persona, plan.key)
            except Exception:  # a missing typing indicator must never cost a turn
                log.warning("could not show the thinking state for %s", plan.key, exc_info=True)
        data: dict | None = None
        usage: Usage | None = None
        error = ""
        if plan.phase == Phase.FACT_CHECK:
            # Never fails: without the search tool the check says it could not check, and the discussion goes on.
            searched = await self.llm.search(prompt)
            (text, data), usage = factcheck.record(searched, state, plan), searched.usage
            await self._record(d.id, functools.partial(record_turn, state=state, plan=plan, text=text, data=data,
                                                       usage=usage, error="", offline=self.llm.offline),
                               charge=(plan.key, usage))
            return True
        try:
            schema = flows.get(d.flow).schema(plan.phase, persona) if persona is not None else None
            if schema is not None:
                value: BaseModel
                value, usage = await self.llm.structured(prompt, schema)
                data, text = value.model_dump(), ""
            else:
                completion = await self._complete_live(d, persona, plan.key, prompt)
                text, usage = completion.text.strip(), completion.usage
        except LLMUnavailable as exc:
            text, error, usage = "", str(exc) or "the model did not answer", exc.usage  # a failed call is paid
            if isinstance(exc, LLMRefused):  # asking again the same way will not help: skipped, never nudged
                self._refused.add(plan.key)
        await self._record(d.id, functools.partial(record_turn, state=state, plan=plan, text=text, data=data,
                                                   usage=usage, error=error, offline=self.llm.offline),
                           charge=(plan.key, usage))
        return not error

    async def _record(self, discussion_id: str, record: Callable[..., Awaitable[None]],
                      charge: tuple[str, Usage | None] = ("", None)) -> None:
        """Record a finished turn (`record(tx=, now=, current=)`) and publish what it queued (see `_sending`).
        Answers asked at the same moment arrive together: they record in turn (admission). `charge`: the turn's
        key and what its call cost, added to the discussion's cost by the fence when the state this driver keeps
        is whole (the turn is then known to be running here, so paid for)."""
        await self.admission.turn()
        async with self.outbox.sending(discussion_id, charge=charge) as (tx, current):
            await record(tx=tx, now=self.clock.now(), current=current, kept=self.kept.known(tx, discussion_id))

    async def _complete_live(self, d: Discussion, persona: Persona | None, key: str, prompt: Prompt) -> Completion:
        """A persona's turn, its words shown as they arrive; the live text ends before the finished post."""
        if persona is None:
            return await self.llm.complete(prompt)
        chat = self.chats[d.platform]
        live = LiveText(functools.partial(chat.stream, d, persona, key), self.config.live_interval_s)
        try:
            return await self.llm.complete(prompt, on_text=live.push)
        finally:
            await live.close()

    async def _settle_failures(self, tx: Tx, seen: Discussion, failed: list[Turn], reason: str,
                               refused: set[str] | frozenset[str] = frozenset()) -> None:
        now = self.clock.now()
        d = await tx.discussion(seen.id, for_update=True)
        if d is None:
            return
        if reason:
            if d.status != Status.RUNNING:
                return  # stopped or paused meanwhile: nothing left to block
            d.status, d.blocked_reason = Status.BLOCKED, reason
            await save_discussion(tx, d, now)
            await tx.enqueue(d.id, posts.blocked_post(d, failed, now.isoformat()), now)
            return
        personas = {p.key: p.name for p in await tx.personas(d.id)}
        nudges = flows.get(d.flow).nudges
        for t in failed:
            name = personas.get(t.persona_key, t.persona_key)
            quiet = t.phase in engine.SILENT  # a bid or a roster slot: nothing of it is shown, its retry neither
            if t.attempts <= nudges and t.phase != Phase.ANSWER and t.key not in refused:  # a nudge first: once more
                if not quiet:
                    await tx.enqueue(d.id, posts.nudge_post(d, t, name), now)
                continue
            await tx.set_turn_status([t.key], TurnStatus.SKIPPED)
            if quiet:
                continue
            if t.reply_to is not None:
                await tx.mark_answered(t.reply_to)  # a skipped answer is not retried on every wake-up
            await tx.enqueue(d.id, posts.skipped_post(d, t, name), now)

    async def _turns_within_budget(self, tx: Tx, d: Discussion, step: RunTurns, worst: float = 0.0
                                   ) -> tuple[int, float, float]:
        """How many of the step's turns may start, the workspace's spend today (reservations of running turns
        included) and what each turn reserves: the worst case of the step's costliest turn (`worst`), against
        what is left of the discussion's budget and of the workspace's budget for the day (0 = no limit)."""
        limits, now = self.config.limits, self.clock.now()
        estimate = turn_estimate(limits, d.costliest_call_usd, worst)  # `d` was read in this transaction
        spent_today = 0.0
        if limits.workspace_usd_per_day > 0:
            # One reader at a time per workspace: the spend read and the reservation written are one step.
            await tx.serialize("spend", d.platform, d.workspace)
            since = day_window(now, limits.tz)[0]
            seen = tx.spent_at_fence  # read by the step's fence, when it could
            spent_today = seen[1] if seen is not None and seen[0] == since else await tx.workspace_spend(
                d.platform, d.workspace, since)
        remaining = d.budget_usd - d.cost_usd if d.budget_usd > 0 else float("inf")
        if limits.workspace_usd_per_day > 0:
            remaining = min(remaining, limits.workspace_usd_per_day - spent_today)
        return turns_that_fit(len(step.turns), remaining, estimate), spent_today, estimate

    async def _out_of_budget(self, d: Discussion, step: RunTurns, spent_today: float) -> None:
        """No turn fits: the discussion stops (or its waiting answers are dropped) and the thread says why."""
        limits, now = self.config.limits, self.clock.now()
        if workspace_exhausted(limits, spent_today):
            await self._stop_for_budget(d, step, workspace_message(limits, spent_today, now), daily=True)
        else:
            await self._stop_for_budget(d, step, f"budget reached: ${d.cost_usd:.2f} spent of ${d.budget_usd:.2f}")

    async def _stop_for_budget(self, seen: Discussion, step: RunTurns, reason: str, daily: bool = False) -> None:
        """A discussion over its own budget stops for good; over the workspace's daily budget it is blocked, so
        Retry continues it once the day resets. Answers waiting between rounds are dropped, saying so."""
        now = self.clock.now()
        why = reason if daily else f"the discussion's {reason}"
        async with self.lease.fenced(seen.id) as (tx, d):
            checks = [plan for plan in step.turns if factcheck.REQUESTED in plan.key]
            if checks:
                # A check someone asked for is stored running and the engine returns it whatever the discussion
                # is doing: left as it is, every pass would find it again. Dropped, it says so once (its own key).
                await tx.set_turn_status([plan.key for plan in checks], TurnStatus.SKIPPED)
                for plan in checks:
                    await tx.enqueue(d.id, Post(kind="notice", key=f"{plan.key}:budget",
                                                text=f"💸 The Fact-checker did not check that post: {why}."), now)
                return  # the next pass decides again without them
            if d.status == Status.WAITING:
                replies = sorted(plan.reply_to for plan in step.turns if plan.reply_to is not None)
                for reply in replies:
                    await tx.mark_answered(reply)
                if replies:  # keyed by what it drops: the same answers are never dropped twice
                    await tx.enqueue(d.id, Post(kind="notice", key=f"{d.id}:budget:answers:{replies[0]}",
                                                text=f"💸 No answer this time: {why}."), now)
                return
            if d.status != Status.RUNNING:
                return
            d.blocked_reason = reason
            if daily:
                d.status = Status.BLOCKED
                await save_discussion(tx, d, now)
                await tx.enqueue(d.id, posts.blocked_post(d, [], now.isoformat()), now)
                return
            d.status = Status.STOPPED
            await tx.enqueue(
                d.id, Post(kind="error", key=f"{d.id}:budget", text=f"The discussion stopped: its {reason}."), now,
            )
            await close_polls(tx, d, now, before_round=d.round + 1, offline=self.llm.offline)
            await save_discussion(tx, d, now)  # the header's "Stopped" last: nothing lands after the ending

    def _come_back(self, discussion_id: str, after_s: float) -> None:
        """Drive the discussion again once the wait the platform asked for is over, not a whole sweep later."""
        self._later[discussion_id] = max(after_s, self._later.get(discussion_id, 0.0))

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
