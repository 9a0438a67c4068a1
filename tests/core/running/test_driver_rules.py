"""Driver rules (core/running/driver.py), one at a time on both stores and a fixed clock: a kick drives a discussion
once (a kick while it runs wakes that driver), and the driver gives its lease back when it has nothing left to do;
a sweep claims what no live driver has and forgets old event ids and spend; shutdown lets running work finish for
its grace, then stops it and frees its lease; a halt stops the step and drives again; a platform's Retry-After
drives again once it is over; a failing driver is logged, never raised into the loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import func, insert, select

from core.models import Discussion, Post, Status
from core.ports import RateLimited
from core.running.config import DriverConfig
from core.running.driver import Driver
from core.storage import tables as t
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

ME, OTHER = "this-process", "another-process"
TTL = 60.0


class HeldChat(RecordingChat):
    """The recording chat, whose posts wait while `held` is unset (a slow platform), saying when one arrives;
    `limited`: the next post is refused with the platform's Retry-After of that many seconds."""

    def __init__(self) -> None:
        super().__init__("slack")
        self.held: asyncio.Event | None = None
        self.arrived = asyncio.Event()
        self.limited: float | None = None
        self.retracted: list[str] = []

    async def retract(self, discussion: Discussion, ref: str) -> None:
        self.retracted.append(ref)

    async def publish(self, discussion: Discussion, post: Post) -> str:
        self.arrived.set()
        if self.held is not None:
            await self.held.wait()
        if self.limited is not None:
            after, self.limited = self.limited, None
            raise RateLimited("slow down", after)
        return await super().publish(discussion, post)


class Rig:
    def __init__(self, store: Store) -> None:
        self.store, self.chat, self.llm, self.clock = store, HeldChat(), ScriptedLLM(), FakeClock()
        self.driver = Driver(store, self.llm, {"slack": self.chat}, self.clock,
                             DriverConfig(owner=ME, lease_ttl=TTL, send_lands_s=0.0))

    async def add(self, did: str, *posts: str, status: Status = Status.WAITING, platform: str = "slack") -> None:
        now = self.clock.now()
        async with self.store.tx() as tx:
            await tx.add_discussion(Discussion(id=did, topic=f"Topic of {did}", platform=platform, workspace="T1",
                                               channel="C1", created_at=now, updated_at=now, status=status))
            for key in posts:
                await tx.enqueue(did, Post(kind="notice", key=key, text=key), now)

    async def owner(self, did: str) -> str | None:
        async with self.store.tx() as tx:
            return (await tx.lease_owner(did))[0]

    def hold(self) -> asyncio.Event:
        self.chat.held = asyncio.Event()
        self.chat.arrived.clear()
        return self.chat.held

    async def arrived(self) -> None:
        await asyncio.wait_for(self.chat.arrived.wait(), 5)


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "core.running.driver"]


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    """SQLite only: no rule of the driver is about a row lock (the lease's and the outbox's rules run on both)."""
    s = Store(make_engine(sqlite_url))
    yield s
    await s.close()


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    r = Rig(store)
    yield r
    if r.chat.held is not None:
        r.chat.held.set()
    await r.driver.shutdown()


async def test_a_kick_drives_the_discussion_and_the_lease_is_given_back_when_nothing_is_left(rig: Rig) -> None:
    await rig.add("d1", "d1:a", "d1:b")
    task = rig.driver.kick("d1")
    await task
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert await rig.owner("d1") is None
    assert "d1" not in rig.driver._tasks, "a finished driver is not kept"
    assert rig.driver.kept.get("d1") is None and "d1" not in rig.driver.outbox._locks, "nor what it kept"
    again = rig.driver.kick("d1")
    assert again is not task, "the next kick drives again"
    await again


async def test_a_kick_while_the_discussion_is_driven_wakes_that_driver(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    gate = rig.hold()
    task = rig.driver.kick("d1")
    await rig.arrived()
    assert await rig.owner("d1") == ME
    async with rig.store.tx() as tx:  # written while the driver sends: its kick wakes the same driver
        await tx.enqueue("d1", Post(kind="notice", key="d1:b", text="b"), rig.clock.now())
    assert rig.driver.kick("d1") is task
    gate.set()
    await rig.driver.idle()
    assert rig.chat.keys("d1") == ["d1:a", "d1:b"]
    assert await rig.owner("d1") is None


async def test_idle_waits_for_every_driver(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    await rig.add("d2", "d2:a")
    gate = rig.hold()
    rig.driver.kick("d1")
    rig.driver.kick("d2")
    waiting = asyncio.create_task(rig.driver.idle())
    await rig.arrived()
    await asyncio.sleep(0)
    assert not waiting.done()
    gate.set()
    await asyncio.wait_for(waiting, 5)
    assert sorted(rig.chat.keys()) == ["d1:a", "d2:a"]


async def test_a_discussion_another_process_drives_is_left_to_it(rig: Rig,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1", "d1:a")
    async with rig.store.tx() as tx:
        assert await tx.acquire_lease("d1", OTHER, rig.clock.now(), TTL)
    with caplog.at_level(logging.INFO, logger="core.running.driver"):
        task = rig.driver.kick("d1")
        await task
    assert caplog.records == [], "nothing failed: it is simply not ours"
    assert rig.chat.keys("d1") == [] and await rig.owner("d1") == OTHER
    assert "d1" not in rig.driver._tasks
    assert rig.driver.kick("d1") is not task


async def test_a_sweep_claims_what_no_live_driver_has_and_forgets_old_events_and_spend(rig: Rig) -> None:
    await rig.add("d1", "d1:a")  # work, and a lease that ran out
    await rig.add("d2", "d2:a")  # work, and a live lease
    await rig.add("d3")  # no work
    await rig.add("d4", "d4:a", platform="discord")  # no chat for it here
    now = rig.clock.now()
    async with rig.store.tx() as tx:
        assert await tx.acquire_lease("d1", OTHER, now - timedelta(seconds=TTL + 1), TTL)
        assert await tx.acquire_lease("d2", OTHER, now, TTL)
        for name, age in (("old", timedelta(days=1, seconds=1)), ("recent", timedelta(days=1, seconds=-1))):
            assert await tx.first_sight(name, now - age)
        for age in (timedelta(days=31, minutes=15), timedelta(days=30)):
            await tx.conn.execute(insert(t.spend).values(platform="slack", workspace="T1", starts_at=now - age,
                                                         cost_usd=1.0))
    rig.driver._closing = True  # the claim alone, before any driver takes it
    assert await rig.driver.sweep() == ["d1"]
    rig.driver._closing = False
    async with rig.store.tx() as tx:
        assert await tx.lease_owner("d1") == (ME, now + timedelta(seconds=TTL)), "claimed for this process"
    await rig.driver.kick("d1")
    await rig.driver.idle()
    assert rig.chat.keys() == ["d1:a"]
    async with rig.store.tx() as tx:
        assert not await tx.first_sight("recent", now), "an id seen within the day is still known"
        assert await tx.first_sight("old", now), "an id seen over a day ago is forgotten"
        left = (await tx.conn.execute(select(func.count()).select_from(t.spend))).scalar()
    assert left == 1, "spend older than 31 days is forgotten"


async def test_shutdown_lets_running_work_finish_within_its_grace(rig: Rig,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1", "d1:a")
    gate = rig.hold()
    rig.driver.kick("d1")
    await rig.arrived()
    with caplog.at_level(logging.WARNING, logger="core.running.driver"):
        # A grace of at most a second: the work ends well within it once let through, and a grace no longer
        # than that is still waited for.
        stopping = asyncio.create_task(rig.driver.shutdown(grace_s=1.0))
        await asyncio.sleep(0)
        gate.set()
        await asyncio.wait_for(stopping, 5)
    assert rig.chat.keys("d1") == ["d1:a"] and await rig.owner("d1") is None
    assert "mid-step" not in caplog.text


async def test_shutdown_stops_running_drivers_frees_their_leases_and_starts_none(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1", "d1:a")
    await rig.add("d2", "d2:a")
    gate = rig.hold()
    first = rig.driver.kick("d1")
    await rig.arrived()
    with caplog.at_level(logging.WARNING, logger="core.running.driver"):
        stopping = asyncio.create_task(rig.driver.shutdown())
        await asyncio.sleep(0)
        late = rig.driver.kick("d2")  # a wake-up racing the shutdown
        await asyncio.wait_for(stopping, 5)
        assert first.done(), "stopped, not only asked to stop"
    for _ in range(3):
        await asyncio.sleep(0)
    assert late.done(), "nothing to wait for"
    await late
    assert said(caplog) == ["stopping 1 discussion driver(s) mid-step; their leases are released now"]
    assert rig.chat.keys() == [], "the post in flight was cut short, and d2 never driven"
    assert await rig.owner("d1") is None and await rig.owner("d2") is None
    renewer = rig.driver.lease._renewer
    assert renewer is not None and renewer.done(), "the heartbeat stopped"
    gate.set()
    await rig.driver.kick("d2")  # a client that reconnects drives again
    assert rig.chat.keys() == ["d2:a"]


async def test_a_halt_stops_the_step_and_drives_again(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1", "d1:a")
    rig.driver.halt("d1")  # not driven here: nothing to stop
    gate = rig.hold()
    rig.driver.kick("d1")
    await rig.arrived()
    with caplog.at_level(logging.INFO, logger="core.running.driver"):
        rig.driver.halt("d1")
        await asyncio.sleep(0)
        rig.chat.arrived.clear()
        await rig.arrived()  # driven again: the post is tried once more
    assert said(caplog) == ["d1 was stopped mid-step; its model calls were cancelled"]
    gate.set()
    await rig.driver.idle()
    assert "d1" not in rig.driver._halted
    assert rig.chat.keys("d1") == ["d1:a"]
    assert await rig.owner("d1") is None


async def test_a_lease_lost_mid_step_stops_the_driver_here_and_leaves_the_lease(
        rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1", "d1:a")
    gate = rig.hold()
    rig.driver.kick("d1")
    await rig.arrived()
    async with rig.store.tx() as tx:  # taken over while the first post was on its way
        await tx.enqueue("d1", Post(kind="notice", key="d1:b", text="b"), rig.clock.now())
        await tx.release_lease("d1", ME)
        assert await tx.acquire_lease("d1", OTHER, rig.clock.now(), TTL)
    with caplog.at_level(logging.WARNING, logger="core.running.driver"):
        gate.set()
        await rig.driver.idle()
    assert said(caplog) == ["lost the lease on d1; stopped its driver here"]
    assert rig.chat.keys("d1") == ["d1:a"], "nothing more is sent here"
    assert await rig.owner("d1") == OTHER


async def test_a_failing_driver_is_logged_and_never_raised(rig: Rig, caplog: pytest.LogCaptureFixture) -> None:
    await rig.add("d1", "d1:a", platform="nowhere")  # no chat to send its post through
    with caplog.at_level(logging.ERROR, logger="core.running.driver"):
        await rig.driver.kick("d1")
    assert said(caplog) == ["driver for d1 failed; the sweeper will pick it up again"]
    assert caplog.records[-1].exc_info is not None, "with what failed"
    assert await rig.owner("d1") is None


async def test_a_post_the_platform_asked_to_hold_back_is_sent_once_its_wait_is_over(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    rig.chat.limited = 0.0  # Retry-After: now (no real wait)
    await rig.driver.kick("d1")
    await rig.driver.idle()
    assert rig.chat.keys("d1") == ["d1:a"], "driven again after the wait, not a sweep later"


async def test_come_back_keeps_the_longest_wait_asked(rig: Rig) -> None:
    rig.driver._come_back("d0", 0.5)
    assert rig.driver._later == {"d0": 0.5}, "a short wait is kept as asked"
    rig.driver._later.clear()
    rig.driver._come_back("d1", 2.0)
    rig.driver._come_back("d1", 1.0)
    assert rig.driver._later == {"d1": 2.0}
    rig.driver._come_back("d1", 3.0)
    assert rig.driver._later == {"d1": 3.0}


async def test_a_turn_words_so_far_are_kept_for_its_page(rig: Rig) -> None:
    await rig.add("d1")
    await rig.driver._jot("d1", "d1:r1:s1:analyst", "So far")
    await rig.driver._jot("d1", "d1:r1:s1:analyst", "So far, more")
    async with rig.store.tx() as tx:
        assert await tx.live_texts("d1") == {"d1:r1:s1:analyst": "So far, more"}


async def test_publish_sends_the_queue_under_the_lease_only(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    assert not await rig.driver.publish("d1"), "no lease held here: left to the driver that has it"
    async with rig.store.tx() as tx:
        assert await tx.acquire_lease("d1", ME, rig.clock.now(), TTL)
    assert await rig.driver.publish("d1")
    assert rig.chat.keys("d1") == ["d1:a"]


async def test_a_placeholder_shown_is_stored_as_this_process(rig: Rig) -> None:
    await rig.add("d1")
    async with rig.store.tx() as tx:
        d = await tx.discussion("d1")
    assert d is not None
    await rig.driver.placeholder_shown(d, "d1:r1:s1:analyst", "ts-1")
    async with rig.store.tx() as tx:
        assert await tx.placeholders("d1") == [("d1:r1:s1:analyst", "ts-1", ME)]



async def test_idle_returns_when_a_driver_is_cancelled(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    gate = rig.hold()
    task = rig.driver.kick("d1")
    await rig.arrived()
    waiting = asyncio.create_task(rig.driver.idle())
    await asyncio.sleep(0)
    task.cancel()  # as a shutdown cancels it
    await asyncio.wait_for(waiting, 5)
    assert task.cancelled()
    gate.set()


async def test_a_takeover_retracts_the_placeholders_another_process_left(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    await rig.add("d2")
    now = rig.clock.now()
    async with rig.store.tx() as tx:
        await tx.placeholders_shown([("d1", "d1:r1:s1:analyst", "ts-1", OTHER, now),
                                     ("d2", "d2:r1:s1:analyst", "ts-2", OTHER, now)])
    await rig.driver.kick("d1")
    assert rig.chat.retracted == ["ts-1"], "only the discussion driven"
    async with rig.store.tx() as tx:
        assert await tx.placeholders("d1") == []
        assert await tx.placeholders("d2") == [("d2:r1:s1:analyst", "ts-2", OTHER)]


async def test_a_sweep_drives_what_it_claims(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    async with rig.store.tx() as tx:
        assert await tx.acquire_lease("d1", OTHER, rig.clock.now() - timedelta(seconds=TTL + 1), TTL)
    assert await rig.driver.sweep() == ["d1"]
    await rig.driver.idle()
    assert rig.chat.keys("d1") == ["d1:a"]


async def test_a_platform_that_refuses_for_good_blocks_the_discussion(rig: Rig) -> None:
    await rig.add("d1", "d1:a")
    rig.chat.gone = "channel archived"
    await rig.driver.kick("d1")
    async with rig.store.tx() as tx:
        d = await tx.discussion("d1")
    assert d is not None and d.status == Status.BLOCKED
