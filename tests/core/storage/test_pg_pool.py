"""PostgreSQL's pool: a connection left idle is checked before use (the server may have dropped it meanwhile); one
in steady use is not, since a check is three round trips on every transaction."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from core.storage.db import make_engine


class Idle:
    """The pool's idle clock, moved by the test: a connection sits idle without anyone waiting."""

    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def idle() -> Idle:
    return Idle()


@pytest.fixture
async def engine(pg_url: str, idle: Idle) -> AsyncIterator[AsyncEngine]:
    e = make_engine(pg_url, ping_idle_s=0.2, idle_clock=idle)
    yield e
    await e.dispose()


async def backend_pid(engine: AsyncEngine) -> int:
    async with engine.begin() as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_a_connection_the_server_dropped_while_it_sat_idle_is_replaced_before_use(
        engine: AsyncEngine, pg_url: str, idle: Idle) -> None:
    victim = await backend_pid(engine)  # the pool's one connection, back in the pool
    admin = make_engine(pg_url)
    try:
        async with admin.begin() as conn:  # what a database restart or an idle timeout does to it
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": victim})
    finally:
        await admin.dispose()
    idle.t += 0.3  # longer than ping_idle_s: the next checkout checks it first
    assert await backend_pid(engine) != victim  # replaced, and the transaction ran


async def test_a_connection_in_steady_use_is_not_pinged(engine: AsyncEngine, idle: Idle) -> None:
    pings = 0
    ping = engine.dialect.do_ping

    def counted(dbapi_connection: object) -> bool:
        nonlocal pings
        pings += 1
        return ping(dbapi_connection)  # type: ignore[arg-type]

    engine.dialect.do_ping = counted  # type: ignore[method-assign]
    for _ in range(20):
        idle.t += 0.15  # each use within ping_idle_s of the last
        await backend_pid(engine)
    assert pings == 0
    idle.t += 0.3
    await backend_pid(engine)
    assert pings == 1


def waiting(engine: AsyncEngine) -> int:
    """Tasks waiting for a connection to be given back: the getters of the pool's asyncio queue."""
    queue: Any = engine.pool._pool._queue  # type: ignore[attr-defined]
    return len(queue._getters)


async def test_connections_opened_for_a_busy_moment_are_kept_for_the_next_one_and_never_more_than_twenty(
        engine: AsyncEngine) -> None:
    """Past ten, each connection a busy moment opened was closed as it was given back and opened again at the next:
    about 2.5% of the app's CPU with 60 discussions went to connecting and closing."""
    opened: list[object] = []
    event.listen(engine.sync_engine, "connect", lambda conn, _record: opened.append(conn))
    for _ in range(2):  # two busy moments, 25 transactions at once each
        gate, inside = asyncio.Event(), [0]

        async def busy(gate: asyncio.Event, inside: list[int]) -> None:
            async with engine.begin() as conn:
                await conn.execute(text("SELECT 1"))
                inside[0] += 1
                await gate.wait()

        tasks = [asyncio.create_task(busy(gate, inside)) for _ in range(25)]
        for _ in range(1000):  # until twenty are inside and the other five wait on the pool's queue (no timer)
            if inside[0] >= 20 and waiting(engine) == 5:
                break
            await asyncio.sleep(0.01)
        try:
            assert inside[0] == 20 and len(opened) == 20  # the other five wait for a connection given back
        finally:
            gate.set()
            await asyncio.gather(*tasks)
    assert len(opened) == 20  # the second busy moment opened none
