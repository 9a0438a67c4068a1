"""Upgrading a database written before turns recorded their author: the seat waits already stored say whose each
held seat's turn was (the person's reply, or the AI stand-in's), the roster is Council's, the rest the personas'."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import insert, text

from core.models import Author
from core.storage import tables
from core.storage.db import make_engine, migrate
from core.storage.store import Store
from tests.core.storage.test_store import discussion

TURN = ("INSERT INTO turns (key, discussion_id, round, step, phase, persona_key, status, text, error, attempts, "
        "created_at) VALUES (:k, 'a1', 1, :s, :p, :who, 'published', 'words', '', 1, :t)")
WAIT = ("INSERT INTO seat_waits (turn_key, discussion_id, persona_key, user_id, asked_at, deadline, state, answer, "
        "stance) VALUES (:k, 'a1', 'dana', 'U1', :t, :t, :state, '', '')")


async def test_migrating_records_who_wrote_the_turns_stored_before(empty_db_url: str) -> None:
    from alembic import command

    from core.storage.db import _alembic_config

    now = datetime.now(UTC)
    engine = make_engine(empty_db_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(lambda c: command.upgrade(_alembic_config(c), "0015"))
        store = Store(engine)
        async with store.tx() as tx:
            d = discussion("a1")
            await tx.conn.execute(insert(tables.discussions).values(
                **d.model_dump() | {"options": d.options.model_dump(mode="json")}))
            for key, step, phase, who in (("a1:roster", 0, "roster", "moderator"), ("a1:r1:s1:dana", 1, "proposal",
                                          "dana"), ("a1:r2:s2:dana", 2, "ranked_vote", "dana"),
                                          ("a1:r1:s1:eli", 1, "proposal", "eli")):
                await tx.conn.execute(text(TURN), {"k": key, "s": step, "p": phase, "who": who, "t": now})
            for key, state in (("a1:r1:s1:dana", "done"), ("a1:r2:s2:dana", "stand_in")):
                await tx.conn.execute(text(WAIT), {"k": key, "t": now, "state": state})
        await migrate(engine)
        async with store.tx() as tx:
            authors = {t.key: t.author for t in await tx.turns("a1")}
        await store.close()
    finally:
        await engine.dispose()
    assert authors == {"a1:roster": Author.BOT, "a1:r1:s1:dana": Author.PERSON, "a1:r2:s2:dana": Author.STAND_IN,
                       "a1:r1:s1:eli": Author.PERSONA}
