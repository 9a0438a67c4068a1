"""Step-loop edges (core/running/steps.py) on the real store and a fixed clock: a transition to blocked says so in the
thread with its buttons, which transitions close the polls a round leaves behind, what a finished discussion's record
counts of people's votes, when the thread's link is asked for, and what is logged and linked when it cannot be had."""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import event

from bot.settings import Settings
from bot.wiring import build_app
from core.deliberation.flows.base import Transition
from core.models import Ballot, Poll, Status
from core.running.kept import load_state
from core.showing.pages import PageLinks
from core.storage.store import Store
from tests.core.conftest import settle, start
from tests.core.running.test_step_rules import Rig, rig, store
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

__all__ = ["rig", "store"]


async def apply(r: Rig, step: Transition) -> None:
    """The transition applied as the loop applies it: under the discussion's lease, on the state read with it."""
    state = await r.driver.lease.take("d1", lambda tx: load_state(tx, "d1"))
    assert state is not None
    await r.driver.steps.apply(state, step)
    await r.driver.lease.let_go("d1")


async def add_poll(r: Rig, round_: int, *votes: tuple[str, int], final: bool = False) -> int:
    now = r.clock.now()
    async with r.store.tx() as tx:
        poll = await tx.add_poll(Poll(key=f"d1:poll:{round_}:{final}", discussion_id="d1", round=round_,
                                      question="Which?", options=["Stage it", "Keep it"], option_ids=["O1", "O2"],
                                      final=final, created_at=now))
        assert poll is not None
        for voter, choice in votes:
            await tx.cast(Ballot(poll_id=poll.id, voter_id=voter, voter_name=voter, choice=choice, created_at=now))
    return poll.id


async def closed(r: Rig) -> dict[int, bool]:
    async with r.store.tx() as tx:
        return {p.id: p.closed for p in await tx.polls("d1")}


async def test_a_transition_to_blocked_says_why_in_the_thread_with_its_ways_out(rig: Rig) -> None:
    await rig.add()
    await apply(rig, Transition(status=Status.BLOCKED, blocked_reason="the model kept failing"))
    assert (await rig.d()).status == Status.BLOCKED
    [post] = rig.chat.posts("d1")
    assert post.kind == "error" and post.key == f"d1:blocked:step:{rig.clock.now().isoformat()}"
    assert post.text == "⚠️ The discussion is blocked: the model kept failing. Retry, skip the failed turns, or stop."
    assert [a.id for a in post.actions] == ["fail:retry", "fail:skip", "fail:stop"]
    assert all(a.value == "d1" for a in post.actions)


async def test_a_new_round_closes_the_polls_of_the_rounds_before_it(rig: Rig) -> None:
    await rig.add(flow="moderated")
    first = await add_poll(rig, 1)
    await apply(rig, Transition(round=2))
    assert await closed(rig) == {first: True}


async def test_waiting_for_people_leaves_the_rounds_poll_open(rig: Rig) -> None:
    await rig.add(flow="moderated")
    first = await add_poll(rig, 1)
    await apply(rig, Transition(status=Status.WAITING, notice="next_action"))
    assert await closed(rig) == {first: False}


@pytest.mark.parametrize("status", [Status.DONE, Status.STOPPED])
async def test_an_ending_closes_the_rounds_polls(rig: Rig, status: Status) -> None:
    await rig.add(flow="moderated")
    first = await add_poll(rig, 1)
    await apply(rig, Transition(status=status))
    assert await closed(rig) == {first: True}


async def test_a_finished_discussions_record_counts_the_votes_of_its_last_round(rig: Rig) -> None:
    await rig.add(flow="moderated")
    async with rig.store.tx() as tx:
        d = await tx.discussion("d1")
        assert d is not None
        d.round = 2
        await tx.save_discussion(d, rig.clock.now())
    await add_poll(rig, 1, ("U1", 1), ("U2", 1))
    await add_poll(rig, 2, ("U3", 0))
    await apply(rig, Transition(status=Status.DONE))
    async with rig.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T1", None)
    assert sum(record.people.values()) == 1, record.people
    [(shown, count)] = record.people.items()
    assert "O1" in shown and count == 1


async def test_only_a_finished_discussion_asks_for_its_threads_link(rig: Rig) -> None:
    await rig.add(flow="moderated")
    await apply(rig, Transition(status=Status.WAITING, notice="next_action"))
    assert not rig.chat.asked.is_set()
    await apply(rig, Transition(status=Status.DONE))
    assert rig.chat.asked.is_set()


async def test_a_link_the_chat_cannot_give_is_logged_with_its_error(rig: Rig,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    rig.chat.broken = True
    await rig.add(pending="final")
    with caplog.at_level(logging.WARNING):
        await rig.driver.kick("d1")
    [warned] = [r for r in caplog.records if "decision record" in r.getMessage()]
    assert warned.getMessage() == "no link to d1 for its decision record"
    assert warned.exc_info is not None and "no permalink today" in str(warned.exc_info[1])


async def test_the_page_link_of_a_record_is_signed_under_the_discussions_current_key(store: Store) -> None:
    r = Rig(store, PageLinks(base_url="https://council.invalid", secret="s" * 32))
    try:
        r.chat.broken = True
        await r.add(pending="final")
        async with r.store.tx() as tx:
            d = await tx.discussion("d1")
            assert d is not None
            d.options.links = 2  # its links were revoked twice
            await tx.save_discussion(d, r.clock.now())
        await r.driver.kick("d1")
        [link] = await r.links()
        assert link == r.driver.config.pages.url("d1", r.clock.now(), 2) and "&v=2" in link
    finally:
        await r.driver.shutdown()


async def test_a_round_under_one_lease_reads_back_nothing_it_wrote(tmp_path: Path) -> None:
    """The lease keeps what it read and wrote (`kept`), and each step reads the discussion once, at its fence: a
    six-step round reads no turn back, the roster when the lease is taken and once more when it is seated, and
    the discussion fewer times than it takes steps. Without what is kept, each step reads all three again."""
    chat = RecordingChat("console")
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": chat}, llm=ScriptedLLM())
    reads: Counter[str] = Counter()

    def count(_conn: object, _cursor: object, sql: str, *_: object) -> None:
        found = re.match(r"\s*SELECT\b.*?\bFROM\s+(\w+)", sql, re.S | re.I)
        if found:
            reads[found.group(1)] += 1

    event.listen(app.store.engine.sync_engine, "before_cursor_execute", count)
    try:
        did = (await app.service.handle(start(rounds=1))).discussion_id
        await settle(app)
        async with app.store.tx() as tx:
            steps = {t.step for t in await tx.turns(did)}
    finally:
        await app.close()
    assert len(steps) == 6, steps  # the round's steps, the roster's first
    assert reads["turns"] == 0 and reads["personas"] <= 2 and reads["human_messages"] <= 1, reads
    assert reads["discussions"] < len(steps), reads
