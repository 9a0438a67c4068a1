"""Running turns (core/running/turns.py), the write path of a turn: the transactions and statements that carry it
from the model to the thread."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import event, select

from bot.settings import Settings
from bot.wiring import App, build_app
from core.models import Discussion, Phase, Post, TurnStatus
from core.ports import Prompt
from core.storage import tables
from tests.core.conftest import settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.cluster import until
from tests.fakes.llm import ScriptedLLM


@contextmanager
def transactions(app: App) -> Iterator[list[list[str]]]:
    """Every transaction begun meanwhile, as the first words of its statements in order."""
    groups: list[list[str]] = []
    engine = app.store.engine.sync_engine

    def begin(conn: object) -> None:
        groups.append([])

    def note(conn: object, cursor: object, statement: str, *args: object) -> None:
        if groups:
            groups[-1].append(" ".join(statement.split()[:3]))

    event.listen(engine, "begin", begin)
    event.listen(engine, "before_cursor_execute", note)
    try:
        yield groups
    finally:
        event.remove(engine, "begin", begin)
        event.remove(engine, "before_cursor_execute", note)


async def test_a_turn_goes_from_the_model_to_the_thread_in_few_writes(app: App) -> None:
    """Each transaction costs a BEGIN, a COMMIT and a lease check, and each statement a round trip on PostgreSQL,
    for every turn of every discussion. A discussion whose turns run one at a time:
    - the transaction that records a turn has already checked the lease, so it also claims the post it queued,
      and the drain that follows only sends it;
    - a step's new turns are stored in one statement, holding their estimated cost (the discussion's costliest
      call so far, read with its row), and a recorded turn is saved with its hold cleared, each in the one write
      of its row."""
    with transactions(app) as groups:
        await app.service.handle(start(rounds=1))
        await settle(app)
    recorded = [g for g in groups if "INSERT INTO usage" in g]
    started = [g for g in groups if "INSERT INTO turns" in g]
    assert len(recorded) >= 8 and len(started) >= 8  # the moderator, the experts and the syntheses
    for g in recorded:
        # The post it queued is claimed as it is inserted: no queue read, no claim after it.
        assert g.count("INSERT INTO outbox") >= 1 and not [s for s in g if s.startswith(("SELECT outbox",
                                                                                           "UPDATE outbox"))], g
        assert g.count("UPDATE turns SET") == 1, g
    async with app.store.tx() as tx:
        attempts = [a for (a,) in (await tx.conn.execute(select(tables.outbox.c.attempts))).all()]
    assert attempts and set(attempts) == {1}, attempts  # each post claimed once, then sent
    # The state is read whole as the lease is taken; from then on the driver keeps it, so a step writes its new
    # turns holding their estimates and reads none.
    first, *later = started
    assert 'SELECT turns."key", turns.discussion_id,' in first, first
    for g in later:
        assert [s for s in g if s.startswith(("SELECT turns", "INSERT INTO turns", "UPDATE turns"))] == [
            "INSERT INTO turns"], g
        assert not [s for s in g if "usage" in s], g  # the estimate is read with the discussion's row
    # A sent post is one write: its outbox row. Its turn reads as published from that row, not from a second write.
    marked = [g for g in groups if g[:1] == ["UPDATE outbox SET"]]
    assert len(marked) >= len(recorded), groups
    assert not [g for g in marked if "UPDATE turns SET" in g], marked
    # No drain of its own reads the queue and claims its first post after a recording.
    claims_alone = [g for g in groups if g[:1] == ["SELECT outbox.id, outbox.payload,"]
                    and g[-1:] == ["UPDATE outbox SET"]]
    assert len(claims_alone) < len(recorded) / 2, claims_alone


class EachStatementHeld(ScriptedLLM):
    """Each expert's statement is written when the test lets that expert answer."""

    def __init__(self) -> None:
        super().__init__()
        self.held: dict[str, asyncio.Event] = {}

    async def _hook(self, prompt: Prompt) -> None:
        await super()._hook(prompt)
        if prompt.purpose.phase == Phase.STATEMENT:
            await self.held.setdefault(prompt.purpose.persona, asyncio.Event()).wait()


class FirstTurnPostHeld(RecordingChat):
    """The first turn post armed for is slow to land: its request is out, the platform has not answered yet."""

    def __init__(self) -> None:
        super().__init__("console")
        self.slow: asyncio.Event | None = None
        self.landing = ""  # the key of the post on its way

    async def publish(self, discussion: Discussion, post: Post) -> str:
        if post.kind == "turn" and self.slow is not None:
            slow, self.slow, self.landing = self.slow, None, post.key
            await slow.wait()
        return await super().publish(discussion, post)


async def test_a_turn_recorded_while_another_post_is_on_its_way_follows_it_at_once(tmp_path: Path) -> None:
    """Experts write their statements in parallel. One expert's post is on its way when a second expert's answer
    is recorded: that drain read the queue before the second post was in it, so the second turn publishes behind
    it, and its post lands as soon as the first has, not once the slowest expert has finished writing."""
    llm, chat = EachStatementHeld(), FirstTurnPostHeld()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": chat}, llm=llm)
    try:
        await app.service.handle(start(rounds=1))
        await until(lambda: len(llm.held) >= 3, 10.0, "three experts writing their statements")
        first, second, *slowest = list(llm.held)
        chat.slow = landed = asyncio.Event()
        llm.held[first].set()
        await until(lambda: bool(chat.landing), 5.0, "the first statement's post on its way")

        async def second_recorded() -> bool:
            async with app.store.tx() as tx:
                turns = await tx.turns(await tx.latest_discussion_id() or "")
            return sum(t.phase == Phase.STATEMENT and t.status == TurnStatus.DONE for t in turns) == 2

        llm.held[second].set()
        await until(second_recorded, 5.0, "the second statement recorded while the first post is on its way")
        landed.set()

        def shown(name: str) -> bool:
            return any(p.kind == "turn" and p.persona is not None and p.persona.name == name for p in chat.posts())

        await until(lambda: shown(first) and shown(second), 5.0, "both statements shown")
        assert not any(llm.held[name].is_set() for name in slowest)  # the others are still writing
    finally:
        for gate in llm.held.values():
            gate.set()
        await settle(app)
        await app.close()


async def test_running_turns_hold_the_costliest_call_so_far_and_recorded_ones_hold_nothing(tmp_path: Path) -> None:
    """While a turn runs it holds the discussion's costliest model call so far in its workspace's spend (read with
    the discussion's row); once recorded, its row holds nothing, so a later release can never count it twice."""
    llm = EachStatementHeld()
    llm.cost_per_call = 0.3  # every call alike: the costliest so far is 0.3, not the configured 0.05
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": RecordingChat("console")}, llm=llm)
    c = tables.turns.c

    async def holds() -> dict[str, tuple[str, float]]:
        async with app.store.tx() as tx:
            rows = await tx.conn.execute(select(c.key, c.status, c.reserved_usd))
            return {key: (status, float(usd or 0.0)) for key, status, usd in rows}

    try:
        await app.service.handle(start(rounds=1))
        await until(lambda: len(llm.held) >= 3, 10.0, "the experts writing their statements")
        running = {k: usd for k, (status, usd) in (await holds()).items() if status == TurnStatus.RUNNING.value}
        assert running and set(running.values()) == {0.3}, running
    finally:
        for gate in llm.held.values():
            gate.set()
        await settle(app)
    try:
        left = {k: usd for k, (_, usd) in (await holds()).items() if usd}
        assert not left, left
    finally:
        await app.close()
