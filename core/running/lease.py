"""The lease: taking, renewing, losing and giving back a discussion, and the fenced transaction that writes under it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from core.models import Discussion, Usage
from core.ports import Clock
from core.running.config import DriverConfig
from core.running.kept import Kept, KeptState
from core.running.spending import day_window
from core.storage.store import Store, Tx

log = logging.getLogger(__name__)
T = TypeVar("T")


class LeaseLost(Exception):
    """This process no longer holds the discussion's lease: its driver must stop without writing anything."""


class Lease:
    """The leases this process holds: taken and given back around a discussion's steps, renewed together by one
    heartbeat, checked by every fenced transaction. A lease that cannot be renewed in time stops its steps."""

    def __init__(self, store: Store, clock: Clock, config: DriverConfig, kept: Kept) -> None:
        self.store, self.clock, self.config, self.kept = store, clock, config, kept
        self.work: dict[str, asyncio.Task[None]] = {}  # the steps of each discussion held here
        self.expires: dict[str, float] = {}  # when each lease held here runs out, as last renewed (timestamp)
        self._renewer: asyncio.Task[None] | None = None

    async def take(self, discussion_id: str, read: Callable[[Tx], Awaitable[T]]) -> T | None:
        """Take the discussion's lease, and `read` what the caller needs in the same transaction; None: another
        process holds it."""
        taken = self.clock.now()  # the lease runs from here in the database: never later here
        async with self.store.tx() as tx:
            if not await tx.acquire_lease(discussion_id, self.config.owner, taken, self.config.lease_ttl):
                return None
            got = await read(tx)
        self.expires[discussion_id] = taken.timestamp() + self.config.lease_ttl
        return got

    def hold(self, discussion_id: str, work: asyncio.Task[None]) -> None:
        """`work` runs the discussion's steps under the lease just taken: the heartbeat renews it, and stops
        `work` the moment it cannot."""
        self.work[discussion_id] = work
        if self._renewer is None or self._renewer.done():  # the process's one heartbeat runs while it holds any
            self._renewer = asyncio.create_task(self._heartbeat(), name="lease-heartbeat")

    def held_until(self, discussion_id: str) -> float | None:
        """When the lease on the discussion runs out as last renewed here (None: not held by these steps)."""
        return self.expires.get(discussion_id)

    async def let_go(self, discussion_id: str) -> None:
        """Give the lease back: another process may take the discussion at once."""
        self.work.pop(discussion_id, None)
        self.expires.pop(discussion_id, None)
        async with self.store.tx() as tx:
            await tx.release_lease(discussion_id, self.config.owner)

    async def stop(self) -> None:
        """Nothing is driven here any more: the heartbeat stops."""
        if self._renewer is not None:
            self._renewer.cancel()
            await asyncio.gather(self._renewer, return_exceptions=True)

    async def _heartbeat(self) -> None:
        """Renew every lease this process holds every third of their lifetime, in one transaction (one per
        discussion cost a transaction per discussion every few seconds); stop a discussion's work the moment its
        lease is gone or can no longer be renewed before it runs out (a database error is retried until then)."""
        interval = self.config.lease_ttl / 3
        while True:
            await self.config.beat_wait(interval)
            held = {d: w for d, w in self.work.items() if not w.done()}
            if not held:
                return  # the next driver starts it again
            now = self.clock.now()
            try:
                async with self.store.lease_tx() as tx:  # never behind the work it protects
                    kept = await tx.renew_leases(sorted(held), self.config.owner, now, self.config.lease_ttl)
            except Exception:
                log.warning("could not renew the leases on %d discussion(s)", len(held), exc_info=True)
                kept = {d for d in held if self.clock.now().timestamp() + interval < self.expires.get(d, 0.0)}
            else:
                for d in kept:
                    self.expires[d] = now.timestamp() + self.config.lease_ttl
            for d, work in held.items():
                if d not in kept:
                    work.cancel()

    @contextlib.asynccontextmanager
    async def fenced(self, discussion_id: str, *, charge: tuple[str, Usage | None] = ("", None),
                     spent: bool = False) -> AsyncIterator[tuple[Tx, Discussion]]:
        """A transaction that writes only while this process holds the discussion's lease (checked and held in
        the same transaction), with the discussion as it is now; otherwise LeaseLost, and the discussion's steps
        here stop. `charge`: a turn's key and its call's cost, which the fence adds to the discussion's when the
        state kept here is whole, the turn running in it (`tx.charged_at_fence`). `spent`: the fence also reads
        what the workspace spent today, where it can (`tx.spent_at_fence`), for a step that may start turns."""
        kept = self.kept.get(discussion_id)
        async with kept.turn if kept is not None else contextlib.nullcontext():
            async with self._fenced(discussion_id, kept, charge, spent) as fenced:
                yield fenced

    @contextlib.asynccontextmanager
    async def _fenced(self, discussion_id: str, kept: KeptState | None, charge: tuple[str, Usage | None],
                      spent: bool) -> AsyncIterator[tuple[Tx, Discussion]]:
        if kept is not None:
            kept.open += 1
        try:
            key, usage = charge
            fee = None
            if kept is not None and usage is not None and kept.revision is not None and kept.running(key):
                fee = (usage.cost_usd, kept.revision)
            async with self.store.tx() as tx:
                now, limits = self.clock.now(), self.config.limits
                since = day_window(now, limits.tz)[0] if spent and limits.workspace_usd_per_day > 0 else None
                current = await tx.fence(discussion_id, self.config.owner, now, charge=fee, spent_since=since,
                                         spend_key=kept.workspace if kept is not None else None)
                if current is not None and kept is not None:
                    kept.workspace = (current.platform, current.workspace)
                if current is None:
                    work = self.work.get(discussion_id)
                    if work is not None and work is not asyncio.current_task():
                        work.cancel()  # parallel turns of the step stop too, not only the one that noticed
                    raise LeaseLost(discussion_id)
                yield tx, current
            self.kept.committed(discussion_id, tx)
        finally:
            if kept is not None:
                kept.open -= 1
