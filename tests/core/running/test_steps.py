"""The step loop (core/running/steps.py): pause at any step and resume where it stopped; Stop is final: nothing
posted after it, polls closed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.service import UserError
from core.models import Phase, Status, TurnStatus
from core.showing.export import export
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

STEPS = [Phase.ROSTER, Phase.OPENING, Phase.STATEMENT, Phase.COUNTERPOINT, Phase.REBUTTAL, Phase.ANALOGY,
         Phase.ROUND_SYNTHESIS]
PAUSE_TURNS = {Phase.RESUME_SUMMARY, Phase.REOPENING}
PAUSE_POSTS = (":pausing:", ":pause:", ":resumed:", ":reopen:")


async def _run(app: App, chat: RecordingChat) -> tuple[str, list[tuple[int, int, str, str]], list[str]]:
    """Turns (round, step, phase, persona) and posted keys of a discussion, its id stripped, pause posts left out."""
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await settle(app)
    return did, *await _record(app, chat, did)


async def _record(app: App, chat: RecordingChat, did: str) -> tuple[list[tuple[int, int, str, str]], list[str]]:
    async with app.store.tx() as tx:
        turns = [t for t in await tx.turns(did) if t.phase not in PAUSE_TURNS]
    assert all(t.status == TurnStatus.PUBLISHED for t in turns)
    keys = [k.replace(did, "D") for k in chat.keys(did) if not any(m in k for m in PAUSE_POSTS)]
    assert len(keys) == len(set(keys)), "a post was published twice"
    # Parallel turns land in any order: compare what was posted, and each step's place in the thread.
    steps = [k.split(":")[2] for k in keys if k.startswith("D:r1:s")]
    assert steps == sorted(steps)
    return sorted((t.round, t.step, t.phase.value, t.persona_key) for t in turns), sorted(keys)


@pytest.fixture
async def unpaused(tmp_path: Path) -> tuple[list[tuple[int, int, str, str]], list[str]]:
    chat = RecordingChat("console")
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'plain.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": chat}, llm=ScriptedLLM())
    try:
        _, turns, keys = await _run(app, chat)
    finally:
        await app.close()
    return turns, keys


@pytest.mark.parametrize("phase", STEPS, ids=[p.value for p in STEPS])
async def test_pausing_at_any_step_and_resuming_yields_the_turns_of_a_run_never_paused(
    app: App, chat: RecordingChat, llm: ScriptedLLM, phase: Phase,
    unpaused: tuple[list[tuple[int, int, str, str]], list[str]],
) -> None:
    started: list[str] = []
    llm.on_phase[phase] = lambda: app.service.handle(c.Pause(**C1, discussion_id=started[0], user_id="U1"))
    started.append((await app.service.handle(start(rounds=1))).discussion_id)
    did = started[0]
    await settle(app)
    assert (await discussion(app, did)).status == Status.PAUSED, "the pause took effect after that step"
    await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U2", is_admin=True, user_name="Lee"))
    await settle(app)

    d = await discussion(app, did)
    assert d.status == Status.DONE
    turns, keys = await _record(app, chat, did)
    assert (turns, keys) == unpaused, "nothing skipped, nothing said twice"
    async with app.store.tx() as tx:
        phases = [t.phase for t in await tx.turns(did)]
    assert phases.count(Phase.RESUME_SUMMARY) == 1 and phases.count(Phase.REOPENING) == 1


async def test_a_discussion_paused_mid_round_goes_on_after_a_restart_and_on_a_schedule(
    tmp_path: Path, unpaused: tuple[list[tuple[int, int, str, str]], list[str]]
) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}")  # type: ignore[call-arg]
    chat, llm = RecordingChat("console"), ScriptedLLM()
    first = await build_app(settings, {"console": chat}, llm=llm)
    started: list[str] = []
    llm.on_phase[Phase.REBUTTAL] = lambda: first.service.handle(c.Pause(**C1, discussion_id=started[0], user_id="U1"))
    started.append((await first.service.handle(start(rounds=1))).discussion_id)
    did = started[0]
    await settle(first)
    await first.close()

    second = await build_app(settings, {"console": chat}, llm=ScriptedLLM())
    try:
        assert (await discussion(second, did)).status == Status.PAUSED
        # What a scheduled round does for a paused discussion: reopen it into its next round, then drive it.
        await second.service.steering.resume(c.Resume(**C1, discussion_id=did, user_id="scheduler"), then_round=True)
        second.driver.kick(did)
        await settle(second)
        assert (await discussion(second, did)).status == Status.DONE
        assert await _record(second, chat, did) == unpaused
    finally:
        await second.close()


async def test_a_reply_written_while_paused_is_heard_on_resume(app: App, llm: ScriptedLLM) -> None:
    started: list[str] = []
    llm.on_phase[Phase.STATEMENT] = lambda: app.service.handle(c.Pause(**C1, discussion_id=started[0], user_id="U1"))
    started.append((await app.service.handle(start(rounds=1))).discussion_id)
    did = started[0]
    await settle(app)
    reply = await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="Mind the release train",
                                                        event_id="Ev1", user_id="U5", user_name="Kim"))
    assert "when the discussion resumes" in reply.text
    await settle(app)
    heard_before = len(llm.prompts)
    await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))
    await settle(app)
    later = llm.prompts[heard_before:]
    assert later and all("Mind the release train" in "\n".join(b.text for b in p.shared) for p in later)


async def test_pause_and_resume_pressed_twice_quickly(app: App, chat: RecordingChat) -> None:
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await app.service.handle(c.Pause(**C1, discussion_id=did, user_id="U1"))
    with pytest.raises(UserError, match="already paused"):
        await app.service.handle(c.Pause(**C1, discussion_id=did, user_id="U1"))
    # Resume before the pause took effect calls the pause off; a second Resume is told it is running.
    reply = await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))
    assert "called off" in reply.text
    with pytest.raises(UserError, match="Only a paused discussion can be resumed; this one is running"):
        await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))
    await settle(app)
    assert (await discussion(app, did)).status == Status.DONE
    async with app.store.tx() as tx:
        assert not [t for t in await tx.turns(did) if t.phase in PAUSE_TURNS and t.status != TurnStatus.PUBLISHED]

    # Paused for real, then Resume twice: the second is told it is already resuming.
    did = (await app.service.handle(start())).discussion_id
    await settle(app)
    await app.service.handle(c.Pause(**C1, discussion_id=did, user_id="U1"))
    await settle(app)
    await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))
    with pytest.raises(UserError, match="already resuming"):
        await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))
    await settle(app)
    assert (await discussion(app, did)).status == Status.WAITING


async def test_resuming_a_finished_discussion_says_it_has_already_finished(app: App) -> None:
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await settle(app)
    with pytest.raises(UserError, match="already finished"):
        await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))


async def test_a_reply_to_a_finished_discussion_is_filed_never_promised_a_resume(app: App) -> None:
    did = (await app.service.handle(start(rounds=1))).discussion_id
    await settle(app)
    reply = await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="Mind the release train",
                                                        event_id="Ev9", user_id="U5", user_name="Kim"))
    assert "has finished" in reply.text and "open-questions.md" in reply.text and "resumes" not in reply.text
    doc = await export(app.store, did)
    assert doc is not None
    assert {"author": "Kim", "text": "Mind the release train"} in doc["closing"]["people_unanswered"]


async def test_no_turn_is_posted_after_the_stop_notice_and_stop_closes_the_polls(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    # Stop pressed while the experts' statements are being written: none of them reaches the thread.
    started: list[str] = []
    llm.on_phase[Phase.STATEMENT] = lambda: app.service.handle(c.Stop(**C1, discussion_id=started[0], user_id="U1"))
    started.append((await app.service.handle(start())).discussion_id)
    did = started[0]
    await settle(app)
    assert (await discussion(app, did)).status == Status.STOPPED
    assert chat.keys(did)[-1] == f"{did}:stopped"
    async with app.store.tx() as tx:
        statements = [t for t in await tx.turns(did) if t.phase == Phase.STATEMENT]
    assert statements and all(t.status == TurnStatus.SKIPPED for t in statements)

    # Stop pressed while the final synthesis is written, the round's poll still open: the synthesis never
    # appears, and the poll is closed with its tally after the stop notice.
    did = (await app.service.handle(start())).discussion_id
    await settle(app)
    llm.on_phase[Phase.FINAL_SYNTHESIS] = lambda: app.service.handle(c.Stop(**C1, discussion_id=did, user_id="U1"))
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=did, action=c.NextAction.SYNTHESIZE, user_id="U1"))
    await settle(app)
    keys = chat.keys(did)
    assert keys[-1] == f"{did}:stopped", "nothing is posted after the stop notice: the poll is edited in place"
    async with app.store.tx() as tx:
        polls = await tx.polls(did)
    assert len(polls) == 1 and polls[0].closed, "no poll is opened by a synthesis written after the stop"
    [poll] = [p for p in chat.posts(did) if p.poll is not None]
    assert poll.key == f"{polls[0].key}:closed" and poll.poll is not None and poll.poll.closed
    assert f"{did}:final:r1" not in keys


async def test_a_stop_for_budget_closes_the_open_polls_with_their_tallies(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    llm.cost_per_call = 0.4  # round 1 takes 13 calls: $5.20 of the $5 budget, spent by its synthesis
    did = (await app.service.handle(start())).discussion_id
    await settle(app)
    assert (await discussion(app, did)).status == Status.WAITING
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=did, action=c.NextAction.SYNTHESIZE, user_id="U1"))
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.STOPPED and "budget reached" in d.blocked_reason
    async with app.store.tx() as tx:
        polls = await tx.polls(did)
    assert polls and all(p.closed for p in polls)
    shown = [p for p in chat.posts(did) if p.poll is not None]
    assert [p.key for p in shown] == [f"{polls[0].key}:closed"], "the poll itself shows its tally, once"


class Announced(asyncio.Event):
    """A model-call gate that says when the first call has reached it: the test awaits that, not a poll."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = asyncio.Event()

    async def wait(self) -> Literal[True]:
        self.entered.set()
        return await super().wait()


async def test_stop_cancels_the_model_calls_in_flight_and_nothing_of_them_is_posted(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    did = (await app.service.handle(start())).discussion_id
    await settle(app)  # round 1, then waiting for the next step
    gate = llm.gate = Announced()  # every model call now waits, as a slow one would
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=did, action=c.NextAction.ANOTHER_ROUND,
                                                user_id="U1"))
    await asyncio.wait_for(gate.entered.wait(), 5)  # the round's opening is being written
    assert llm.waiting == 1
    await app.service.handle(c.Stop(**C1, discussion_id=did, user_id="U1"))
    await asyncio.wait_for(settle(app), 5)  # without the cancel, the held call would never end
    gate.set()
    assert llm.cancelled == 1, "the call in flight was cancelled, not left to finish"
    assert chat.keys(did)[-1] == f"{did}:stopped"
    async with app.store.tx() as tx:
        turns = await tx.turns(did)
    assert not [t for t in turns if t.status in (TurnStatus.PLANNED, TurnStatus.RUNNING)]
    assert [t.status for t in turns if t.round == 2] == [TurnStatus.SKIPPED]
