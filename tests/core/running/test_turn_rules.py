"""Turn rules (core/running/turns.py), one at a time on both stores and a fixed clock: a seated council (three
advisors, a referee) driven by the real driver on the offline model. A step starts only the turns its budgets
fit, each reserving its worst case; no turn fitting stops the discussion for its own budget and blocks it for the
day's; a failed turn is nudged once, then skipped (a refused one at once), and an essential one blocks; each
persona's turn shows it is thinking and its words as they come."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from core.deliberation.flows.council import DEFAULT_ADVISORS, REFEREE
from core.models import Discussion, Persona, Phase, Post, Status, Turn, TurnStatus
from core.ports import LLMRefused, Prompt
from core.running.config import DriverConfig
from core.running.driver import Driver
from core.running.spending import Limits
from core.storage.db import make_engine
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

ME = "this-process"
ADVISORS = [p.key for p in DEFAULT_ADVISORS]


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    """SQLite only: no rule of a turn here is about a row lock (the lease's and the outbox's rules run on both)."""
    s = Store(make_engine(sqlite_url))
    yield s
    await s.close()


class Refusing(ScriptedLLM):
    """The offline model, declining (stop_reason refusal) every turn of the personas in `refuse`."""

    def __init__(self) -> None:
        super().__init__()
        self.refuse: set[str] = set()

    async def _hook(self, prompt: Prompt) -> None:
        await super()._hook(prompt)
        if prompt.purpose.persona in self.refuse:
            raise LLMRefused("the model declined")


class Blind(RecordingChat):
    """A chat whose typing indicator always fails."""

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        raise RuntimeError("no typing indicator here")


class Rig:
    def __init__(self, store: Store, limits: Limits | None = None, chat: RecordingChat | None = None) -> None:
        self.store, self.chat, self.llm, self.clock = store, chat or RecordingChat("slack"), Refusing(), FakeClock()
        self.llm.cost_per_call = 0.10
        self.driver = Driver(store, self.llm, {"slack": self.chat}, self.clock,
                             DriverConfig(owner=ME, send_lands_s=0.0, limits=limits or Limits()))

    async def add(self, budget: float = 5.0, status: Status = Status.RUNNING, cost: float = 0.0) -> None:
        now = self.clock.now()
        async with self.store.tx() as tx:
            await tx.add_discussion(Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack",
                                               workspace="T1", channel="C1", created_at=now, updated_at=now,
                                               status=status, flow="council", budget_usd=budget, cost_usd=cost,
                                               created_by="U1"))
            await tx.set_personas("d1", [*DEFAULT_ADVISORS, REFEREE])

    async def drive(self) -> None:
        await self.driver.kick("d1")
        await self.driver.idle()

    async def d(self) -> Discussion:
        async with self.store.tx() as tx:
            d = await tx.discussion("d1")
        assert d is not None
        return d

    async def turns(self) -> list[Turn]:
        async with self.store.tx() as tx:
            return await tx.turns("d1")

    def posts(self, kind: str) -> list[Post]:
        return [p for p in self.chat.posts("d1") if p.kind == kind]


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    r = Rig(store)
    yield r
    await r.driver.shutdown()


def openings(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.phase == Phase.ADVISOR_OPENING]


async def test_a_council_runs_its_round_and_its_verdict(rig: Rig) -> None:
    await rig.add()
    await rig.drive()
    turns = await rig.turns()
    assert sorted(t.persona_key for t in openings(turns)) == sorted(ADVISORS)
    assert [t.persona_key for t in turns if t.phase == Phase.FINAL_SYNTHESIS] == ["referee"]
    assert all(t.status == TurnStatus.PUBLISHED for t in turns)
    d = await rig.d()
    assert d.status == Status.DONE and d.cost_usd == pytest.approx(0.10 * len(turns))
    thought = sorted(key for _, _, key in rig.chat.thinking_calls)
    assert thought == sorted(t.key for t in turns), "every persona's turn shows it is thinking"


async def test_a_step_starts_only_the_turns_the_discussion_budget_fits_then_stops(rig: Rig) -> None:
    await rig.add(budget=0.30)  # the question (0.10), then two of the three openings fit in the 0.20 left
    await rig.drive()
    turns = await rig.turns()
    assert [t.status for t in openings(turns)] == [TurnStatus.PUBLISHED] * 2
    d = await rig.d()
    assert d.status == Status.STOPPED
    assert d.blocked_reason == "budget reached: $0.30 spent of $0.30"
    assert d.cost_usd == pytest.approx(0.30)
    [error] = rig.posts("error")
    assert error.key == "d1:budget" and "$0.30 spent of $0.30" in error.text


async def test_one_turn_starts_while_anything_is_left(rig: Rig) -> None:
    await rig.add(budget=0.25)  # the question, then one opening in 0.15, and one more in the 0.05 left
    await rig.drive()
    assert len(openings(await rig.turns())) == 2
    d = await rig.d()
    assert d.status == Status.STOPPED and d.blocked_reason == "budget reached: $0.30 spent of $0.25"


async def test_a_discussion_with_no_budget_left_starts_nothing(rig: Rig) -> None:
    await rig.add(budget=0.25, cost=0.25)
    await rig.drive()
    assert await rig.turns() == []
    d = await rig.d()
    assert d.status == Status.STOPPED and d.blocked_reason == "budget reached: $0.25 spent of $0.25"


async def test_the_workspace_day_blocks_when_no_turn_fits_it(store: Store) -> None:
    r = Rig(store, Limits(workspace_usd_per_day=0.30))
    try:
        await r.add()
        await r.drive()
        turns = await r.turns()
        assert len(openings(turns)) == 2, "the question, then two openings in the day's 0.20 left"
        d = await r.d()
        assert d.status == Status.BLOCKED and "workspace" in d.blocked_reason
        assert r.posts("error") and any(a.id == "fail:retry" for a in r.posts("error")[-1].actions)
    finally:
        await r.driver.shutdown()


async def test_the_whole_process_day_blocks_when_no_turn_fits_it(store: Store) -> None:
    r = Rig(store, Limits(process_usd_per_day=0.30))
    try:
        await r.add()
        await r.drive()
        assert len(openings(await r.turns())) == 2
        d = await r.d()
        assert d.status == Status.BLOCKED and "day" in d.blocked_reason
    finally:
        await r.driver.shutdown()


async def test_a_failed_turn_is_nudged_once_and_then_goes_through(rig: Rig) -> None:
    await rig.add()
    rig.llm.fail("Skeptic", Phase.ADVISOR_OPENING, times=1)
    await rig.drive()
    [skeptic] = [t for t in openings(await rig.turns()) if t.persona_key == "skeptic"]
    assert skeptic.status == TurnStatus.PUBLISHED and skeptic.attempts == 2
    nudges = [p for p in rig.chat.posts("d1") if "Skeptic" in p.text and p.kind == "notice"]
    assert len(nudges) == 1
    assert (await rig.d()).status == Status.DONE


async def test_a_turn_that_fails_again_is_skipped_and_the_discussion_goes_on(rig: Rig) -> None:
    await rig.add()
    rig.llm.fail("Skeptic", Phase.ADVISOR_OPENING, times=2)
    await rig.drive()
    [skeptic] = [t for t in openings(await rig.turns()) if t.persona_key == "skeptic"]
    assert skeptic.status == TurnStatus.SKIPPED and skeptic.attempts == 2
    assert len([p for p in rig.chat.posts("d1") if "Skeptic" in p.text and p.kind == "notice"]) == 2
    assert (await rig.d()).status == Status.DONE


async def test_a_refused_turn_is_skipped_at_once(rig: Rig) -> None:
    await rig.add()
    rig.llm.refuse = {"Skeptic"}
    await rig.drive()
    [skeptic] = [t for t in openings(await rig.turns()) if t.persona_key == "skeptic"]
    assert skeptic.status == TurnStatus.SKIPPED and skeptic.attempts == 1, "never asked again the same way"
    assert len([p for p in rig.chat.posts("d1") if "Skeptic" in p.text and p.kind == "notice"]) == 1


async def test_an_essential_turn_that_keeps_failing_blocks_the_discussion(rig: Rig) -> None:
    await rig.add()
    rig.llm.fail("Referee", Phase.FINAL_SYNTHESIS, times=5)
    await rig.drive()
    d = await rig.d()
    assert d.status == Status.BLOCKED
    assert rig.posts("error") and any(a.id == "fail:retry" for a in rig.posts("error")[-1].actions)


async def test_a_typing_indicator_that_fails_never_costs_a_turn(store: Store) -> None:
    r = Rig(store, chat=Blind("slack"))
    try:
        await r.add()
        await r.drive()
        assert all(t.status == TurnStatus.PUBLISHED for t in await r.turns())
        assert (await r.d()).status == Status.DONE
    finally:
        await r.driver.shutdown()


async def test_a_failed_call_that_was_paid_for_is_charged(rig: Rig) -> None:
    await rig.add()
    rig.llm.fail("Skeptic", Phase.ADVISOR_OPENING, times=1, cost_usd=0.07)
    await rig.drive()
    assert (await rig.d()).cost_usd == pytest.approx(0.10 * 5 + 0.07), "five answers and the failed call"

