"""The APScheduler leader over the schedule table: jobs from rows at start-up, a restart fires a missed slot once,
and on PostgreSQL one replica leads at a time. The schedule clock is injected: no test waits for a slot, and the
timer says when it has settled (synced and fired what is due), so no test polls either."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.scheduling import Scheduler
from core.models import Schedule, Status
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

T0 = datetime(2026, 3, 2, 7, 0, tzinfo=UTC)


async def settled(scheduler: Scheduler | None) -> None:
    """The timer synced and what was due fired (its own signal; the limit only turns a hang into a failure)."""
    assert scheduler is not None
    await asyncio.wait_for(scheduler.settled(), 10)


def settings(url: str) -> Settings:
    return Settings(_env_file=None, database_url=url, council_schedule_reload_s=3600,  # type: ignore[call-arg]
                    council_leader_retry_s=3600)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'council.db'}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def apps() -> AsyncIterator[list[App]]:
    made: list[App] = []
    yield made
    for app in made:
        await app.close()


async def schedule(app: App, kind: str, target: str) -> Schedule:
    async with app.store.tx() as tx:
        s = await tx.find_schedule(kind, "console", "", target)
    assert s is not None
    return s


async def test_jobs_are_registered_from_the_table_at_start_up_and_on_change(
    sqlite_url: str, clock: FakeClock, apps: list[App]
) -> None:
    first = await build_app(settings(sqlite_url), {"console": RecordingChat()}, llm=ScriptedLLM(), clock=clock)
    apps.append(first)
    await first.service.handle(c.SetDigest(is_admin=True, platform="console", channel="C1", cadence="cron",
                                           cron="0 * * * *"))
    await first.close()
    apps.remove(first)

    # APScheduler waits on the wall clock: one held at this moment, so the job is due exactly an hour after it (and
    # APScheduler, on the real clock, leaves it for an hour).
    wall = FakeClock(datetime.now(UTC))
    app = await build_app(settings(sqlite_url), {"console": RecordingChat()}, llm=ScriptedLLM(), clock=clock,
                          scheduler=True, wall=wall)
    apps.append(app)
    assert app.scheduler is not None
    await settled(app.scheduler)  # the start-up sync
    assert len(app.scheduler.jobs()) == 1
    digest = await schedule(app, "digest", "C1")
    run_at = app.scheduler.jobs()[digest.id]
    assert run_at == wall.now() + timedelta(hours=1)  # the next slot, 08:00, is an hour after T0 on the row's clock

    # A row created in this process is registered at once, not at the next reload (an hour away here).
    await app.service.handle(c.SetDigest(is_admin=True, platform="console", channel="C2", cadence="daily"))
    await settled(app.scheduler)  # synced by the change's poke: no reload came (the next is an hour away)
    assert len(app.scheduler.jobs()) == 2
    await app.service.handle(c.SetDigest(is_admin=True, platform="console", channel="C2", cadence="off"))
    await settled(app.scheduler)
    assert len(app.scheduler.jobs()) == 1


async def test_a_restart_after_the_due_time_fires_the_missed_slots_once(
    sqlite_url: str, clock: FakeClock, apps: list[App]
) -> None:
    chat = RecordingChat()
    first = await build_app(settings(sqlite_url), {"console": chat}, llm=ScriptedLLM(), clock=clock, scheduler=True)
    apps.append(first)
    reply = await first.service.handle(c.StartDiscussion(topic="Trunk-based development?", channel="C1",
                                                         user_id="U1", every="1h"))
    await first.service.handle(c.SetDigest(is_admin=True, platform="console", channel="C1", cadence="cron",
                                           cron="* * * * *"))
    await first.driver.idle()
    did = reply.discussion_id
    await first.close()  # stopped before anything was due
    apps.remove(first)
    assert chat.announced == []

    clock.advance(hours=3, seconds=30)  # down for three hours: three round slots, 180 digest slots
    # The same chat: the platform keeps its messages while our process is down.
    app = await build_app(settings(sqlite_url), {"console": chat}, llm=ScriptedLLM(), clock=clock, scheduler=True)
    apps.append(app)
    assert app.scheduler is not None
    await settled(app.scheduler)  # the start-up sync fires what was missed
    await app.driver.idle()
    for _ in range(3):  # further reloads find nothing due: every job waits for a slot still ahead
        await app.scheduler.tick()
    assert min(app.scheduler.jobs().values()) > datetime.now(UTC) + timedelta(seconds=20)
    assert len(chat.announced) == 1, "the catch-up digest was posted more than once"
    assert sum(":sched:" in k for k in chat.keys(did)) == 1, "the missed round fired more than once"
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
        rows = await tx.digests()
    assert d is not None and d.round == 2 and d.status == Status.WAITING
    assert [(r["period_start"], r["period_end"]) for r in rows] == [(T0, clock.now())]
    assert (await schedule(app, "digest", "C1")).next_run_at == T0 + timedelta(hours=3, minutes=1)
    assert (await schedule(app, "round", did)).next_run_at == T0 + timedelta(hours=4)


async def test_the_timer_fires_a_row_when_the_injected_clock_reaches_it(
    sqlite_url: str, clock: FakeClock, apps: list[App]
) -> None:
    chat = RecordingChat()
    app = await build_app(settings(sqlite_url), {"console": chat}, llm=ScriptedLLM(), clock=clock, scheduler=True)
    apps.append(app)
    await app.service.handle(c.SetDigest(is_admin=True, platform="console", channel="C1", cadence="cron",
                                         cron="30 7 * * *"))
    assert app.scheduler is not None
    await settled(app.scheduler)
    [run_at] = app.scheduler.jobs().values()
    assert run_at > datetime.now(UTC) + timedelta(minutes=29) and chat.announced == []
    clock.advance(minutes=30)
    app.scheduler.poke()  # a reload measures the wait again on the moved clock
    await settled(app.scheduler)
    assert len(chat.announced) == 1
    assert (await schedule(app, "digest", "C1")).next_run_at == T0 + timedelta(days=1, minutes=30)


async def test_one_replica_leads_on_postgresql_and_another_takes_over_when_it_stops(
    pg_url: str, clock: FakeClock, apps: list[App]
) -> None:
    chats = [RecordingChat(), RecordingChat()]
    replicas = [await build_app(settings(pg_url), {"console": chat}, llm=ScriptedLLM(), clock=clock, scheduler=True,
                                owner=f"replica-{i}") for i, chat in enumerate(chats)]
    apps.extend(replicas)
    schedulers = [r.scheduler for r in replicas]
    assert schedulers[0] is not None and schedulers[1] is not None
    assert all(s is not None and s._task is not None for s in schedulers)  # started with its app
    for s in schedulers:
        await s.tick()  # type: ignore[union-attr]
    leaders = [s.is_leader for s in schedulers]  # type: ignore[union-attr]
    assert sorted(leaders) == [False, True]
    leader = leaders.index(True)

    # A digest set on the follower is fired by the leader, once.
    follower = replicas[1 - leader]
    await follower.service.handle(c.SetDigest(is_admin=True, platform="console", channel="C1", cadence="cron",
                                              cron="* * * * *"))
    clock.advance(minutes=1)
    await schedulers[leader].reload()  # type: ignore[union-attr]
    # Its job has recorded the digest sent: closing now cuts no delivery short. (Cut short after posting, the
    # digest is sent by the next leader, which finds it on the platform; these two chats share no platform, so
    # there it would show as a second announcement.)
    await settled(schedulers[leader])
    assert len(chats[leader].announced) == 1

    await replicas[leader].close()
    apps.remove(replicas[leader])
    await schedulers[1 - leader].tick()  # type: ignore[union-attr]
    assert schedulers[1 - leader].is_leader  # type: ignore[union-attr]
    clock.advance(minutes=1)
    await schedulers[1 - leader].reload()  # type: ignore[union-attr]
    await settled(schedulers[1 - leader])
    assert len(chats[1 - leader].announced) == 1
    assert len(chats[leader].announced) == 1


async def test_each_platform_has_its_own_leader_and_rows_of_other_platforms_are_left_alone(
    pg_url: str, clock: FakeClock, apps: list[App]
) -> None:
    slack, discord = RecordingChat("slack"), RecordingChat("discord")
    slack_app = await build_app(settings(pg_url), {"slack": slack}, llm=ScriptedLLM(), clock=clock, scheduler=True)
    apps.append(slack_app)
    discord_app = await build_app(settings(pg_url), {"discord": discord}, llm=ScriptedLLM(), clock=clock,
                                  scheduler=True)
    apps.append(discord_app)
    assert slack_app.scheduler is not None and discord_app.scheduler is not None
    for scheduler in (slack_app.scheduler, discord_app.scheduler):
        await scheduler.tick()
    assert slack_app.scheduler.leading == {"slack"} and discord_app.scheduler.leading == {"discord"}

    await discord_app.service.handle(c.SetDigest(is_admin=True, platform="slack", channel="C1", cadence="cron",
                                                 cron="* * * * *"))
    async with slack_app.store.tx() as tx:
        [row] = await tx.schedules()
    clock.advance(minutes=1)
    fired = await discord_app.service.schedules.fire(row.id)
    assert not fired, "a process fired a row for a platform it does not serve"
    await discord_app.scheduler.reload()
    await slack_app.scheduler.reload()
    assert discord_app.scheduler.jobs() == {} and list(slack_app.scheduler.jobs()) == [row.id]
    await settled(slack_app.scheduler)
    assert len(slack.announced) == 1
    assert discord.announced == []


async def test_concurrent_firings_from_two_replicas_run_each_slot_once_on_postgresql(
    pg_url: str, clock: FakeClock, apps: list[App]
) -> None:
    """Without the leader lock (two timers by mistake, or a lead changing hands mid-firing) the
    compare-and-set alone still lets exactly one firing of each slot win."""
    chats = [RecordingChat(), RecordingChat()]
    replicas = [await build_app(settings(pg_url), {"console": chat}, llm=ScriptedLLM(), clock=clock,
                                owner=f"replica-{i}") for i, chat in enumerate(chats)]
    apps.extend(replicas)
    for n in range(20):
        await replicas[0].service.handle(c.SetDigest(is_admin=True, platform="console", channel=f"C{n}", cadence="cron",
                                                     cron="* * * * *"))
    async with replicas[0].store.tx() as tx:
        ids = [s.id for s in await tx.schedules()]
    for _minute in range(2):
        clock.advance(minutes=1)
        results = await asyncio.gather(*(r.service.schedules.fire(i) for i in ids for r in replicas for _ in range(2)))
        assert sum(results) == len(ids)
    assert len(chats[0].announced) + len(chats[1].announced) == 2 * len(ids)
    async with replicas[0].store.tx() as tx:
        rows = await tx.digests()
    assert len(rows) == 2 * len(ids) and all(r["sent"] for r in rows)
