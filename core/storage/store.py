"""The unit of work: `async with store.tx() as tx` gives one transaction with every repository on it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from core.storage.activity import ActivityRepo
from core.storage.channel_rows import ChannelRepo
from core.storage.channel_settings import ChannelSettingsRepo
from core.storage.command_sync import CommandSyncRepo
from core.storage.db import side_engine
from core.storage.decisions import DecisionRepo
from core.storage.discussions import DiscussionRepo
from core.storage.page_rows import PageRepo
from core.storage.placeholders import PlaceholderRepo
from core.storage.rate_rows import RateRepo
from core.storage.rows import aware
from core.storage.schedule_rows import ScheduleRepo
from core.storage.seat_waits import SeatRepo
from core.storage.solo import SoleProcess, take_over_leases
from core.storage.sqlite_inline import InlineConnection

log = logging.getLogger(__name__)

__all__ = ["Store", "Tx", "aware"]


class Tx(DiscussionRepo, ActivityRepo, ScheduleRepo, ChannelRepo, ChannelSettingsRepo, CommandSyncRepo, DecisionRepo,
         SeatRepo, RateRepo, PlaceholderRepo, PageRepo):
    """One transaction: the repository methods the service calls, all on a single connection."""


class Store:
    """Owns the engine; `async with store.tx() as tx` is one unit of work."""

    # How long a transaction waits for its in-process turn on SQLite before it falls back to SQLite's own
    # locking (busy_timeout): a transaction opened inside another then fails as it always did, never hangs.
    SQLITE_TURN_WAIT_S = 5.0

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # SQLite has one writer and every transaction here begins IMMEDIATE, so they run one at a time
        # anyway; queueing them in-process hands over at once instead of through SQLite's busy handler,
        # which sleeps 1, 2, 5, 10... up to 100 ms between retries (parallel turns paid 20-50 ms each).
        self._sqlite_turn = asyncio.Lock() if engine.dialect.name == "sqlite" else None
        self._sole: SoleProcess | None = None
        self._held: AsyncConnection | None = None
        self._leases: AsyncEngine | None = None  # PostgreSQL: the one connection lease renewals use

    async def claim_sole_process(self, owner: str) -> bool:
        """On an SQLite file: if no other live process uses it, become its one process and take over the
        leases earlier processes left (they are dead), so interrupted discussions resume at once."""
        sole = SoleProcess.for_engine(self.engine)
        if sole is None or not sole.acquire():
            return False
        self._sole = sole
        await take_over_leases(self.engine, owner)
        return True

    @asynccontextmanager
    async def tx(self) -> AsyncIterator[Tx]:
        async with self._turn() as held:
            if held is not None:
                async with held.begin():
                    yield Tx(held)
                return
            async with self.engine.begin() as conn:
                yield Tx(conn)

    @asynccontextmanager
    async def autocommit(self) -> AsyncIterator[Tx]:
        """Each statement commits on its own, with no BEGIN or COMMIT round trips: for a change that is one
        statement (PostgreSQL; on SQLite, a transaction as any other)."""
        if self._sqlite_turn is not None:
            async with self.tx() as tx:
                yield tx
            return
        async with self.engine.connect() as conn:
            yield Tx(await conn.execution_options(isolation_level="AUTOCOMMIT"))

    @asynccontextmanager
    async def _turn(self) -> AsyncIterator[AsyncConnection | None]:
        """On SQLite, this process's turn at the database and the one connection every turn uses (taking a
        pooled connection and handing it back cost as much as a transaction's statements); None: take one from
        the pool (PostgreSQL, or a turn waited for too long)."""
        lock = self._sqlite_turn
        if lock is None:
            yield None
            return
        try:
            if lock.locked():
                await asyncio.wait_for(lock.acquire(), self.SQLITE_TURN_WAIT_S)
            else:
                await lock.acquire()  # free: returns at once, without the task wait_for would create
        except TimeoutError:
            log.warning("waited %.1f s for a SQLite transaction; leaving it to busy_timeout", self.SQLITE_TURN_WAIT_S)
            yield None
            return
        try:
            if self._held is None or self._held.closed or self._held.invalidated:
                self._held = await InlineConnection(self.engine).start()
            yield self._held
        finally:
            lock.release()

    @asynccontextmanager
    async def lease_tx(self) -> AsyncIterator[Tx]:
        """A transaction for renewing leases, on a connection of its own on PostgreSQL. Under load every pooled
        connection can be busy with the very work the leases protect: a renewal that waited its turn behind it
        let them lapse (another driver then ran the same turns again). SQLite: a transaction as any other (its
        transactions take turns on one connection, which never waits on a pool)."""
        if self._sqlite_turn is not None:
            async with self.tx() as tx:
                yield tx
            return
        if self._leases is None:
            self._leases = side_engine(self.engine.url)
        async with self._leases.begin() as conn:
            yield Tx(conn)

    async def close(self) -> None:
        if self._leases is not None:
            await self._leases.dispose()
            self._leases = None
        if self._held is not None:
            await self._held.close()
            self._held = None
        await self.engine.dispose()
        if self._sole is not None:
            self._sole.release()
            self._sole = None
