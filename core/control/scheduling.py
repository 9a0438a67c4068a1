"""The timer: one leader process per platform runs APScheduler 3 over the schedule table and the deadlines of open
polls (sole apscheduler user)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import zlib
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from core.ports import Clock, SystemClock
from core.storage.store import Store

log = logging.getLogger(__name__)

LEADER_LOCK = 0x6C0C12  # with a platform's checksum: one advisory lock, and so one leader, per chat platform
# The lock lives as long as its session; these make PostgreSQL notice a vanished leader host within about a
# minute instead of the kernel's two hours (a killed process closes its socket and frees the lock at once).
KEEPALIVES = ("tcp_keepalives_idle = 30", "tcp_keepalives_interval = 10", "tcp_keepalives_count = 3")
DRIFT = timedelta(seconds=1)  # a registered job this close to the wanted time is left alone
POLL_JOB = "poll:"  # a poll's deadline job is named by its poll id after this (a schedule row's by its id alone)
REMIND_JOB = "remind:"  # a poll's reminder before its deadline, named the same way
Closing = Callable[[int], Awaitable[bool]]  # close a poll whose deadline passed (the service's Voting)
Reminding = Callable[[int], Awaitable[int]]  # remind a poll's missing voters (core.control.reminding)
Remind = Callable[[datetime], datetime]  # when a poll closing at this time reminds
HANDOFF_PASSES = 5  # loop passes in which APScheduler starts a job that is due (a timer of 0 s, then a task)
HANDOFF_ROUNDS = 100  # `settled` gives up after this many rounds of jobs coming due (its caller then sees why)


def lock_key(platform: str) -> int:
    return (LEADER_LOCK << 32) | zlib.crc32(platform.encode())


class Firing(Protocol):
    """What a firing hands the slot to (the service's Schedules)."""

    async def fire(self, schedule_id: int) -> bool: ...

    async def deliver_digests(self, platforms: Collection[str] | None = None) -> int: ...


@dataclass
class SchedulerConfig:
    platforms: tuple[str, ...] = ("console",)  # the chat platforms this process serves: it may lead their rows
    reload_s: float = 10.0  # the leader re-reads the table this often (rows written by other replicas)
    leader_retry_s: float = 15.0  # a process that does not lead tries to take the lock this often
    wall: Clock = field(default_factory=SystemClock)  # the clock APScheduler waits on: the real one but in tests


class Scheduler:
    """`await start()` on every long-running replica; per platform, only the one holding its lock fires rows.

    The schedule table is the source of truth: APScheduler (in-memory job store, never shared) holds one
    date job per enabled row, at the row's next_run_at as seen by the injected clock. A job hands the id to
    `Firing.fire`, whose compare-and-set on next_run_at lets exactly one firing of a slot win. An open poll with a
    deadline gets a date job too, which hands its id to `closing` (closing a poll already closed changes nothing):
    the table is read again at start-up and at every reload, so a restart misses no deadline.
    """

    def __init__(self, store: Store, target: Firing, clock: Clock, config: SchedulerConfig | None = None,
                 closing: Closing | None = None, reminding: tuple[Reminding, Remind] | None = None) -> None:
        self.store, self.target, self.clock, self.closing = store, target, clock, closing
        self.reminding = reminding
        self.config = config or SchedulerConfig()
        self._aps: AsyncIOScheduler | None = None
        self._lock_engine: AsyncEngine | None = None
        self._leading: dict[str, AsyncConnection | None] = {}  # platform -> its lock's session (None on SQLite)
        self._task: asyncio.Task[None] | None = None
        self._poke = asyncio.Event()
        self._running: set[str] = set()  # the jobs firing now, by job id
        self._synced = asyncio.Event()  # set by each tick that no poke came during; cleared by a poke
        self._quiet = asyncio.Event()  # set while no job fires
        self._quiet.set()

    @property
    def is_leader(self) -> bool:
        return bool(self._leading)

    @property
    def leading(self) -> set[str]:
        return set(self._leading)

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for platform in list(self._leading):
            await self._release(platform)
        self._sync_timer()
        for _ in range(100):  # let a firing in flight finish its transaction before the store closes
            if not self._running:
                break
            await asyncio.sleep(0.05)
        if self._lock_engine is not None:
            await self._lock_engine.dispose()
            self._lock_engine = None

    def poke(self) -> None:
        """Schedule rows changed in this process: sync the jobs now instead of at the next reload."""
        self._synced.clear()
        self._poke.set()

    async def settled(self) -> None:
        """Return once the jobs match the table as of the last poke and every job due by then has fired (tests and
        diagnostics: the timer itself never waits on this). No timer is waited on: only the loop's own work."""
        await self._synced.wait()
        for _ in range(HANDOFF_ROUNDS):
            for _ in range(HANDOFF_PASSES):  # APScheduler hands a due job to a task of its own within a pass or two
                await asyncio.sleep(0)
            if self._running:
                await self._quiet.wait()
            elif not self._due():
                return

    def _due(self) -> bool:
        """Whether a job's time has come on the clock APScheduler waits on, and it has not fired yet."""
        now = self.config.wall.now()
        return self._aps is not None and any(j.next_run_time is not None and j.next_run_time <= now
                                             for j in self._aps.get_jobs())

    def _began(self, job_id: str) -> None:
        self._running.add(job_id)
        self._quiet.clear()

    def _ended(self, job_id: str) -> None:
        self._running.discard(job_id)
        if not self._running:
            self._quiet.set()

    # leadership --------------------------------------------------------------------------------------
    async def _loop(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("scheduler tick failed; trying again")
            if not self._poke.is_set():  # a poke during the tick is synced by the next one
                self._synced.set()
            wait = self.config.reload_s if self.is_leader else self.config.leader_retry_s
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._poke.wait(), wait)
            self._poke.clear()

    async def tick(self) -> None:
        """Check the leads held are still ours, take the free ones, and sync jobs with the table."""
        for platform, conn in list(self._leading.items()):
            if not await self._alive(conn):
                log.warning("lost the %s scheduler lead (its database session ended)", platform)
                await self._release(platform)
        for platform in self.config.platforms:
            if platform not in self._leading and await self._try_lead(platform):
                log.info("this process leads the %s schedules", platform)
        self._sync_timer()
        if self.is_leader:
            await self.reload()
            await self.target.deliver_digests(self.leading)  # any a dead sender claimed but never posted

    def _sync_timer(self) -> None:
        if self._leading and self._aps is None:
            self._aps = AsyncIOScheduler(timezone=UTC)
            self._aps.start()
        elif not self._leading and self._aps is not None:
            self._aps.shutdown(wait=False)
            self._aps = None

    async def _try_lead(self, platform: str) -> bool:
        engine = self.store.engine
        if engine.dialect.name != "postgresql":
            self._leading[platform] = None  # SQLite serves one process: it leads trivially
            return True
        if self._lock_engine is None:
            # Its own connections outside the pool: closing one must end the session and free the lock.
            self._lock_engine = create_async_engine(engine.url, poolclass=NullPool)
        conn = await self._lock_engine.connect()
        try:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for setting in KEEPALIVES:
                await conn.exec_driver_sql(f"SET {setting}")
            got = (await conn.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": lock_key(platform)})).scalar()
        except BaseException:
            await conn.close()
            raise
        if not got:
            await conn.close()
            return False
        self._leading[platform] = conn
        return True

    @staticmethod
    async def _alive(conn: AsyncConnection | None) -> bool:
        if conn is None:
            return True
        try:
            await asyncio.wait_for(conn.exec_driver_sql("SELECT 1"), 10)
        except Exception:
            return False
        return True

    async def _release(self, platform: str) -> None:
        conn = self._leading.pop(platform, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    # jobs --------------------------------------------------------------------------------------------
    async def reload(self) -> None:
        """Make the jobs match the enabled rows: add new ones, move changed ones, drop removed ones."""
        if self._aps is None:
            return
        async with self.store.tx() as tx:
            rows = await tx.schedules()
            polls = await tx.poll_deadlines(sorted(self._leading)) if self.closing is not None else []
            unreminded = await tx.poll_reminders(sorted(self._leading)) if self.reminding is not None else []
        wanted = {s.id: s.next_run_at for s in rows if s.next_run_at is not None and s.platform in self._leading}
        due = dict(polls)
        remind = {poll_id: self.reminding[1](closes_at) for poll_id, closes_at in unreminded} if self.reminding \
            else {}
        for job in self._aps.get_jobs():
            if job.id.startswith(POLL_JOB):
                gone = int(job.id.removeprefix(POLL_JOB)) not in due
            elif job.id.startswith(REMIND_JOB):
                gone = int(job.id.removeprefix(REMIND_JOB)) not in remind
            else:
                gone = int(job.id) not in wanted
            if gone:
                job.remove()
        for schedule_id, slot in wanted.items():
            self._register(schedule_id, slot)
        for poll_id, closes_at in due.items():
            self._register(poll_id, closes_at, poll=True)
        for poll_id, at in remind.items():
            self._register(poll_id, at, prefix=REMIND_JOB)

    def _register(self, target_id: int, slot: datetime, *, poll: bool = False, prefix: str = "") -> None:
        prefix = POLL_JOB if poll else prefix
        job_id = f"{prefix}{target_id}"
        if self._aps is None or job_id in self._running:
            return
        # APScheduler waits on the real clock; the wait is measured on the injected one (the same in production).
        run_at = self.config.wall.now() + max(timedelta(0), slot - self.clock.now())
        job = self._aps.get_job(job_id)
        if job is not None and job.next_run_time is not None and abs(job.next_run_time - run_at) < DRIFT:
            return
        # A due row past its time (downtime) runs once at start-up: coalesce, and no misfire grace limit.
        run = {POLL_JOB: self._close, REMIND_JOB: self._remind}.get(prefix, self._job)
        self._aps.add_job(run, DateTrigger(run_date=run_at, timezone=UTC),
                          args=[target_id], id=job_id, replace_existing=True, coalesce=True,
                          misfire_grace_time=None, max_instances=1)

    async def _close(self, poll_id: int) -> None:
        """A poll's deadline: close it (a timer a hair early finds it not yet due; the next reload comes back)."""
        if self.closing is None:
            return
        job_id = f"{POLL_JOB}{poll_id}"
        self._began(job_id)
        try:
            await self.closing(poll_id)
        except Exception:
            log.exception("poll %s failed to close at its deadline; the next reload tries again", poll_id)
        finally:
            self._ended(job_id)

    async def _remind(self, poll_id: int) -> None:
        """An hour before a poll's deadline: its reminder, claimed once in the table whichever replica fires it."""
        if self.reminding is None:
            return
        job_id = f"{REMIND_JOB}{poll_id}"
        self._began(job_id)
        try:
            await self.reminding[0](poll_id)
        except Exception:
            log.exception("poll %s failed to remind; the next reload tries again", poll_id)
        finally:
            self._ended(job_id)

    async def _job(self, schedule_id: int) -> None:
        self._began(str(schedule_id))
        try:
            await self.target.fire(schedule_id)
            async with self.store.tx() as tx:
                row = await tx.schedule(schedule_id)
        except Exception:
            log.exception("schedule %s failed to fire; the next reload tries again", schedule_id)
            return
        finally:
            self._ended(str(schedule_id))
        if row is not None and row.enabled and row.next_run_at is not None:
            self._register(schedule_id, row.next_run_at)  # the next slot (or the same one, if it was early)

    def jobs(self) -> dict[int, datetime]:
        """Registered jobs and when APScheduler will run them (tests, diagnostics)."""
        if self._aps is None:
            return {}
        return {int(j.id): j.next_run_time for j in self._aps.get_jobs()
                if j.next_run_time is not None and j.id.isdigit()}

    def deadlines(self) -> dict[int, datetime]:
        """Registered poll deadlines (poll id -> when APScheduler will close it), for tests and diagnostics."""
        if self._aps is None:
            return {}
        return {int(j.id.removeprefix(POLL_JOB)): j.next_run_time for j in self._aps.get_jobs()
                if j.next_run_time is not None and j.id.startswith(POLL_JOB)}

    def reminders(self) -> dict[int, datetime]:
        """Registered poll reminders (poll id -> when APScheduler will send it), for tests and diagnostics."""
        if self._aps is None:
            return {}
        return {int(j.id.removeprefix(REMIND_JOB)): j.next_run_time for j in self._aps.get_jobs()
                if j.next_run_time is not None and j.id.startswith(REMIND_JOB)}
