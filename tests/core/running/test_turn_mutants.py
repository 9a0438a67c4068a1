"""Turn rules (core/running/turns.py) the broader tests leave open: live text, quiet and parallel failures, reviews."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator
from typing import cast

import pytest

from bot.wiring import App
from core.control import commands as c
from core.deliberation.flows.council import DEFAULT_ADVISORS, REFEREE
from core.models import Discussion, Persona, Phase, Post, Role, Status, Turn, TurnStatus
from core.ports import ChatPort, LLMRefused, LLMUnavailable, Prompt
from core.running.config import DriverConfig
from core.running.driver import Driver
from core.running.spending import Limits
from core.showing.pages import PageLinks
from core.storage.db import make_engine
from core.storage.store import Store
from tests.core.conftest import C1, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

ADVISORS = [p.key for p in DEFAULT_ADVISORS]


class Phased(ScriptedLLM):
    """The offline model; `refuse` (persona names) decline every turn, `broken[phase]` calls of that phase fail."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__(delay=delay)
        self.refuse: set[str] = set()
        self.broken: dict[Phase, int] = {}
        self.kept: dict[str, str] = {}  # the page's words so far, read as the referee starts writing
        self.store: Store | None = None
        self.pause = False

    async def _hook(self, prompt: Prompt) -> None:
        await super()._hook(prompt)
        if prompt.purpose.phase == Phase.FINAL_SYNTHESIS and self.store is not None:
            async with self.store.tx() as tx:
                self.kept = await tx.live_texts("d1")
                if self.pause:  # someone presses Pause while the referee writes
                    d = await tx.discussion("d1", for_update=True)
                    assert d is not None
                    d.status = Status.PAUSED
                    await tx.save_discussion(d, d.updated_at)
        if prompt.purpose.persona in self.refuse:
            raise LLMRefused("the model declined")
        if self.broken.get(prompt.purpose.phase, 0) > 0:
            self.broken[prompt.purpose.phase] -= 1
            raise LLMUnavailable("")  # no message of its own


class Watching(RecordingChat):
    """A chat that notes where each live update goes: (discussion id, persona key, turn key)."""

    def __init__(self, platform: str) -> None:
        super().__init__(platform)
        self.where: set[tuple[str, str, str]] = set()

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        self.where.add((discussion.id, persona.key, key))
        await super().stream(discussion, persona, key, text)


class Blind(RecordingChat):
    async def thinking(self, discussion: Discussion, persona: object, key: str) -> None:
        raise RuntimeError("no typing indicator here")


@pytest.fixture
async def store(sqlite_url: str) -> AsyncIterator[Store]:
    s = Store(make_engine(sqlite_url))
    yield s
    await s.close()


class Rig:
    def __init__(self, store: Store, *, chat: RecordingChat | None = None, delay: float = 0.0,
                 pages: bool = False, limits: Limits | None = None) -> None:
        self.store, self.chat, self.llm, self.clock = store, chat or RecordingChat("slack"), Phased(delay), FakeClock()
        config = DriverConfig(owner="me", send_lands_s=0.0, live_interval_s=0.0, page_interval_s=0.0,
                              limits=limits or Limits(),
                              pages=PageLinks(base_url="https://council.invalid", secret="s3") if pages
                              else PageLinks())
        self.driver = Driver(store, self.llm, {"slack": cast(ChatPort, self.chat)}, self.clock, config)

    async def run(self, budget: float = 5.0, advisors: int = len(DEFAULT_ADVISORS)) -> None:
        now = self.clock.now()
        async with self.store.tx() as tx:
            await tx.add_discussion(Discussion(id="d1", topic="Adopt trunk-based development?", platform="slack",
                                               workspace="T1", channel="C1", created_at=now, updated_at=now,
                                               status=Status.RUNNING, flow="council", budget_usd=budget,
                                               created_by="U1"))
            await tx.set_personas("d1", [*DEFAULT_ADVISORS[:advisors], REFEREE])
        try:
            async with asyncio.timeout(10):  # the driver settles: nothing it finds again keeps it busy
                await self.driver.kick("d1")
                await self.driver.idle()
        finally:
            async with asyncio.timeout(10):  # a driver still busy with it would not stop either
                await self.driver.shutdown()

    async def turns(self) -> list[Turn]:
        async with self.store.tx() as tx:
            return await tx.turns("d1")

    async def status(self) -> Status:
        async with self.store.tx() as tx:
            d = await tx.discussion("d1")
        assert d is not None
        return d.status

    def posts(self) -> list[Post]:
        return self.chat.posts("d1")


def openings(turns: list[Turn]) -> list[Turn]:
    return [t for t in turns if t.phase == Phase.ADVISOR_OPENING]


async def test_each_persona_turn_shows_its_words_as_they_come_in_the_thread_and_on_the_page(store: Store) -> None:
    chat = Watching("slack")
    rig = Rig(store, chat=chat, delay=0.004, pages=True)
    rig.llm.store = store
    await rig.run(advisors=2)
    turns = await rig.turns()
    assert await rig.status() == Status.DONE
    spoken = {t.key: t.text for t in openings(turns)}
    assert len(spoken) == 2
    assert {("d1", t.persona_key, t.key) for t in openings(turns)} <= chat.where, "shown as its persona, in d1"
    live: dict[str, list[str]] = {}
    for key, text, _ in rig.chat.live:
        live.setdefault(key, []).append(text)
    for key, text in spoken.items():
        shown = live.get(key, [])
        assert len(shown) > 1, f"{key} showed nothing while it was written"
        assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(shown)), "the words grow"
        assert shown[-1].startswith(text.split("\n\n")[0]), "the words shown are the turn's own"
    # The page kept each opening's last words shown, under its own key, as the referee began.
    assert {k: v for k, v in rig.llm.kept.items() if k in spoken} == {k: live[k][-1] for k in spoken}


async def test_without_pages_nothing_is_kept_for_a_page(store: Store) -> None:
    rig = Rig(store, delay=0.004)
    rig.llm.store = store
    await rig.run()
    assert rig.chat.live, "the thread still shows the words as they come"
    assert rig.llm.kept == {}
    assert await rig.status() == Status.DONE
    assert all(t.status == TurnStatus.PUBLISHED and t.attempts == 1 for t in await rig.turns())


async def test_a_discussion_without_a_budget_of_its_own_runs_every_turn(store: Store) -> None:
    rig = Rig(store, limits=Limits(workspace_usd_per_day=100.0))
    rig.llm.cost_per_call = 0.10
    await rig.run(budget=0.0)  # 0: no limit of its own, only the workspace's day
    turns = await rig.turns()
    assert len(openings(turns)) == len(ADVISORS) and all(t.status == TurnStatus.PUBLISHED for t in turns)
    assert await rig.status() == Status.DONE


async def test_an_essential_turn_that_fails_blocks_the_discussion_with_a_post_on_that_turn(store: Store) -> None:
    rig = Rig(store)
    rig.llm.fail("Referee", Phase.FINAL_SYNTHESIS, times=5)
    await rig.run()
    [final] = [t for t in await rig.turns() if t.phase == Phase.FINAL_SYNTHESIS]
    assert final.status == TurnStatus.FAILED and await rig.status() == Status.BLOCKED
    async with store.tx() as tx:
        d = await tx.discussion("d1")
    assert d is not None and d.blocked_reason.startswith("Referee could not write the final synthesis")
    blocked = [p for p in rig.posts() if ":blocked:" in p.key]
    assert [(p.kind, p.key) for p in blocked] == [("error", f"d1:blocked:{final.key}:{rig.clock.now().isoformat()}")]
    assert {a.id for a in blocked[0].actions} >= {"fail:retry"}


async def test_an_essential_turn_failing_after_a_pause_leaves_the_discussion_paused(store: Store) -> None:
    rig = Rig(store)
    rig.llm.store, rig.llm.pause = store, True
    rig.llm.fail("Referee", Phase.FINAL_SYNTHESIS, times=5)
    await rig.run()
    assert await rig.status() == Status.PAUSED
    assert not [p for p in rig.posts() if ":blocked:" in p.key or p.kind == "error"]


async def test_two_turns_failing_at_once_are_each_nudged(store: Store) -> None:
    rig = Rig(store)
    rig.llm.fail("Skeptic", Phase.ADVISOR_OPENING, times=1)
    rig.llm.fail("Pragmatist", Phase.ADVISOR_OPENING, times=1)
    await rig.run()
    turns = openings(await rig.turns())
    failed = [t for t in turns if t.attempts == 2]
    assert sorted(t.persona_key for t in failed) == ["pragmatist", "skeptic"]
    assert all(t.status == TurnStatus.PUBLISHED for t in turns)
    nudges = [p for p in rig.posts() if ":nudge:" in p.key]
    assert sorted((p.kind, p.key) for p in nudges) == sorted(("notice", f"{t.key}:nudge:1") for t in failed)
    named = {"skeptic": "Skeptic", "pragmatist": "Pragmatist"}
    assert all(named[t.persona_key] in next(p.text for p in nudges if p.key.startswith(t.key)) for t in failed), \
        "each nudge names who is nudged"
    assert all(p.offline for p in rig.posts() if p.kind == "turn"), "the offline model's turns say so"
    assert await rig.status() == Status.DONE


async def test_two_refused_turns_are_each_skipped_with_a_note_naming_the_persona(store: Store) -> None:
    rig = Rig(store)
    rig.llm.refuse = {"Skeptic", "Pragmatist"}
    await rig.run()
    refused = [t for t in openings(await rig.turns()) if t.persona_key in ("skeptic", "pragmatist")]
    assert len(refused) == 2 and all(t.status == TurnStatus.SKIPPED and t.attempts == 1 for t in refused)
    notes = {p.key: p for p in rig.posts() if ":skipped:" in p.key}
    assert sorted(notes) == sorted(f"{t.key}:skipped:1" for t in refused)
    names = {"skeptic": "Skeptic", "pragmatist": "Pragmatist"}
    assert all(notes[f"{t.key}:skipped:1"].kind == "notice" and names[t.persona_key] in notes[f"{t.key}:skipped:1"].text
               for t in refused)
    assert not [p for p in rig.posts() if ":nudge:" in p.key]
    assert await rig.status() == Status.DONE


async def test_a_call_failing_without_a_message_is_shown_as_no_answer(store: Store) -> None:
    rig = Rig(store)
    rig.llm.broken[Phase.ADVISOR_OPENING] = 1  # the first opening asked fails, once, with no message
    await rig.run()
    [failed] = [t for t in openings(await rig.turns()) if t.attempts == 2]
    assert failed.status == TurnStatus.PUBLISHED
    [nudge] = [p for p in rig.posts() if ":nudge:" in p.key]
    assert nudge.key == f"{failed.key}:nudge:1"
    assert "(the model did not answer)" in nudge.text, "the words shown say why, not an empty reason"


async def test_a_failed_typing_indicator_is_logged_with_its_turn_and_error(store: Store,
                                                                           caplog: pytest.LogCaptureFixture) -> None:
    rig = Rig(store, chat=Blind("slack"))
    with caplog.at_level(logging.WARNING, logger="core.running.turns"):
        await rig.run()
    keys = {t.key for t in await rig.turns()}
    logged = [r for r in caplog.records if r.name == "core.running.turns"]
    assert {r.getMessage() for r in logged} == {f"could not show the thinking state for {k}" for k in keys}
    assert all(r.exc_info and isinstance(r.exc_info[1], RuntimeError) for r in logged)


class Flaky(ScriptedLLM):
    """The offline model, whose first `bidders` personas to bid for the floor fail their first `times` bids, and
    whose calls in `silent` (persona name, phase) fail with no message."""

    def __init__(self) -> None:
        super().__init__()
        self.bidders, self.times = 0, 0
        self.seen: list[str] = []
        self.silent: set[tuple[str, Phase]] = set()

    def _maybe_fail(self, prompt: Prompt) -> None:
        who = prompt.purpose.persona
        if (who, prompt.purpose.phase) in self.silent:
            raise LLMUnavailable("")
        if prompt.purpose.phase == Phase.BID:
            if who not in self.seen:
                self.seen.append(who)
            if self.seen.index(who) < self.bidders and self.failures.setdefault((who, Phase.BID), self.times) > 0:
                self.failures[(who, Phase.BID)] -= 1
                raise LLMUnavailable("Anthropic API overloaded (529)")
        super()._maybe_fail(prompt)


@pytest.fixture
def llm() -> ScriptedLLM:
    return Flaky()


# Peer reviews, on the real app (console chat, offline model) --------------------------------------------------
async def reviews(app: App) -> list[Turn]:
    reply = await app.service.handle(start(experts=3, rounds=1, peer_review=True))
    await settle(app)
    async with app.store.tx() as tx:
        return [t for t in await tx.turns(reply.discussion_id) if t.phase == Phase.PEER_REVIEW]


async def test_a_review_given_keeps_no_failure(app: App) -> None:
    done = await reviews(app)
    assert done and all(t.status == TurnStatus.DONE and t.data and t.data["failed"] == "" and t.data["ranking"]
                        for t in done)
    assert all(t.text == "" for t in done), "a review is kept as data, never as words of its own"


async def test_a_review_the_model_cannot_give_keeps_why(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    llm.fail("Contrarian", Phase.PEER_REVIEW, times=1, cost_usd=0.02)
    done = await reviews(app)
    [failed] = [t for t in done if t.persona_key == "contrarian"]
    assert failed.data and failed.data["failed"] == "Anthropic API overloaded (529)" and failed.data["ranking"] == []
    [aggregate] = [p for p in chat.posts(failed.discussion_id) if p.key.endswith(":r1:peer_review")]
    assert aggregate.offline, "the aggregate of the offline model's reviews says so"
    assert failed.status == TurnStatus.DONE and failed.error == ""
    assert [t.data and t.data["failed"] for t in done if t is not failed] == [""] * (len(done) - 1)


async def test_a_review_failing_without_a_message_still_keeps_that_it_failed(app: App, llm: Flaky) -> None:
    llm.silent.add(("Contrarian", Phase.PEER_REVIEW))
    done = await reviews(app)
    [failed] = [t for t in done if t.persona_key == "contrarian"]
    assert failed.data and failed.data["failed"] and failed.data["ranking"] == []


async def test_every_call_counts_in_the_workspaces_day_as_in_the_discussions_cost(app: App, llm: Flaky) -> None:
    llm.cost_per_call = 0.01
    llm.fail("Contrarian", Phase.PEER_REVIEW, times=1, cost_usd=0.02)  # a failed review is paid, too
    llm.fail("Contrarian", Phase.COUNTERPOINT, times=1, cost_usd=0.03)  # and so is a failed turn
    reply = await app.service.handle(start(experts=3, rounds=1, peer_review=True, check=True))
    await settle(app)
    async with app.store.tx() as tx:
        d = await tx.discussion(reply.discussion_id)
        assert d is not None
        today = await tx.workspace_spend(d.platform, d.workspace, d.created_at.replace(hour=0, minute=0, second=0,
                                                                                         microsecond=0))
    phases = {p.purpose.phase for p in llm.prompts}
    assert {Phase.PEER_REVIEW, Phase.FACT_CHECK} <= phases
    assert llm.failures[("Contrarian", Phase.COUNTERPOINT)] == 0
    assert d.cost_usd == pytest.approx(0.01 * (len(llm.prompts) - 2) + 0.02 + 0.03)
    assert today == pytest.approx(d.cost_usd), "the day's spend is what the turns cost"


async def test_an_answer_that_fails_is_skipped_at_once_and_its_message_marked_answered(
        app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    did = (await app.service.handle(start())).discussion_id
    await settle(app)
    async with app.store.tx() as tx:
        facilitator = next(p for p in await tx.personas(did) if p.role == Role.MODERATOR)
    llm.fail(facilitator.name, Phase.ANSWER, times=1)
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="What about on-call weeks?",
                                                user_id="U2", user_name="Kim", event_id="ev1"))
    await settle(app)
    async with app.store.tx() as tx:
        [message] = await tx.human_messages(did)
        [answer] = [t for t in await tx.turns(did) if t.phase == Phase.ANSWER]
        d = await tx.discussion(did)
    assert answer.status == TurnStatus.SKIPPED and answer.attempts == 1, "an answer is never nudged"
    assert answer.reply_to == message.id and message.answered, "not asked again on every wake-up"
    notes = [p for p in chat.posts(did) if p.key.startswith(answer.key)]
    assert [(p.kind, p.key) for p in notes] == [("notice", f"{answer.key}:skipped:1")]
    assert facilitator.name in notes[0].text
    assert d is not None and d.status == Status.WAITING, "a failed answer never blocks the discussion"


async def test_fact_checks_are_searched_recorded_and_charged(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01
    did = (await app.service.handle(start(rounds=1, check=True))).discussion_id
    await settle(app)
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
        checks = [t for t in await tx.turns(did) if t.phase == Phase.FACT_CHECK]
    assert d is not None and d.status == Status.DONE
    asked = [p for p in llm.prompts if p.purpose.phase == Phase.FACT_CHECK]
    assert checks and len(asked) == len(checks)
    assert all(t.status in (TurnStatus.DONE, TurnStatus.PUBLISHED) and t.data is not None and not t.error
               for t in checks)
    shown = {p.key: p for p in chat.posts(did)}
    assert {t.key for t in checks if t.status == TurnStatus.PUBLISHED} <= set(shown)
    assert all(shown[t.key].offline for t in checks if t.key in shown), "the offline model's checks say so"
    assert d.cost_usd == pytest.approx(0.01 * len(llm.prompts)), "every call paid, each check's search included"


@pytest.mark.parametrize("times", [1, 2])
async def test_failed_bids_for_the_floor_are_retried_and_skipped_without_a_word(
        app: App, chat: RecordingChat, llm: Flaky, times: int) -> None:
    llm.bidders, llm.times = 2, times
    did = (await app.service.handle(start(flow="open", rounds=1, experts=4))).discussion_id
    await settle(app)
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
        turns = await tx.turns(did)
    failed = [t for t in turns if t.phase == Phase.BID and t.attempts > 1]
    assert len(failed) == 2 and {t.step for t in failed} == {min(t.step for t in turns if t.phase == Phase.BID)}
    # Failed once, a bid is asked again; failed twice, it is set aside; nothing of either is shown.
    assert {t.status for t in failed} == {TurnStatus.DONE if times == 1 else TurnStatus.SKIPPED}
    assert not [p for p in chat.posts(did) if any(p.key.startswith(t.key) for t in failed)]
    assert d is not None and d.status == Status.DONE
    thought = {key for _, _, key in chat.thinking_calls}
    assert not thought & {t.key for t in turns if t.phase in (Phase.BID, Phase.PERSONA)}, "a bid shows nothing"
    assert {t.key for t in turns if t.phase == Phase.SPEECH} <= thought


class Priced(Phased):
    """The offline model at $0.10 a call, whose worst case is `worst`; notes what each running opening holds."""

    def __init__(self, worst: float) -> None:
        super().__init__()
        self.cost_per_call, self.worst = 0.10, worst
        self.held: dict[str, float] = {}

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return self.worst

    async def _hook(self, prompt: Prompt) -> None:
        await super()._hook(prompt)
        if prompt.purpose.phase == Phase.ADVISOR_OPENING and self.store is not None:
            async with self.store.tx() as tx:
                for t in await tx.turns("d1"):
                    found = await tx.held_turn(t.key)
                    if found is not None and t.status == TurnStatus.RUNNING:
                        self.held[t.key] = found[1][0]


@pytest.mark.parametrize(("worst", "question_failed_usd", "holds"), [
    (0.25, 0.0, 0.25),  # a turn holds its worst case, more than any call so far cost
    (0.10, 0.40, 0.40),  # or the discussion's costliest call so far, when that cost more
])
async def test_each_running_turn_holds_the_worst_a_turn_may_cost(store: Store, worst: float,
                                                                 question_failed_usd: float, holds: float) -> None:
    rig = Rig(store)
    rig.llm = llm = Priced(worst)
    rig.driver = Driver(store, llm, {"slack": cast(ChatPort, rig.chat)}, rig.clock, rig.driver.config)
    llm.store = store
    if question_failed_usd:
        llm.fail("Referee", Phase.QUESTION, times=1, cost_usd=question_failed_usd)
    await rig.run()
    opened = {t.key for t in openings(await rig.turns())}
    assert opened and set(llm.held) <= opened and llm.held
    assert all(usd == pytest.approx(holds) for usd in llm.held.values()), llm.held
