"""The database work of a model call, counted: SQL statements and transactions stay few, and a call late in a
discussion costs no more than one early on (the state is kept under the lease, not reread whole at every step)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine.default import CACHE_HIT, CACHE_MISS

from bot.settings import Settings
from bot.wiring import App, build_app
from core.models import Discussion, Post
from tests.core.conftest import start
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import RecordingChat

ROUNDS = 3
MAX_STATEMENTS, MAX_TRANSACTIONS = 12.0, 4.0  # a model call's share, over the whole discussion
MAX_GROWTH = 1.15  # a call in the last round against one in the first, statements and rows read alike


class Counts:
    """Statements, transactions and rows read by the app, and model calls, so far."""

    def __init__(self) -> None:
        self.now: Counter[str] = Counter()
        self.shapes: Counter[str] = Counter()  # statements by their opening words, for the failure's message
        self.read: Counter[str] = Counter()  # rows read, by statement
        self.marks: list[Counter[str]] = []  # the counts when each round's synthesis was posted
        self.uncached: Counter[str] = Counter()  # statements SQLAlchemy could not cache, by their opening words

    @contextmanager
    def watching(self, app: App) -> Iterator[None]:
        engine = app.store.engine.sync_engine

        def begin(conn: object) -> None:
            self.now["transactions"] += 1

        def statement(conn: object, cursor: object, sql: str, params: object, context: Any, *args: object) -> None:
            self.now["statements"] += 1
            self.shapes[" ".join(sql.split())[:60]] += 1
            if context.cache_hit not in (CACHE_HIT, CACHE_MISS):  # compiled anew at every run
                self.uncached[" ".join(sql.split())[:60]] += 1

        def rows(conn: object, cursor: Any, sql: str, *args: object) -> None:
            if not cursor.description:
                return
            # Rows are counted as SQLAlchemy fetches them from the driver's cursor.
            for name in ("fetchone", "fetchmany", "fetchall"):
                fetch = getattr(cursor, name)

                def counted(*a: Any, _fetch: Any = fetch, _one: bool = name == "fetchone",
                            _sql: str = " ".join(sql.split())[:60]) -> Any:
                    got = _fetch(*a)
                    n = (got is not None) if _one else len(got)
                    self.now["rows"] += n
                    self.read[_sql] += n
                    return got

                setattr(cursor, name, counted)

        event.listen(engine, "begin", begin)
        event.listen(engine, "before_cursor_execute", statement)
        event.listen(engine, "after_cursor_execute", rows)
        try:
            yield
        finally:
            event.remove(engine, "begin", begin)
            event.remove(engine, "before_cursor_execute", statement)
            event.remove(engine, "after_cursor_execute", rows)


class RoundsChat(RecordingChat):
    """Notes the counts as each round's synthesis goes out: the boundaries between rounds."""

    def __init__(self, counts: Counts, fake: FakeAnthropic) -> None:
        super().__init__("console")
        self.counts, self.fake = counts, fake

    async def publish(self, discussion: Discussion, post: Post) -> str:
        if post.kind == "synthesis":
            self.counts.marks.append(Counter({**self.counts.now, "calls": self.fake.completed_count}))
        return await super().publish(discussion, post)


Measured = tuple[dict[str, float], list[dict[str, float]], str]  # per call: whole, by round; the top statements
_measured: dict[str, Measured] = {}
_measured_edits: dict[str, Counter[str]] = {}  # edits the chat made, and the outbox reads of a sent post's ref
_uncached: dict[str, Counter[str]] = {}  # statements compiled at every run, by their opening words
_turn_rows: dict[str, int] = {}  # turn rows read back


async def three_rounds(tmp_path: Path) -> Measured:
    """Turns of about 1,500 characters streamed in 12-character deltas, as a real model writes them, over a
    3-round discussion on the real SDK and the loopback Messages API (run once for this module's tests)."""
    if "run" in _measured:
        return _measured["run"]
    counts = Counts()
    async with FakeAnthropic(reply_chars=1500, chunk_chars=12) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RoundsChat(counts, fake)
        app = await build_app(settings, {"console": chat})
        try:
            with counts.watching(app):
                await app.service.handle(start(rounds=ROUNDS))
                await app.driver.idle()
                total = Counter({**counts.now, "calls": fake.completed_count})
        finally:
            await app.close()
    marks = [Counter(), *counts.marks[:ROUNDS]]
    assert len(marks) == ROUNDS + 1, f"{len(counts.marks)} syntheses posted"
    per_round = [marks[r + 1] - marks[r] for r in range(ROUNDS)]
    per_call = [{k: c[k] / c["calls"] for k in ("statements", "transactions", "rows")} for c in per_round]
    whole = {k: total[k] / total["calls"] for k in ("statements", "transactions", "rows")}
    top = "\n".join(f"{n / total['calls']:5.2f} {shape}" for shape, n in counts.shapes.most_common(20))
    rows = "\n".join(f"{n / total['calls']:5.2f} rows {shape}" for shape, n in counts.read.most_common(8))
    _measured["run"] = whole, per_call, f"{top}\n{rows}"
    ref_read = 'SELECT outbox.ref FROM outbox WHERE outbox."key"'
    _uncached["run"] = counts.uncached
    _turn_rows["run"] = sum(n for shape, n in counts.read.items() if shape.startswith("SELECT turns."))
    _measured_edits["run"] = Counter({"edits": chat.update_calls, "ref reads": sum(
        n for shape, n in counts.shapes.items() if shape.startswith(ref_read))})
    return _measured["run"]


async def test_a_model_call_late_in_a_discussion_costs_what_one_early_on_does(tmp_path: Path) -> None:
    """A driver that reread every turn of the discussion at every step read more rows a call each round (round 3
    read 1.35x what round 2 did). Statements and transactions are compared with round 1; rows with round 2, since
    round 1 seats the panel and reads fewer personas while it does."""
    whole, per_call, top = await three_rounds(tmp_path)
    print(f"per call, whole discussion: {whole}; by round: {per_call}\n{top}")
    first, second, last = per_call
    assert first["rows"] > 0, "rows read are counted"
    for k in ("statements", "transactions"):
        assert last[k] <= first[k] * MAX_GROWTH, (k, per_call, top)
    assert last["rows"] <= second["rows"] * MAX_GROWTH, (per_call, top)


async def test_a_model_call_costs_few_statements_and_transactions(tmp_path: Path) -> None:
    """Each statement is a round trip and each transaction a BEGIN, a COMMIT and a lease check, for every call
    of every discussion."""
    whole, _, top = await three_rounds(tmp_path)
    assert whole["statements"] <= MAX_STATEMENTS, (whole, top)
    assert whole["transactions"] <= MAX_TRANSACTIONS, (whole, top)


async def test_an_edit_finds_the_message_it_replaces_among_the_posts_sent_under_the_lease(tmp_path: Path) -> None:
    """Every header, poll and canvas edit read its message's ref back from the outbox, in a transaction of its
    own (0.3 a model call); the driver that sent the message knows it."""
    _, _, top = await three_rounds(tmp_path)
    edits = _measured_edits["run"]
    assert edits["edits"] > 0, "the discussion edits posts it sent"
    assert edits["ref reads"] == 0, (edits, top)


async def test_every_statement_of_a_discussion_is_compiled_once(tmp_path: Path) -> None:
    """SQLAlchemy compiles a statement once and keeps it, unless its shape cannot be cached (rows given as a list to
    `values`, say): then it compiles it at every run, which cost more than running it."""
    await three_rounds(tmp_path)
    assert not _uncached["run"], _uncached["run"]


async def test_a_discussion_driven_start_to_end_by_one_process_reads_back_no_turn(tmp_path: Path) -> None:
    """Its driver keeps every turn it wrote, under its lease, to the end: the closing's charts read the whole
    discussion's turns again, every text with it (a model call's share: a row)."""
    await three_rounds(tmp_path)
    assert _turn_rows["run"] == 0
