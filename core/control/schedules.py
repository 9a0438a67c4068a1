"""The service's time-driven side: scheduling rounds and digests, and running a due slot exactly once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from datetime import datetime, timedelta
from typing import Any, Protocol

from core.control import commands as c
from core.control.guard import GuardConfig
from core.control.permissions import check_digest
from core.control.replies import Reply, UserError
from core.deliberation import engine
from core.models import Discussion, NextAction, Post, PostFile, Schedule, Status
from core.ports import Clock
from core.running.driver import Driver, load_state
from core.running.effects import save_discussion
from core.running.spending import day_refusal, day_window
from core.showing import digest
from core.showing.moments import mark
from core.storage.store import Store, Tx
from core.when.timeparse import (
    TimeParseError,
    describe,
    first_slot,
    next_slot,
    parse_every,
    parse_when,
    validate_cron,
    zone,
)

log = logging.getLogger(__name__)

# A timer may wake a hair before the slot (event-loop granularity); that still counts as due.
EARLY = timedelta(seconds=1)
OFF_WORDS = {"off", "cancel", "none", "stop", "never"}
DIGEST_CRON = {"daily": "0 9 * * *", "weekly": "0 9 * * 1"}  # 09:00, and Mondays 09:00, in the digest's zone
SCHEDULER_NAME = "The schedule"


def round_trigger(when: str, every: str, tz: str, now: datetime) -> tuple[str, datetime]:
    """("every:<s>" | "at:<iso>", first slot) from "--next"/"--every" words; raises UserError if unclear."""
    try:
        zone(tz)
        seconds = parse_every(every) if every.strip() else None
        first = parse_when(when, now, tz) if when.strip() else None
    except TimeParseError as exc:
        raise UserError(str(exc)) from None
    if seconds is not None:
        return f"every:{seconds}", first or now + timedelta(seconds=seconds)
    if first is None:
        raise UserError("Say when: for example `tomorrow 09:00`, `in 1 hour` or `--every 1d`.")
    return f"at:{first.isoformat()}", first


class Steering(Protocol):
    """What a scheduled round needs of the service: the discussion the asker may act on, and its steering."""

    @property
    def config(self) -> GuardConfig: ...  # who may do what (the digest rules), and the limits

    async def get(self, tx: Tx, discussion_id: str) -> Discussion: ...
    async def choose(self, tx: Tx, d: Discussion, action: NextAction, user_name: str, topic: str = "") -> str: ...
    async def reopen(self, tx: Tx, d: Discussion, user_name: str, *, then_round: bool) -> None: ...


class Schedules:
    """Held by the service: ScheduleRound, SetDigest, ForgetWorkspace, StartDiscussion's --every/--next, and
    fire(schedule_id) for the timer."""

    def __init__(self, store: Store, driver: Driver, clock: Clock, steering: Steering) -> None:
        self.store, self.driver, self.clock, self.steering = store, driver, clock, steering
        # Set by the wiring: tells this process's scheduler (when it leads) that schedule rows changed.
        self.on_changed: Callable[[], None] | None = None

    def changed(self) -> None:
        if self.on_changed is not None:
            self.on_changed()

    # commands ----------------------------------------------------------------------------------------
    async def schedule_start(self, tx: Tx, cmd: c.StartDiscussion, d: Discussion) -> str:
        """Inside StartDiscussion's transaction: the follow-up schedule it asks for; "" when none."""
        if not (cmd.every.strip() or cmd.next_at.strip()):
            return ""
        trigger, first = round_trigger(cmd.next_at, cmd.every, d.tz, self.clock.now())
        await self._save_round(tx, d.id, d.platform, d.workspace, trigger, d.tz, first, cmd.user_id)
        return f" Next round: {mark(first, d.tz, relative=True)}" + (f", then {describe(trigger, d.tz)}."
                                                            if trigger.startswith("every") else ".")

    async def _save_round(
        self, tx: Tx, discussion_id: str, platform: str, workspace: str, trigger: str, tz: str, first: datetime,
        user_id: str,
    ) -> Schedule:
        existing = await tx.find_schedule("round", platform, workspace, discussion_id)
        return await tx.upsert_schedule(
            Schedule(kind="round", target=discussion_id, platform=platform, workspace=workspace, trigger=trigger,
                     tz=tz, next_run_at=first, last_run_at=existing.last_run_at if existing else None,
                     created_by=user_id),
            self.clock.now(),
        )

    async def schedule_round(self, cmd: c.ScheduleRound) -> Reply:
        now = self.clock.now()
        async with self.store.tx() as tx:
            d = await self.steering.get(tx, cmd.discussion_id)
            tz = cmd.tz or d.tz
            existing = await tx.find_schedule("round", d.platform, d.workspace, d.id)
            if cmd.when.strip().lower() in OFF_WORDS:
                if existing is None or not existing.enabled:
                    return Reply(text="This discussion has no scheduled rounds.")
                await tx.upsert_schedule(existing.model_copy(update={"enabled": False}), now)
                text = f"🗓️ {cmd.user_name or 'Someone'} cancelled the scheduled rounds."
            else:
                if d.status in (Status.DONE, Status.STOPPED):
                    raise UserError(f"This discussion is {d.status.value}; start a new one instead.")
                trigger, first = round_trigger(cmd.when, cmd.every, tz, now)
                await self._save_round(tx, d.id, d.platform, d.workspace, trigger, tz, first, cmd.user_id)
                then = f", then {describe(trigger, tz)}" if trigger.startswith("every") else ""
                when = mark(first, tz, relative=True)
                text = f"🗓️ {cmd.user_name or 'Someone'} scheduled the next round for {when}{then}."
            await tx.enqueue(d.id, Post(kind="notice", key=f"{d.id}:scheduled:{now.timestamp()}", text=text), now)
            await save_discussion(tx, d, now)  # the header shows the next round (or no longer does)
        self.changed()
        return Reply(text=text.removeprefix("🗓️ "), discussion_id=d.id)

    async def forget_workspace(self, cmd: c.ForgetWorkspace) -> Reply:
        async with self.store.tx() as tx:
            removed = await tx.forget_schedules(cmd.platform, cmd.workspace)
        log.info("left %s workspace %s: %d schedule(s) removed", cmd.platform, cmd.workspace, removed)
        self.changed()
        return Reply(text=f"Removed {removed} schedule(s).")

    async def set_digest(self, cmd: c.SetDigest) -> Reply:
        now = self.clock.now()
        async with self.store.tx() as tx:
            existing = await tx.find_schedule("digest", cmd.platform, cmd.workspace, cmd.channel, for_update=True)
            check_digest(self.steering.config.policy, cmd, existing)  # before anything changes
            if cmd.cadence == "off":
                if existing is None or not existing.enabled:
                    return Reply(text="There is no digest for that channel.")
                await tx.upsert_schedule(existing.model_copy(update={"enabled": False}), now)
                self.changed()
                return Reply(text="Digest turned off.")
            try:
                zone(cmd.tz)
                expr = validate_cron(cmd.cron) if cmd.cadence == "cron" else DIGEST_CRON[cmd.cadence]
            except TimeParseError as exc:
                raise UserError(str(exc)) from None
            trigger = f"cron:{expr}"
            first = first_slot(trigger, cmd.tz, now)
            await tx.upsert_schedule(
                Schedule(kind="digest", target=cmd.channel, platform=cmd.platform, workspace=cmd.workspace,
                         trigger=trigger, tz=cmd.tz, next_run_at=first, created_by=cmd.user_id,
                         last_run_at=existing.last_run_at if existing else None),
                now,
            )
        self.changed()
        label = {"daily": "daily at 09:00", "weekly": "weekly, Mondays at 09:00"}.get(cmd.cadence, f"cron `{expr}`")
        assert first is not None
        return Reply(text=f"Digest scheduled: {label}; the first one {mark(first, cmd.tz, relative=True)}.")

    # firing ------------------------------------------------------------------------------------------
    async def fire(self, schedule_id: int) -> bool:
        """Run the schedule's due slot if this caller wins it (compare-and-set on next_run_at); missed slots
        collapse into this one firing. False when it is not due or another firing won."""
        now = self.clock.now()
        async with self.store.tx() as tx:
            s = await tx.schedule(schedule_id)
            if s is None or not s.enabled or s.next_run_at is None or s.next_run_at > now + EARLY:
                return False
            if s.platform not in self.driver.chats:
                return False  # a process serving that platform runs it
            slot = s.next_run_at
            at = max(now, slot)
            following = next_slot(s.trigger, s.tz, slot, at)
            if not await tx.claim_firing(s.id, slot, following, at):
                return False
            if s.kind == "digest":
                start = s.last_run_at or await tx.schedule_created_at(s.id) or slot
                await tx.add_digest(s.id, slot, start, at, at)
            else:
                # Started in the claim's own transaction: a crash cannot claim a slot and lose its round.
                started = await self._start_round(tx, s, slot, following)
        log.info("schedule %s (%s %s) fired for slot %s", s.id, s.kind, s.target, slot.isoformat())
        if s.kind == "round":
            if started:
                self.driver.kick(s.target)
        else:
            await self.deliver_digests()
        return True

    async def _start_round(self, tx: Tx, s: Schedule, slot: datetime, following: datetime | None) -> bool:
        now = self.clock.now()
        d = await tx.discussion(s.target, for_update=True)
        if d is None or d.status in (Status.DONE, Status.STOPPED):
            await tx.upsert_schedule(s.model_copy(update={"enabled": False}), now)
            log.info("round schedule %s ends: discussion %s is %s", s.id, s.target, d and d.status.value)
            return False
        if d.status not in (Status.WAITING, Status.PAUSED):
            log.info("scheduled round for %s skipped: the discussion is %s", d.id, d.status.value)
            return False
        people = await self._participants(tx, d)
        state = await load_state(tx, d.id)
        # A discussion paused mid-round finishes that round first.
        goes_on = d.status == Status.PAUSED and state is not None and not engine.round_complete(state)
        what = f"Round {d.round} goes on from where it paused" if goes_on else f"Scheduled round {d.round + 1} starts"
        await tx.enqueue(d.id, Post(
            kind="notice", key=f"{d.id}:sched:{slot:%Y%m%dT%H%M%S}", mentions=people,
            text=f"⏰ {what} now. Reply in this thread: the council hears you in this round."
                 + (f" The round after this one: {mark(following, s.tz, relative=True)}." if following else ""),
        ), now)
        if d.status == Status.WAITING:
            await self.steering.choose(tx, d, NextAction.ANOTHER_ROUND, SCHEDULER_NAME)
        else:
            await self.steering.reopen(tx, d, SCHEDULER_NAME, then_round=True)
        return True

    @staticmethod
    async def _participants(tx: Tx, d: Discussion) -> list[str]:
        """The humans who took part, in order of appearance: the starter, writers, voters."""
        ids = [d.created_by] + [m.author_id for m in await tx.human_messages(d.id)]
        for poll in await tx.polls(d.id):
            ids += [b.voter_id for b in await tx.ballots(poll.id) if not b.is_ai]
        return list(dict.fromkeys(i for i in ids if i))

    async def deliver_digests(self, platforms: Collection[str] | None = None) -> int:
        """Send the claimed digests nobody has sent (after a firing, and to recover from a dead sender)."""
        config = self.driver.config
        served = sorted(set(self.driver.chats) & set(self.driver.chats if platforms is None else platforms))
        async with self.store.tx() as tx:
            rows = await tx.claim_digests(config.owner, self.clock.now(), config.lease_ttl, served)
        # Side by side: each digest due this minute must land within it, whatever the others' model calls take.
        return sum(await asyncio.gather(*(self._deliver(row) for row in rows)))

    async def _deliver(self, row: dict[str, Any]) -> int:
        try:
            return await self._send_digest(row)
        except Exception:
            log.exception("digest %s could not be sent; it is retried after its lease", row["id"])
            return 0

    @staticmethod
    async def _charts(material: digest.Material) -> list[PostFile]:
        """The digest's vote chart (a courtesy: a digest goes out without it rather than not at all)."""
        from core.showing import charts

        try:
            return await asyncio.to_thread(charts.digest_files, [(i.discussion.topic, i.votes[-1])
                                                                 for i in material.covered if i.votes])
        except Exception:
            log.warning("could not draw the digest's chart", exc_info=True)
            return []

    async def _send_digest(self, row: dict[str, Any]) -> int:
        async with self.store.tx() as tx:
            s = await tx.schedule(row["schedule_id"])
            assert s is not None
            material = await digest.gather(tx, s, row["period_start"], row["period_end"])
        chat = self.driver.chats[s.platform]
        key = f"digest:{s.id}:{row['slot']:%Y%m%dT%H%M%SZ}"
        # A sender that died between posting and recording leaves attempts > 0: look for its post first.
        ref = await chat.find_announcement(s.workspace, s.target, key) if row["attempts"] > 0 else None
        if not ref:
            post = await self._written(row, material, key)
            post.files = await self._charts(material)  # drawn from the database alone: no model, same chart
            # Writing it (a model call, a chart) may have outlasted the claim's lease, and another delivery may
            # have claimed the digest, looked for it, found nothing and sent it: sent only while still ours.
            if not await self._still_ours(row):
                log.info("digest %s was claimed by another delivery while it was written; left to it", row["id"])
                return 0
            ref = await chat.announce(s.workspace, s.target, post)
        async with self.store.tx() as tx:
            await tx.mark_digest_sent(row["id"], ref, self.clock.now())
        return 1

    async def _still_ours(self, row: dict[str, Any]) -> bool:
        """Whether the digest claimed as `row` is still this delivery's to send: nobody claimed it since (its lease
        is extended for another lifetime) and that lifetime has not run out by the time this answers (a process
        starved after the statement must not send on a lease another may have taken)."""
        config, now = self.driver.config, self.clock.now()
        async with self.store.tx() as tx:  # the claim counted one attempt more than the row it returned
            held = await tx.hold_digest(row["id"], row["attempts"] + 1, config.owner, now, config.lease_ttl)
        return held and self.clock.now() < now + timedelta(seconds=config.lease_ttl)

    async def _hold_day(self, material: digest.Material, at: datetime) -> float | None:
        """Hold the digest's model call at its worst case (every attempt included) in the workspace's spend for
        the day, as a turn holds its own, so digests written together each see the others; None: the workspace's
        or the process's budget for the day has no room for it (nothing held)."""
        limits, s = self.driver.config.limits, material.schedule
        if limits.workspace_usd_per_day <= 0 and limits.process_usd_per_day <= 0:
            return 0.0
        worst = limits.attempts.call_usd(self.driver.llm.worst_case_usd(digest.prompt(material.covered)))
        since = day_window(at, limits.tz)[0]
        async with self.store.tx() as tx:
            spent = process = 0.0
            if limits.workspace_usd_per_day > 0:  # locks as a turn's start takes them: the workspace's first
                await tx.serialize("spend", s.platform, s.workspace)
                spent = await tx.workspace_spend(s.platform, s.workspace, since)
            if limits.process_usd_per_day > 0:
                await tx.serialize("spend")
                process = await tx.process_spend(since)
            refusal = day_refusal(limits, spent, process, at, more=worst)
            if refusal:
                log.info("digest %s written without the model: %s", s.id, refusal)
                return None
            if worst > 0:
                await tx.hold_workspace_spend(s.platform, s.workspace, at, worst)
        return worst

    async def _written(self, row: dict[str, Any], material: digest.Material, key: str) -> Post:
        """The digest's words: those kept from an earlier attempt, else written now (the model condenses the
        period) and kept, with the model's cost, before anything is sent; a retry never writes it anew."""
        if row.get("post"):
            return Post.model_validate(row["post"])
        chat = self.driver.chats[material.schedule.platform]
        await digest.links(chat, material.covered + material.waiting)
        for item in material.covered + material.waiting:
            item.page = self.driver.config.pages.url(item.discussion.id, self.clock.now(),
                                                         item.discussion.options.links)
        where, held_at = (material.schedule.platform, material.schedule.workspace), self.clock.now()
        held = await self._hold_day(material, held_at)
        try:
            if held is not None:
                summary, usage = await digest.condense(self.driver.llm, material.covered)
            else:  # the day's budget is spent: the digest goes out from the stored syntheses, as when the model fails
                summary, usage = digest.fallback_summary(material.covered), None
            post = digest.render(material, summary, key, self.driver.llm.offline)
            async with self.store.tx() as tx:
                await tx.set_digest_post(row["id"], post.model_dump(mode="json", exclude={"files"}))
                if held:  # the hold gives way to what the call cost, in the transaction that charges it
                    await tx.hold_workspace_spend(*where, held_at, -held)
                if usage is not None:
                    # charged to the workspace's daily budget like any discussion's model call
                    await tx.add_usage(None, key, usage, self.clock.now(), workspace=where)
            held = None
            return post
        finally:
            if held:  # never charged (it failed on the way): its hold is given back, or the day stays short
                async with self.store.tx() as tx:
                    await tx.hold_workspace_spend(*where, held_at, -held)
