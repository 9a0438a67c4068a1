"""The write path of a turn: the transactions and statements that carry it from the model to the thread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event

from bot.wiring import App
from tests.core.conftest import settle, start


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
        assert "UPDATE outbox SET" in g[g.index("INSERT INTO outbox"):], g  # the post it queued, claimed
        assert g.count("UPDATE turns SET") == 1, g
    for g in started:  # the state's turns read, and the new ones written holding their estimates
        assert [s for s in g if s.startswith(("SELECT turns", "INSERT INTO turns", "UPDATE turns"))] == [
            'SELECT turns."key", turns.discussion_id,', "INSERT INTO turns"], g
        assert not [s for s in g if "usage" in s], g  # the estimate is read with the discussion's row
    # No drain of its own reads the queue and claims its first post after a recording.
    claims_alone = [g for g in groups if g[:1] == ["SELECT outbox.id, outbox.payload,"]
                    and g[-1:] == ["UPDATE outbox SET"]]
    assert len(claims_alone) < len(recorded) / 2, claims_alone
