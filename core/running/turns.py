"""Running a step's turns: which fit the budgets, the model calls (live text, structured answers, fact checks), the
record of each, what a failed turn leaves (a nudge, a skip, a block) and the stop when no turn fits."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping

from pydantic import BaseModel

from core.deliberation import engine, factcheck, flows, prompts, review
from core.deliberation.engine import RunTurns, State, TurnPlan
from core.deliberation.schemas import PeerReview
from core.models import Discussion, Persona, Phase, Post, Status, Turn, TurnStatus, Usage
from core.ports import LLM, Block, ChatPort, Clock, Completion, LLMRefused, LLMUnavailable, Prompt
from core.running.admission import Admission
from core.running.config import DriverConfig
from core.running.effects import close_polls, record_turn, save_discussion
from core.running.kept import Kept, load_state
from core.running.live import LiveText
from core.running.seams import Fence, Jot, Sending
from core.running.spending import day_refusal, day_window, turn_estimate, turns_that_fit
from core.showing import extras, posts
from core.storage.store import Tx

log = logging.getLogger(__name__)


class Turns:
    """The turns of the discussions driven here, from their start in a step's transaction to their record.

    Handed by the driver: `fenced` (the lease's transaction) and `sending` (the outbox's fenced transaction whose
    posts are published once it commits)."""

    def __init__(self, llm: LLM, chats: Mapping[str, ChatPort], clock: Clock, config: DriverConfig, kept: Kept,
                 admission: Admission, *, fenced: Fence, sending: Sending, jot: Jot | None = None) -> None:
        self.llm, self.chats, self.clock, self.config, self.kept = llm, chats, clock, config, kept
        self.admission, self.fenced, self.sending, self.jot = admission, fenced, sending, jot
        self._refused: set[str] = set()  # turns the model declined (stop_reason refusal), until their step settles

    async def start(self, tx: Tx, state: State, step: RunTurns
                    ) -> tuple[list[TurnPlan], tuple[float, float], dict[str, Prompt]]:
        """Start the step's turns that fit the budgets (the rest wait for the next step, which sees what these
        cost), in the fenced transaction that decided on the step; the workspace's and the whole process's spend
        today; and each turn's prompt, built here to know its worst case and sent as it is."""
        d = state.discussion
        transcripts: dict[bool, list[Block]] = {}  # one transcript for the step's turns: they read one state
        built = {plan.key: self._prompt(state, plan, transcripts) for plan in step.turns}
        worst = max((self.worst_usd(p) for p in built.values()), default=0.0)
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
        if extras.starts_final_synthesis(d, (plan.key for plan in turns)):
            await extras.draw_ahead(tx, d, self.kept.seats(d.id))
        return turns, spent_today, built

    def worst_usd(self, prompt: Prompt) -> float:
        """The most one turn of `prompt` may cost, every attempt the model client may make included: the room
        retries of an answer cut at max_tokens, or a fact check's continuations and their searches."""
        attempts = self.config.limits.attempts
        leg = self.llm.worst_case_usd(prompt)
        if prompt.purpose.phase == Phase.FACT_CHECK:
            return attempts.check_usd(leg, self.llm.worst_case_usd(prompt, search=True) - leg)
        return attempts.call_usd(leg)

    @staticmethod
    def _prompt(state: State, plan: TurnPlan, transcripts: dict[bool, list[Block]] | None = None) -> Prompt:
        if plan.phase == Phase.PEER_REVIEW:
            return review.prompt(state, plan)
        return factcheck.prompt(state, plan) if plan.phase == Phase.FACT_CHECK else \
            prompts.build(state, plan, transcripts)

    async def run(self, state: State, step: RunTurns, turns: list[TurnPlan], spent_today: tuple[float, float],
                  built: dict[str, Prompt] | None = None) -> None:
        """Run the turns `start` started (none: no turn fits the budgets, and the thread says why)."""
        d = state.discussion
        if not turns:
            await self._out_of_budget(d, step, spent_today)
            return
        answered = await asyncio.gather(*(self.run_turn(state, plan, (built or {}).get(plan.key)) for plan in turns))
        if all(answered):
            return  # every turn was recorded done (or already finished): nothing failed, nothing to settle
        keys = {p.key for p in turns}
        refused, self._refused = self._refused & keys, self._refused - keys
        async with self.fenced(d.id) as (tx, current):
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
        if plan.phase == Phase.PEER_REVIEW:
            return await self._review(state, plan, prompt)
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

    async def _review(self, state: State, plan: TurnPlan, prompt: Prompt) -> bool:
        """One persona's peer review. Never fails: a review the model could not give is recorded without a ranking
        (the aggregate goes on without it) and never asked again, so the round is not held up by it."""
        found: PeerReview | None = None
        error, usage = "", None
        try:
            found, usage = await self.llm.structured(prompt, PeerReview)
        except LLMUnavailable as exc:
            error, usage = str(exc) or "the model did not answer", exc.usage
        data = review.record(state, plan, found, error)
        await self._record(state.discussion.id, functools.partial(
            record_turn, state=state, plan=plan, text="", data=data, usage=usage, error="",
            offline=self.llm.offline), charge=(plan.key, usage))
        return True

    async def _record(self, discussion_id: str, record: Callable[..., Awaitable[None]],
                      charge: tuple[str, Usage | None] = ("", None)) -> None:
        """Record a finished turn (`record(tx=, now=, current=)`) and publish what it queued (see `Outbox.sending`).
        Answers asked at the same moment arrive together: they record in turn (admission). `charge`: the turn's
        key and what its call cost, added to the discussion's cost by the fence when the state this driver keeps
        is whole (the turn is then known to be running here, so paid for)."""
        await self.admission.turn()
        async with self.sending(discussion_id, charge=charge) as (tx, current):
            await record(tx=tx, now=self.clock.now(), current=current, kept=self.kept.known(tx, discussion_id))

    async def _complete_live(self, d: Discussion, persona: Persona | None, key: str, prompt: Prompt) -> Completion:
        """A persona's turn, its words shown as they arrive; the live text ends before the finished post."""
        if persona is None:
            return await self.llm.complete(prompt)
        chat = self.chats[d.platform]
        live = LiveText(functools.partial(chat.stream, d, persona, key), self.config.live_interval_s)
        jot = self.jot if self.config.pages.enabled else None  # no page to show the words on: nothing kept
        page = LiveText(functools.partial(jot, d.id, key), self.config.page_interval_s) if jot else None

        def push(parts: list[str]) -> None:
            live.push(parts)
            if page is not None:
                page.push(parts)

        try:
            return await self.llm.complete(prompt, on_text=push)
        finally:
            await live.close()
            if page is not None:  # what it kept stays until the discussion ends: the page shows running turns' only
                await page.close()

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
                                   ) -> tuple[int, tuple[float, float], float]:
        """How many of the step's turns may start, the workspace's and the whole process's spend today
        (reservations of running turns included) and what each turn reserves: the worst case of the step's
        costliest turn (`worst`), against what is left of the discussion's budget and of the workspace's and the
        process's budgets for the day (0 = no limit)."""
        limits, now = self.config.limits, self.clock.now()
        estimate = turn_estimate(limits, d.costliest_call_usd, worst)  # `d` was read in this transaction
        spent_today = process_today = 0.0
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
        if limits.process_usd_per_day > 0:
            # The whole process's day, under a lock of its own taken after the workspace's and never before it
            # (no transaction waits for a workspace while holding this one, so no two wait for each other).
            await tx.serialize("spend")
            process_today = await tx.process_spend(day_window(now, limits.tz)[0])
            remaining = min(remaining, limits.process_usd_per_day - process_today)
        return turns_that_fit(len(step.turns), remaining, estimate), (spent_today, process_today), estimate

    async def _out_of_budget(self, d: Discussion, step: RunTurns, spent_today: tuple[float, float]) -> None:
        """No turn fits: the discussion stops (or its waiting answers are dropped) and the thread says why."""
        limits, now = self.config.limits, self.clock.now()
        daily = day_refusal(limits, *spent_today, now)
        if daily:
            await self._stop_for_budget(d, step, daily, daily=True)
        else:
            await self._stop_for_budget(d, step, f"budget reached: ${d.cost_usd:.2f} spent of ${d.budget_usd:.2f}")

    async def _stop_for_budget(self, seen: Discussion, step: RunTurns, reason: str, daily: bool = False) -> None:
        """A discussion over its own budget stops for good; over the workspace's daily budget it is blocked, so
        Retry continues it once the day resets. Answers waiting between rounds are dropped, saying so."""
        now = self.clock.now()
        why = reason if daily else f"the discussion's {reason}"
        async with self.fenced(seen.id) as (tx, d):
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
