"""Admission: answers that arrive at the same moment are recorded a few per pass of the event loop, so a request
arriving meanwhile (a health check, an acknowledgement Slack waits 3 seconds for) is served between them."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from bot.wiring import App, build_app
from core.running.admission import Admission
from tests.core.conftest import start
from tests.fakes.chat import RecordingChat
from tests.fakes.cluster import until
from tests.fakes.llm import ScriptedLLM


@contextmanager
def passes() -> Iterator[list[int]]:
    """A counter of the loop's passes: a callback that runs once in every pass and schedules itself again."""
    count = [0]
    loop = asyncio.get_running_loop()
    stopped = False

    def tick() -> None:
        count[0] += 1
        if not stopped:
            loop.call_soon(tick)

    loop.call_soon(tick)
    try:
        yield count
    finally:
        stopped = True


async def test_stretches_asked_in_one_pass_go_a_few_per_pass_in_the_order_asked() -> None:
    admission = Admission(per_pass=2)
    started: list[tuple[int, int]] = []  # (stretch, pass it started in)
    served: list[int] = []  # passes in which a request from outside was served

    with passes() as count:

        async def stretch(i: int) -> None:
            await admission.turn()
            started.append((i, count[0]))

        async def request() -> None:  # arrives once the stretches queued, as a socket read would
            await asyncio.sleep(0)
            served.append(count[0])

        await asyncio.gather(*(stretch(i) for i in range(7)), request())

    assert [i for i, _ in started] == list(range(7))  # in the order asked
    per_pass = Counter(p for _, p in started)
    assert max(per_pass.values()) == 2 and len(per_pass) == 4  # 2, 2, 2, 1
    assert min(per_pass) < served[0] < max(per_pass)  # served while stretches still waited


async def test_a_lone_stretch_starts_at_once() -> None:
    admission = Admission(per_pass=1)
    with passes() as count:
        before = count[0]
        await admission.turn()
        assert count[0] == before  # no pass went by
        await asyncio.sleep(0)  # the next pass: room again
        await admission.turn()
        assert count[0] == before + 1


async def test_a_stretch_cancelled_while_it_waits_takes_no_room_and_holds_nobody_up() -> None:
    """A Stop pressed while a discussion waits for its pass cancels the wait; the ones behind it still go."""
    admission = Admission(per_pass=1)
    first, *waiting = [asyncio.create_task(admission.turn()) for _ in range(4)]
    await asyncio.sleep(0)  # the first takes the pass's room, the rest wait
    assert first.done() and not any(w.done() for w in waiting)
    waiting[0].cancel()
    await asyncio.wait_for(asyncio.gather(*waiting[1:]), 1.0)
    assert waiting[0].cancelled()


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_answers_that_arrive_together_are_recorded_and_followed_a_few_per_pass(
    app: App, llm: ScriptedLLM, chat: RecordingChat
) -> None:
    """Ten discussions ask the model at the same moment and get their answers at the same moment: without
    admission one pass of the loop recorded all ten turns, then decided all ten next steps, then showed every
    next turn's thinking placeholder; with it, each of those goes at most `per_pass` a pass."""
    app.driver.admission.per_pass = 2
    gate = llm.hold()
    for i in range(10):
        command = start(topic=f"Should team {i} adopt trunk-based development?", rounds=1)
        await app.service.handle(command.model_copy(update={"user_id": f"U{i}"}))  # one each: a person's limit
    await until(lambda: llm.waiting >= 10, 10.0, "every discussion asking the model")
    recorded: Counter[int] = Counter()  # pass -> turns recorded in it
    decided: Counter[int] = Counter()  # pass -> steps that started turns in it
    shown: Counter[int] = Counter()  # pass -> thinking placeholders shown in it
    with passes() as count:

        def note(conn: object, cursor: object, statement: str, *args: object) -> None:
            if statement.startswith("INSERT INTO usage"):  # one per turn recorded
                recorded[count[0]] += 1
            elif statement.startswith("INSERT INTO turns"):  # one per step that starts turns
                decided[count[0]] += 1

        thinking = chat.thinking

        async def think(*args: Any) -> None:
            shown[count[0]] += 1
            await thinking(*args)

        chat.thinking = think  # type: ignore[method-assign]
        engine = app.store.engine.sync_engine
        event.listen(engine, "before_cursor_execute", note)
        try:
            gate.set()
            await until(lambda: min(sum(c.values()) for c in (recorded, decided, shown)) >= 10, 10.0,
                        "ten turns recorded, ten steps decided, ten placeholders shown")
        finally:
            event.remove(engine, "before_cursor_execute", note)
    for per_pass in (recorded, decided, shown):
        assert max(per_pass.values()) <= 2, per_pass


async def test_discussions_resumed_together_decide_their_next_steps_a_few_per_pass(
    app: App, llm: ScriptedLLM
) -> None:
    """A replica that takes over ten discussions in one sweep (a restart, a dead replica) drives them all from
    the same pass: their decisions go at most `per_pass` a pass."""
    llm.hold()
    for i in range(10):
        command = start(topic=f"Should team {i} adopt trunk-based development?", rounds=1)
        await app.service.handle(command.model_copy(update={"user_id": f"U{i}"}))
    await until(lambda: llm.waiting >= 10, 10.0, "every discussion asking the model")
    await app.driver.shutdown()  # as SIGTERM does: every lease given back, the turns in flight cut short
    other = await build_app(app.settings, {"console": RecordingChat("console")}, llm=ScriptedLLM(), owner="b")
    other.driver.admission.per_pass = 2
    assert other.llm.offline  # the scripted model: held below, so nothing but the decisions runs
    held = other.llm.hold()  # type: ignore[attr-defined]
    decided: Counter[int] = Counter()  # pass -> steps decided in it
    try:
        with passes() as count:

            def note(conn: object, cursor: object, statement: str, *args: object) -> None:
                if statement.startswith("SELECT personas.data"):  # the state a decision reads
                    decided[count[0]] += 1

            engine = other.store.engine.sync_engine
            event.listen(engine, "before_cursor_execute", note)
            try:
                assert len(await other.driver.sweep()) == 10
                await until(lambda: sum(decided.values()) >= 10, 10.0, "ten steps decided")
            finally:
                event.remove(engine, "before_cursor_execute", note)
        assert max(decided.values()) <= 2, decided
    finally:
        held.set()
        await other.close()
