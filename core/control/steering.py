"""Steering a running discussion: its next step chosen, the final synthesis asked for, paused, resumed, stopped,
and its failed turns retried or skipped."""

from __future__ import annotations

from dataclasses import dataclass

from core.control import commands as c
from core.control.desk import Desk
from core.control.replies import Reply, UserError
from core.deliberation import engine, question
from core.models import NEXT_ACTION_LABELS, Discussion, NextAction, Phase, Post, Status, TurnStatus
from core.running.driver import Driver, load_state
from core.running.effects import close_polls, save_discussion
from core.showing.posts import writer_name
from core.storage.store import Tx


@dataclass(eq=False)
class Steering(Desk):
    """ChooseNextAction, Synthesize, Pause, Resume, Stop, RetryTurns and SkipTurns; choose and reopen are also how
    the schedules start a scheduled round."""

    driver: Driver

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
                question.open_new(d)  # the old topic's options leave the table; the record keeps them
        # The choice first, then what it sets off (the round's polls closed, the header's "Running"), so the
        # thread reads in the order things happened.
        detail = f": {d.round_topic}" if action in (NextAction.DEEP_DIVE, NextAction.DIFFERENT_TOPIC) else ""
        end = "" if detail.rstrip().endswith((".", "?", "!")) else "."  # a topic that is a question ends itself
        said = f"{user_name or 'Someone'} chose **{label}**{detail}{end}"
        asked = f"{d.id}:r{chosen_round}:choice:{d.resume_count}"
        if await tx.has_post(asked):  # one post per event: the choice is shown where it was made, its buttons gone
            await tx.enqueue(d.id, Post(kind="choice", key=f"{asked}:chosen", replaces=asked,
                                        text=f"**Round {chosen_round} is complete.** ✅ {said}"), now)
        else:  # nowhere to show it in place (no choice was posted): a line of its own
            await self.notice(tx, d, f"{d.id}:r{chosen_round}:chose:{d.resume_count}", f"➡️ {said}")
        if d.round > chosen_round:
            await close_polls(tx, d, now, before_round=d.round, offline=self.driver.llm.offline)
        await save_discussion(tx, d, now)
        return label

    async def synthesize(self, cmd: c.Synthesize) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status not in (Status.RUNNING, Status.WAITING, Status.PAUSED) or d.pending == "final":
                raise UserError(f"This discussion can't be synthesized now: it is {d.status.value}.")
            waiting = d.status == Status.WAITING
            d.status, d.pending = Status.RUNNING, "final"
            await save_discussion(tx, d, self.clock.now())
            said = (f"📜 {cmd.user_name or 'Someone'} asked for the final synthesis; "
                    f"{writer_name(d, Phase.FINAL_SYNTHESIS)} is writing it after the current turn.")
            if not (waiting and await self._settle_choice(tx, d, said)):
                await self.notice(tx, d, f"{d.id}:synthesize:{d.round}:{d.resume_count}", said)
        return Reply(text=f"{writer_name(d, Phase.FINAL_SYNTHESIS).capitalize()} will write the final synthesis.",
                     discussion_id=d.id)

    async def _settle_choice(self, tx: Tx, d: Discussion, said: str) -> bool:
        """A step typed while the round's choice waits is shown in that message, its buttons gone (one post per
        event, and no stale choice left open); False when no choice was posted."""
        asked = f"{d.id}:r{d.round}:choice:{d.resume_count}"
        if not await tx.has_post(asked):
            return False
        await tx.enqueue(d.id, Post(kind="choice", key=f"{asked}:chosen", replaces=asked,
                                    text=f"**Round {d.round} is complete.** {said}"), self.clock.now())
        return True

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
            waiting = d.status == Status.WAITING
            d.status, d.pending = Status.RUNNING, "pause"
            await save_discussion(tx, d, self.clock.now())
            said = (f"⏸️ {cmd.user_name or 'Someone'} paused the discussion; "
                    f"{writer_name(d, Phase.RESUME_SUMMARY)} is writing a resume summary.")
            if not (waiting and await self._settle_choice(tx, d, said)):
                await self.notice(tx, d, f"{d.id}:pausing:{d.resume_count}", said)
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

    async def _blocked(self, tx: Tx, discussion_id: str, doing: str) -> Discussion:
        """The discussion, if it is blocked: retrying and skipping only act on the turns that blocked it."""
        d = await self.get(tx, discussion_id)
        if d.status != Status.BLOCKED:
            raise UserError(f"Nothing to {doing}: the discussion is not blocked.")
        return d

    async def retry_turns(self, cmd: c.RetryTurns) -> Reply:
        async with self.store.tx() as tx:
            return await self._retry(tx, await self._blocked(tx, cmd.discussion_id, "retry"), cmd)

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
            d = await self._blocked(tx, cmd.discussion_id, "skip")
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
