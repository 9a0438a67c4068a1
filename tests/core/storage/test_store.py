"""The store on SQLite and PostgreSQL: migrations, leases, idempotent turns and posts, ballots, schedules."""

from __future__ import annotations

import asyncio
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import event, insert, inspect, text
from sqlalchemy.exc import InvalidRequestError
from sqlalchemy.util.concurrency import in_greenlet

from core.models import Ballot, Discussion, Phase, Poll, Post, Schedule, Status, Turn, TurnStatus, Usage
from core.storage import tables
from core.storage.db import make_engine, migrate
from core.storage.sqlite_inline import InlineConnection
from core.storage.store import Store

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def discussion(id_: str = "d1", **kw: object) -> Discussion:
    return Discussion(id=id_, topic="Trunk-based development?", created_at=T0, updated_at=T0, **kw)  # type: ignore[arg-type]


def head_revision() -> str:
    """The newest migration in the chain (there must be exactly one head)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    from core.storage.db import MIGRATIONS

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    (head,) = ScriptDirectory.from_config(cfg).get_heads()
    return str(head)


async def test_migrate_is_idempotent_and_safe_to_run_concurrently(db_url: str) -> None:
    engines = [make_engine(db_url) for _ in range(3)]
    try:
        await asyncio.gather(*(migrate(e) for e in engines))
        await migrate(engines[0])
        async with engines[0].connect() as conn:
            versions = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars().all()
            names = await conn.run_sync(lambda sync: set(inspect(sync).get_table_names()))
        assert versions == [head_revision()]
        assert {"discussions", "turns", "outbox", "polls", "ballots", "schedules", "digests"} <= names
        store = Store(engines[1])
        async with store.tx() as tx:
            await tx.add_discussion(discussion())
        async with store.tx() as tx:
            assert await tx.discussion("d1") is not None
        await store.close()
    finally:
        for e in engines:
            await e.dispose()


async def test_a_newcomer_waits_for_another_process_writing_a_fresh_database_file(tmp_path: Path) -> None:
    # Another process (a second console, `python -m bot list`) is writing to a file not yet in WAL mode:
    # switching the journal mode takes an exclusive lock that SQLite does not wait for on its own.
    path = tmp_path / "council.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE scratch (x INTEGER)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO scratch VALUES (1)")
    asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
    engine = make_engine(f"sqlite:///{path}")
    try:
        await migrate(engine)
        async with engine.connect() as conn:
            mode = (await conn.execute(text("PRAGMA journal_mode"))).scalar_one()
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar_one()
        assert (mode, version) == ("wal", head_revision())
    finally:
        await engine.dispose()
        other.close()


async def test_discussion_round_trip_keeps_utc(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion(roles=["security"], auto_rounds=2))
    async with store.tx() as tx:
        d = await tx.discussion("d1")
    assert d is not None
    assert d.created_at == T0 and d.created_at.tzinfo is not None
    assert d.roles == ["security"] and d.auto_rounds == 2 and d.status == Status.RUNNING


async def test_lease_has_one_owner_until_it_expires(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        assert await tx.acquire_lease("d1", "a", T0, ttl=60)
        assert not await tx.acquire_lease("d1", "b", T0 + timedelta(seconds=30), ttl=60)
        assert await tx.acquire_lease("d1", "a", T0 + timedelta(seconds=30), ttl=60)  # renewal
        assert await tx.acquire_lease("d1", "b", T0 + timedelta(seconds=91), ttl=60)  # expired: taken over
        await tx.release_lease("d1", "a")  # a no longer owns it: no effect
        assert (await tx.lease_owner("d1"))[0] == "b"


async def test_claim_stale_takes_only_unleased_work(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion("run"))
        await tx.add_discussion(discussion("held"))
        await tx.add_discussion(discussion("done", status=Status.DONE))
        await tx.add_discussion(discussion("elsewhere", platform="discord"))
        assert await tx.acquire_lease("held", "other", T0, ttl=60)
    async with store.tx() as tx:
        assert await tx.claim_stale("me", T0 + timedelta(seconds=10), ttl=60, platforms=["console"]) == ["run"]
    async with store.tx() as tx:
        assert await tx.claim_stale("me2", T0 + timedelta(seconds=10), ttl=60, platforms=["console"]) == []
        later = T0 + timedelta(seconds=200)
        assert sorted(await tx.claim_stale("me2", later, ttl=60, platforms=["console"])) == ["held", "run"]


async def test_turns_and_posts_are_idempotent_by_key(store: Store) -> None:
    turn = Turn(
        key="d1:r1:s0:moderator",
        discussion_id="d1",
        round=1,
        step=0,
        phase=Phase.OPENING,
        persona_key="moderator",
        created_at=T0,
    )
    post = Post(kind="turn", key=turn.key, text="hello")
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        await tx.start_turns([turn])
        await tx.start_turns([turn])  # a re-run after a crash finds the turn instead of adding another
        again = await tx.turn(turn.key)
        assert again is not None and again.status == TurnStatus.RUNNING and again.attempts == 2
        assert len(await tx.turns("d1")) == 1
        assert await tx.enqueue("d1", post, T0, turn_key=turn.key)
        assert not await tx.enqueue("d1", post, T0, turn_key=turn.key)
        ((oid, queued, key, attempts),) = await tx.pending_posts("d1")
        assert queued.text == "hello" and key == turn.key and attempts == 0
        await tx.set_turn_status([turn.key], TurnStatus.DONE)
        waiting = await tx.turn(turn.key)  # done, its post not out yet
        assert waiting is not None and waiting.status == TurnStatus.DONE
        assert [t.status for t in await tx.turns_by_keys("d1", [turn.key])] == [TurnStatus.DONE]
        await tx.mark_sent(oid, "ts-1", T0, key)
        assert [t.status for t in await tx.turns("d1")] == [TurnStatus.PUBLISHED]
        assert [t.status for t in await tx.turns_by_keys("d1", [turn.key])] == [TurnStatus.PUBLISHED]
        assert [t.status for t in await tx.turns_changing("d1", 0, [])] == [TurnStatus.PUBLISHED]
        assert await tx.pending_posts("d1") == []
        assert await tx.post_ref(turn.key) == "ts-1"
        stored = await tx.turn(turn.key)
    assert stored is not None and stored.status == TurnStatus.PUBLISHED


async def test_event_ids_are_seen_once(store: Store) -> None:
    async with store.tx() as tx:
        assert await tx.first_sight("Ev1", T0)
        assert not await tx.first_sight("Ev1", T0)
        assert await tx.first_sight("", T0)  # no id: cannot dedupe, always accepted


async def test_a_second_ballot_supersedes_the_first(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        poll = await tx.add_poll(
            Poll(key="p", discussion_id="d1", round=1, question="?", options=["a", "b"], created_at=T0)
        )
        assert poll is not None
        assert await tx.add_poll(poll) is None
        await tx.cast(Ballot(poll_id=poll.id, voter_id="U1", voter_name="Dana", choice=0, created_at=T0))
        await tx.cast(Ballot(poll_id=poll.id, voter_id="U1", voter_name="Dana", choice=1, created_at=T0))
        live = await tx.ballots(poll.id)
        every = await tx.ballots(poll.id, include_superseded=True)
    assert [(b.voter_id, b.choice) for b in live] == [("U1", 1)]
    assert [b.superseded for b in every] == [True, False]


async def test_usage_adds_up_and_charges_the_discussion(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        for _ in range(2):
            await tx.add_usage(
                "d1",
                "k",
                Usage(
                    model="m",
                    input_tokens=10,
                    output_tokens=5,
                    cache_write_tokens=3,
                    cache_read_tokens=7,
                    cost_usd=0.25,
                ),
                T0,
            )
        total = await tx.usage_total(["d1"])
        d = await tx.discussion("d1")
    counts = (total.input_tokens, total.output_tokens, total.cache_write_tokens, total.cache_read_tokens)
    assert counts == (20, 10, 6, 14)
    assert d is not None and d.cost_usd == pytest.approx(0.5)


async def test_a_schedule_slot_is_claimed_once(store: Store) -> None:
    async with store.tx() as tx:
        s = await tx.upsert_schedule(Schedule(kind="digest", target="C1", trigger="cron:0 9 * * 1", next_run_at=T0), T0)
    results = []
    for _replica in ("a", "b"):
        async with store.tx() as tx:
            results.append(await tx.claim_firing(s.id, T0, T0 + timedelta(days=7), T0))
    assert results == [True, False]
    async with store.tx() as tx:
        stored = await tx.schedule(s.id)
    assert stored is not None and stored.next_run_at == T0 + timedelta(days=7) and stored.last_run_at == T0


async def test_a_digest_keeps_its_words_for_the_retry_and_commands_their_hash(store: Store) -> None:
    async with store.tx() as tx:
        s = await tx.upsert_schedule(Schedule(kind="digest", target="C1", trigger="cron:0 9 * * 1", next_run_at=T0), T0)
        digest_id = await tx.add_digest(s.id, T0, T0 - timedelta(days=7), T0, T0)
        assert digest_id is not None
        [first] = await tx.claim_digests("a", T0, 60, ["console"])
        written = Post(kind="notice", key="digest:1", text="*Council digest* · decided: ship it")
        await tx.set_digest_post(digest_id, written.model_dump(mode="json", exclude={"files"}))
    async with store.tx() as tx:
        [again] = await tx.claim_digests("b", T0 + timedelta(seconds=61), 60, ["console"])
    assert first["post"] is None and Post.model_validate(again["post"]) == written and again["attempts"] == 1

    async with store.tx() as tx:
        assert await tx.command_hash("discord", "app1") == ""
        await tx.set_command_hash("discord", "app1", "h1", T0)
        await tx.set_command_hash("discord", "app1", "h2", T0)
        await tx.set_command_hash("discord", "app2", "other", T0)
    async with store.tx() as tx:
        assert (await tx.command_hash("discord", "app1"), await tx.command_hash("discord", "app2")) == ("h2", "other")


async def test_a_post_is_claimed_for_sending_once_and_only_by_the_lease_holder(store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        await tx.enqueue("d1", Post(kind="notice", key="n1", text="hi"), T0)
        ((oid, _, _, attempts),) = await tx.pending_posts("d1")
        assert not await tx.claim_send(oid, attempts, "me", T0), "no lease: not ours to send"
        assert await tx.acquire_lease("d1", "me", T0, ttl=60)
        assert await tx.claim_send(oid, attempts, "me", T0)
        assert not await tx.claim_send(oid, attempts, "me", T0), "a second drain read the same row: it loses"
        assert not await tx.claim_send(oid, attempts + 1, "me", T0 + timedelta(seconds=61)), "lease expired"


async def test_a_post_marked_sent_claims_the_next_in_the_same_statement_only_as_a_claim_would(store: Store) -> None:
    """The drain marks a post sent and claims the one behind it at once: the claim holds only for the lease holder
    and the attempts it read, and the post is marked sent whether the claim holds or not."""
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        for key in ("n1", "n2", "n3", "n4"):
            await tx.enqueue("d1", Post(kind="notice", key=key, text=key), T0)
        (n1, _, _, _), (n2, _, _, seen2), (n3, _, _, seen3), (n4, _, _, seen4) = await tx.pending_posts("d1")
        assert await tx.acquire_lease("d1", "me", T0, ttl=60)
        assert await tx.mark_sent_claiming(n1, "ts1", T0, None, (n2, seen2), "me", "d1")
        assert not await tx.mark_sent_claiming(n2, "ts2", T0, None, (n3, seen3 + 1), "me", "d1"), \
            "another drain claimed it since it was read: this one loses"
        assert not await tx.mark_sent_claiming(n3, "ts3", T0 + timedelta(seconds=61), None, (n4, seen4), "me", "d1"), \
            "the lease ran out: the next post is not ours to send"
        left = await tx.pending_posts("d1")
        sent = [(await tx.post_ref(key)) for key in ("n1", "n2", "n3")]
    assert [(oid, attempts) for oid, _, _, attempts in left] == [(n4, 0)], "only the claimed post counted an attempt"
    assert sent == ["ts1", "ts2", "ts3"]


async def test_workspace_spend_is_per_workspace_and_exact_from_a_midnight_in_any_zone(store: Store) -> None:
    # Kolkata is UTC+5:30: its midnight is not a UTC hour, and the budget day must still start exactly there.
    midnight = datetime(2026, 11, 3, 0, 0, tzinfo=ZoneInfo("Asia/Kolkata"))
    spent = Usage(model="m", input_tokens=1, output_tokens=1, cost_usd=0.25)
    async with store.tx() as tx:
        await tx.add_discussion(discussion("a1", platform="slack", workspace="T1"))
        await tx.add_discussion(discussion("a2", platform="slack", workspace="T1"))
        await tx.add_discussion(discussion("b1", platform="slack", workspace="T2"))
        await tx.add_usage("a1", "yesterday", spent, midnight - timedelta(seconds=1))
        await tx.add_usage("a1", "first", spent, midnight)
        await tx.add_usage("a2", "later", spent, midnight + timedelta(hours=7, minutes=3))
        await tx.add_usage("b1", "elsewhere", spent, midnight + timedelta(hours=1))
        await tx.add_usage(None, "digest", spent, midnight + timedelta(hours=2))  # no discussion: no workspace
        today = await tx.workspace_spend("slack", "T1", midnight)
        other = await tx.workspace_spend("slack", "T2", midnight)
        since_yesterday = await tx.workspace_spend("slack", "T1", midnight - timedelta(days=1))
    assert (today, other, since_yesterday) == (pytest.approx(0.5), pytest.approx(0.25), pytest.approx(0.75))


async def test_quarter_hours_older_than_the_cutoff_are_forgotten(store: Store) -> None:
    spent = Usage(model="m", input_tokens=1, output_tokens=1, cost_usd=0.25)
    async with store.tx() as tx:
        await tx.add_discussion(discussion("a1", platform="slack", workspace="T1"))
        await tx.add_usage("a1", "old", spent, T0 - timedelta(days=40))
        await tx.add_usage("a1", "recent", spent, T0 - timedelta(days=2))
        forgotten = await tx.prune_spend(T0 - timedelta(days=31))
        left = await tx.workspace_spend("slack", "T1", T0 - timedelta(days=60))
    assert (forgotten, left) == (1, pytest.approx(0.25))


async def test_migrating_fills_the_spend_and_the_costliest_call_of_usage_recorded_before(empty_db_url: str) -> None:
    from alembic import command

    from core.storage.db import _alembic_config

    now = datetime.now(UTC)  # the migration fills the last 31 days
    engine = make_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(_alembic_config(c), "0005"))
        store = Store(engine)
        async with store.tx() as tx:
            d = discussion("a1", platform="slack", workspace="T1")  # as the app wrote it then: no costliest call
            await tx.conn.execute(insert(tables.discussions).values(
                **d.model_dump(exclude={"costliest_call_usd"}) | {"options": d.options.model_dump(mode="json")}))
            for i, cost in enumerate((0.5, 0.25)):
                await tx.conn.execute(text(
                    "INSERT INTO usage (discussion_id, turn_key, model, input_tokens, output_tokens, "
                    "cache_write_tokens, cache_read_tokens, cost_usd, created_at) "
                    "VALUES ('a1', :k, 'm', 1, 1, 0, 0, :c, :t)"), {"k": f"k{i}", "c": cost, "t": now})
        await migrate(engine)
        async with store.tx() as tx:
            spent = await tx.workspace_spend("slack", "T1", now - timedelta(days=1))
            migrated = await tx.discussion("a1")
        await store.close()
    finally:
        await engine.dispose()
    assert spent == pytest.approx(0.75)
    assert migrated is not None and migrated.costliest_call_usd == pytest.approx(0.5)


async def test_a_transaction_waits_for_another_process_writing_without_stopping_the_loop(tmp_path: Path) -> None:
    # SQLite runs on the event loop: waiting for another process's write lock must not stop it.
    path = tmp_path / "council.db"
    engine = make_engine(f"sqlite:///{path}")
    await migrate(engine)
    store = Store(engine)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO processed_events (event_id, seen_at) VALUES ('other', '2026-11-02 09:00:00')")
        ticks, asked = 0, []

        def traced(dbapi_connection: sqlite3.Connection, *_: object) -> None:  # every statement SQLite starts
            dbapi_connection.set_trace_callback(lambda sql: asked.append(sql) if sql.startswith("BEGIN") else None)

        event.listen(engine.sync_engine, "checkout", traced)

        async def tick() -> None:
            # Loop passes counted once the transaction has asked for the lock; the other process lets go after ten
            # of them, so the transaction gets its lock only if the loop went on running while it waited (no timer).
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                if asked:
                    ticks += 1
                if ticks == 10:
                    other.execute("COMMIT")

        ticker = asyncio.create_task(tick())
        async with store.tx() as tx:
            await tx.add_discussion(discussion())
        ticker.cancel()
        assert ticks >= 10, "the loop ran while the transaction waited for the other process"
        async with store.tx() as tx:
            assert await tx.discussion("d1") is not None
            assert not await tx.first_sight("other", T0), "the other process's write is there too"
    finally:
        other.close()
        await store.close()


async def test_sqlite_statements_in_a_transaction_run_on_the_loop_without_a_greenlet(tmp_path: Path) -> None:
    # Each greenlet the async engine spawns for a statement cost about as much as the statement itself.
    engine = make_engine(f"sqlite:///{tmp_path / 'council.db'}")
    await migrate(engine)
    store = Store(engine)
    spawned: list[bool] = []
    event.listen(engine.sync_engine, "before_cursor_execute", lambda *_: spawned.append(in_greenlet()))
    try:
        async with store.tx() as tx:
            await tx.add_discussion(discussion())
        async with store.tx() as tx:
            assert await tx.discussion("d1") is not None
    finally:
        await store.close()
    assert spawned and not any(spawned)


async def test_sqlite_transactions_begin_and_commit_on_the_loop_without_a_greenlet(tmp_path: Path) -> None:
    # A greenlet spawned to say BEGIN and another to say COMMIT cost more than a transaction's statements; only a
    # BEGIN that finds another process writing needs one (it waits; see the test above).
    engine = make_engine(f"sqlite:///{tmp_path / 'council.db'}")
    await migrate(engine)
    store = Store(engine)
    said: list[tuple[str, bool]] = []
    for name in ("begin", "commit", "rollback"):
        event.listen(engine.sync_engine, name, lambda *_, name=name: said.append((name, in_greenlet())))
    try:
        async with store.tx() as tx:
            await tx.add_discussion(discussion())
        with pytest.raises(RuntimeError):
            async with store.tx() as tx:
                await tx.add_discussion(discussion("lost"))
                raise RuntimeError("a step failed half way")
        async with store.tx() as tx:
            assert await tx.discussion("d1") is not None and await tx.discussion("lost") is None
    finally:
        await store.close()
    assert said == [("begin", False), ("commit", False), ("begin", False), ("rollback", False), ("begin", False),
                    ("commit", False)]


async def test_a_statement_after_a_commit_inside_a_transaction_is_refused_not_run_in_another(tmp_path: Path) -> None:
    # A transaction begun on the loop keeps the engine's guard: what follows an early commit inside `tx()` would
    # otherwise run in a new transaction outside the one whose lease was checked.
    engine = make_engine(f"sqlite:///{tmp_path / 'council.db'}")
    await migrate(engine)
    store = Store(engine)
    try:
        with pytest.raises(InvalidRequestError, match="inside context manager"):
            async with store.tx() as tx:
                await tx.add_discussion(discussion())
                await tx.conn.commit()
                await tx.add_discussion(discussion("d2"))
        async with store.tx() as tx:
            assert await tx.discussion("d2") is None
    finally:
        await store.close()


async def test_a_statement_outside_a_transaction_still_waits_for_another_process_writing(tmp_path: Path) -> None:
    # Outside a transaction a statement begins one, and BEGIN may wait: that goes through the engine's greenlet.
    path = tmp_path / "council.db"
    engine = make_engine(f"sqlite:///{path}")
    await migrate(engine)
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn = await InlineConnection(engine).start()
    try:
        other.execute("BEGIN IMMEDIATE")
        asyncio.get_running_loop().call_later(0.2, other.execute, "COMMIT")
        await conn.execute(text("INSERT INTO processed_events (event_id, seen_at) VALUES ('e1', '2026-11-02')"))
        await conn.commit()
        assert (await conn.execute(text("SELECT count(*) FROM processed_events"))).scalar() == 1
    finally:
        other.close()
        await conn.close()
        await engine.dispose()


async def test_the_newest_sent_ref_is_a_messages_never_a_documents(store: Store) -> None:
    """Recovery reads the thread after the newest message the database knows was sent; a canvas's id (a living
    document, sent last) is no place in the thread."""
    now = datetime(2026, 11, 25, 9, tzinfo=UTC)
    async with store.tx() as tx:
        await tx.add_discussion(discussion())
        for key, kind in (("a", "turn"), ("b", "notice"), ("c", "document"), ("d", "turn")):
            await tx.enqueue("d1", Post(kind=kind, key=key, text=key), now)  # type: ignore[arg-type]
        for outbox_id, post, _, _ in await tx.pending_posts("d1"):
            if post.key != "d":
                await tx.mark_sent(outbox_id, {"a": "1764061200.000100", "b": "1764061201.000200",
                                               "c": "F0000000016"}[post.key], now, None)
        assert await tx.last_sent_ref("d1") == "1764061201.000200"


async def test_sqlite_transactions_share_one_connection_and_a_failed_one_leaves_it_usable(tmp_path: Path) -> None:
    """SQLite runs one transaction at a time here: taking a pooled connection and handing it back for each one
    cost as much as the statements. One connection serves them all; a transaction that raises is rolled back
    and the next one goes on on the same connection."""
    engine = make_engine(f"sqlite:///{tmp_path / 'council.db'}")
    await migrate(engine)
    checkouts: list[object] = []
    event.listen(engine.sync_engine.pool, "checkout", lambda *args: checkouts.append(args[0]))
    store = Store(engine)
    try:
        for i in range(5):
            async with store.tx() as tx:
                await tx.add_discussion(discussion(f"d{i}"))
        with pytest.raises(RuntimeError):
            async with store.tx() as tx:
                await tx.add_discussion(discussion("lost"))
                raise RuntimeError("a step failed half way")
        async with store.tx() as tx:
            assert await tx.discussion("lost") is None, "the failed transaction was rolled back"
            assert await tx.discussion("d4") is not None
        assert len(checkouts) == 1
    finally:
        await store.close()
    assert engine.sync_engine.pool.checkedout() == 0, "closing the store hands its connection back"


async def test_every_fence_sees_the_posts_queued_before_it(store: Store) -> None:
    """The fence of a transaction that records a turn said no post was queued on SQLite whatever was (its check
    compared each outbox row's discussion with the row's own id), so the turn's post was taken for the whole queue
    and could go out ahead of one queued before it; and it read the whole outbox to say so, at every turn."""
    async with store.tx() as tx:
        await tx.add_discussion(discussion("d1"))
        await tx.add_discussion(discussion("d2"))
        assert await tx.acquire_lease("d1", "me", T0, ttl=60)
        await tx.enqueue("d1", Post(kind="notice", key="n1", text="queued first"), T0)
        await tx.enqueue("d2", Post(kind="notice", key="n2", text="another discussion's"), T0)

    async def seen(**kw: object) -> bool | None:
        async with store.tx() as tx:
            assert await tx.fence("d1", "me", T0, **kw) is not None  # type: ignore[arg-type]
            return tx.queued_at_fence

    fences = [{}, {"spent_since": T0}, {"charge": (0.01, 0)}]
    assert [await seen(**kw) for kw in fences] == [True, True, True]
    async with store.tx() as tx:
        ((oid, _, _, _),) = await tx.pending_posts("d1")
        await tx.mark_sent(oid, "ts-1", T0, None)
    assert [await seen(**kw) for kw in fences] == [False, False, False]  # d2's post is not d1's
