"""Step-loop rules (core/running/steps.py), one at a time on both stores and a fixed clock, driven by the real
driver: what is queued goes out before anything is decided; a transition's fields, notice (labelled as the model's
kind) and record are written in one transaction; a finished discussion's record carries the thread's link, or its
page's when the chat gives none; a transition decided on a state a person changed meanwhile is dropped and the
loop decides again; a transition to blocked says so in the thread."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from core.models import Discussion, Post, Status
from core.running.config import DriverConfig
from core.running.driver import Driver
from core.showing.pages import PageLinks
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

ME = "this-process"


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    """SQLite only: no rule of the step loop here is about a row lock (the lease and outbox rules run on both)."""
    s = Store(make_engine(sqlite_url))
    yield s
    await s.close()


class LinkChat(RecordingChat):
    """The recording chat, whose thread link waits while `held` is unset (saying when it is asked), or fails."""

    def __init__(self) -> None:
        super().__init__("slack")
        self.held: asyncio.Event | None = None
        self.asked = asyncio.Event()
        self.broken = False

    async def link(self, discussion: Discussion) -> str:
        self.asked.set()
        if self.held is not None:
            await self.held.wait()
        if self.broken:
            raise RuntimeError("no permalink today")
        return await super().link(discussion)


class Rig:
    def __init__(self, store: Store, pages: PageLinks | None = None) -> None:
        self.store, self.chat, self.llm, self.clock = store, LinkChat(), ScriptedLLM(), FakeClock()
        self.driver = Driver(store, self.llm, {"slack": self.chat}, self.clock,
                             DriverConfig(owner=ME, send_lands_s=0.0, pages=pages or PageLinks()))

    async def add(self, *posts: str, flow: str = "council", pending: str = "",
                  status: Status = Status.RUNNING) -> None:
        now = self.clock.now()
        async with self.store.tx() as tx:
            await tx.add_discussion(Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack",
                                               workspace="T1", channel="C1", created_at=now, updated_at=now,
                                               status=status, flow=flow, pending=pending))
            for key in posts:
                await tx.enqueue("d1", Post(kind="notice", key=key, text=key), now)

    async def d(self) -> Discussion:
        async with self.store.tx() as tx:
            d = await tx.discussion("d1")
        assert d is not None
        return d

    async def links(self) -> list[str]:
        async with self.store.tx() as tx:
            return [r.link for r in await tx.decisions_found("slack", "T1", None)]


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    r = Rig(store)
    yield r
    if r.chat.held is not None:
        r.chat.held.set()
    await r.driver.shutdown()


NOTHING_SAID = "d1:nothing-said:0"


async def test_a_discussion_that_ends_with_nothing_said_is_recorded_with_its_thread_link(rig: Rig) -> None:
    await rig.add("d1:earlier", pending="final")
    await rig.driver.kick("d1")
    d = await rig.d()
    assert (d.status, d.pending) == (Status.DONE, "")
    assert await rig.links() == ["https://chat.invalid/slack/d1"]
    keys = rig.chat.keys("d1")
    assert keys[0] == "d1:earlier", "what was queued goes out before anything is decided"
    assert NOTHING_SAID in keys
    notice = next(p for p in rig.chat.posts("d1") if p.key == NOTHING_SAID)
    assert notice.offline, "labelled as the offline model's"


async def test_a_record_without_the_thread_link_takes_the_page_link(store: Store) -> None:
    r = Rig(store, PageLinks(base_url="https://council.invalid", secret="s" * 32))
    try:
        r.chat.broken = True
        await r.add(pending="final")
        await r.driver.kick("d1")
        links = await r.links()
        assert links == [r.driver.config.pages.url("d1", r.clock.now())]
        assert links[0].startswith("https://council.invalid/")
    finally:
        await r.driver.shutdown()


async def test_no_link_at_all_records_none(rig: Rig) -> None:
    rig.chat.broken = True
    await rig.add(pending="final")
    await rig.driver.kick("d1")
    assert await rig.links() == [""]


async def test_a_transition_decided_on_a_state_a_person_changed_meanwhile_is_dropped(rig: Rig) -> None:
    await rig.add(pending="final")
    rig.chat.held = asyncio.Event()
    task = rig.driver.kick("d1")
    await asyncio.wait_for(rig.chat.asked.wait(), 5)  # decided: done; asking the thread's link
    async with rig.store.tx() as tx:  # a person paused it meanwhile
        d = await tx.discussion("d1")
        assert d is not None
        d.status, d.pending = Status.PAUSED, ""
        await tx.save_discussion(d, rig.clock.now())
    rig.chat.held.set()
    await task
    d = await rig.d()
    assert (d.status, d.pending) == (Status.PAUSED, "")
    assert await rig.links() == [] and NOTHING_SAID not in rig.chat.keys("d1")


async def test_a_pause_with_nobody_to_sum_up_pauses_at_once(rig: Rig) -> None:
    await rig.add(pending="pause")  # a council with no referee: no summary to write
    await rig.driver.kick("d1")
    d = await rig.d()
    assert (d.status, d.pending) == (Status.PAUSED, "")
    assert await rig.links() == []


async def test_a_resume_after_a_finished_round_asks_what_next(rig: Rig) -> None:
    await rig.add(pending="resume")
    await rig.driver.kick("d1")
    d = await rig.d()
    assert (d.status, d.pending) == (Status.WAITING, "")
    [asked] = rig.chat.posts("d1")
    assert asked.actions, "people are asked, with buttons, what the discussion does next"
    assert asked.offline
