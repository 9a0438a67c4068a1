"""Rate budgets: a token bucket per workspace and method (and per channel for new posts), shared by every replica.

A platform allows each app so many calls a minute per workspace and method, and about one new message a second
per channel. Work that people must see (final posts, headers, polls) takes its call and, when the bucket is
empty, sleeps until the bucket has it; live text takes a call only when the bucket is full (a call nothing else
would use), and never while the platform has just answered "too many" (a 429 pauses the bucket for its
Retry-After).

Time is in the platform's seconds: wall-clock seconds times `scale` (1 in production; a test or bench runs the
limits faster, with the fake platform sped up by the same factor)."""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol

from core.storage.store import Store

log = logging.getLogger(__name__)
SHARE = 0.88  # of the platform's rate: a burst and a minute's refill stay under its limit (49 of Tier 3's 50)
BURST_SHARE = 0.1  # a full bucket holds this share of a minute's calls
FIRST_RESERVE_SHARE = 0.3  # of a bucket, never taken by a turn's first live words
IDLE_SHARE = 0.5  # of a bucket: held while no work waits on it, so a new placeholder is likely filled by an edit


@dataclass(frozen=True)
class Bucket:
    tokens: float
    at: float  # platform seconds when `tokens` was counted
    paused_until: float = 0.0


@dataclass(frozen=True)
class Rate:
    per_s: float
    burst: float

    @property
    def reserve(self) -> float:
        """Never taken by live text: all but the one call a full bucket would lose. Final work keeps coming while
        many discussions run, and every call live text took from it would delay it."""
        return self.burst - 1

    @property
    def first_reserve(self) -> float:
        """Never taken by a turn's first live words: what final work finds ready (people see a turn start at once
        while the workspace is not busy; its later words wait for a full bucket)."""
        return self.burst * FIRST_RESERVE_SHARE


def refill(b: Bucket | None, rate: Rate, now: float) -> Bucket:
    if b is None or b.at > now + 3600:  # new, or written on another time scale (a bench): start full
        return Bucket(rate.burst, now)
    return Bucket(min(rate.burst, b.tokens + max(0.0, now - b.at) * rate.per_s), max(now, b.at), b.paused_until)


def reserve(b: Bucket | None, rate: Rate, now: float) -> tuple[Bucket, float]:
    """Work that must be done: take a call now and wait (the seconds returned) until the bucket had it."""
    b = refill(b, rate, now)
    b = replace(b, tokens=b.tokens - 1)
    return b, max(0.0, b.at - now) + max(0.0, -b.tokens / rate.per_s)  # `at` is ahead of now while paused


def take_left(b: Bucket | None, rate: Rate, now: float, keep: float | None = None) -> tuple[Bucket, bool]:
    """Live text: a call only if one is left above the reserve (or `keep`) now, and the platform has not just
    said stop."""
    r = refill(b, rate, now)
    if r.paused_until > now or r.tokens - 1 < (rate.reserve if keep is None else keep):
        return b or r, False  # nothing taken: the bucket as given (see Change)
    return replace(r, tokens=r.tokens - 1), True


def idle(b: Bucket | None, rate: Rate, now: float) -> tuple[Bucket, bool]:
    """Whether the bucket holds at least half its burst now (no work is waiting on it), taking nothing. A quiet
    workspace's bucket is there or near full even just after a discussion's header and first edits took their
    calls; a busy one's stays near empty, since final work takes every call as it comes back."""
    r = refill(b, rate, now)
    return b or r, r.paused_until <= now and r.tokens >= rate.burst * IDLE_SHARE


def pause(b: Bucket | None, rate: Rate, now: float, until: float) -> Bucket:
    """The platform refused a call: nothing more until `until`, and the bucket counted empty from then on."""
    b = refill(b, rate, now)
    return Bucket(min(b.tokens, 0.0), max(b.at, until), max(b.paused_until, until))


def stopped(b: Bucket | None, rate: Rate | None, now: float, until: float) -> Bucket:
    """A bucket paused until `until` (`rate` None: one that only says whether live text is paused, kept to the
    later of two pauses)."""
    if rate is None:
        return Bucket(0.0, now, max(until, b.paused_until if b else 0.0))
    return pause(b, rate, now, until)


class Buckets(Protocol):
    """Where buckets live; each method applies one rule above to one bucket, at `now` (the platform's seconds)."""

    async def spend(self, key: str, rate: Rate, now: float) -> float:
        """Work that must be done: a call taken, and the seconds to wait for it (`reserve`)."""

    async def take(self, key: str, rate: Rate, now: float, keep: float) -> bool:
        """A call only if one is left above `keep` now, and the bucket is not paused (`take_left`)."""

    async def idle(self, key: str, rate: Rate, now: float) -> bool:
        """Whether the bucket holds half its burst, taking nothing (`idle`)."""

    async def paused(self, key: str, now: float) -> bool:
        """Whether a bucket that only pauses (a workspace's live text) is paused now."""

    async def pause(self, key: str, rate: Rate | None, now: float, until: float) -> None:
        """The platform said stop: the bucket paused until `until` (`stopped`)."""

    async def close(self) -> None: ...


class LocalBuckets:
    """In this process (SQLite: one process drives everything)."""

    def __init__(self) -> None:
        self.rows: dict[str, Bucket] = {}

    async def spend(self, key: str, rate: Rate, now: float) -> float:
        self.rows[key], wait = reserve(self.rows.get(key), rate, now)
        return wait

    async def take(self, key: str, rate: Rate, now: float, keep: float) -> bool:
        self.rows[key], ok = take_left(self.rows.get(key), rate, now, keep)
        return ok

    async def idle(self, key: str, rate: Rate, now: float) -> bool:
        self.rows[key], ok = idle(self.rows.get(key), rate, now)
        return ok

    async def paused(self, key: str, now: float) -> bool:
        b = self.rows.get(key)
        return b is not None and b.paused_until > now

    async def pause(self, key: str, rate: Rate | None, now: float, until: float) -> None:
        self.rows[key] = stopped(self.rows.get(key), rate, now, until)

    async def close(self) -> None:
        """Nothing to let go: the buckets end with the process."""


@dataclass
class Lease:
    """What this replica leased of one bucket and has not spent."""

    rate: Rate
    ready: list[float] = field(default_factory=list)  # platform seconds each unspent token is ready from, in order
    row: Bucket | None = None  # the bucket's row as this replica's last lease or hand-back left it
    back: float = 0.0  # unspent tokens to hand back: their time ran out, or live text's pause took them
    batch: float = 1.0  # tokens the next lease asks for
    took: float = 0.0  # tokens the last lease took, and of them ...
    spent: int = 0  # ... how many were spent
    alone: bool = False  # no other replica drew on the bucket between this replica's last two leases
    used: float = 0.0  # wall-clock seconds of the last use


class LeasedBuckets:
    """In the database, a row per bucket, shared by every replica (PostgreSQL), each leasing tokens a batch at a time.

    A replica that needs a call and has no token of the bucket left takes a batch of tokens from its row in one
    statement (the row refilled to now, the tokens it hands back added, the batch taken: made, full, if it is not
    there yet), and spends them in memory, with no statement at all. Every row write took a call otherwise: with
    three replicas sharing a workspace, 8.45 row writes a model call, each on a row every replica writes.

    Within the platform's limits across replicas:
    - a replica spends only what it leased: a token is spent once, from its memory, and none is made there;
    - a token leased is taken from the row as a call would have been when it was leased (or, in debt, when the
      bucket would have had it), so the replicas together take no more than the bucket allows, as one process did;
    - a token may be spent only within `LEASE_S` of when it is ready, later than the bucket counted it: `SHARE`
      leaves a minute's limit room for 1.36 s of that (49 of 50 calls), so `LEASE_S` is 1 s;
    - a token not spent by then is handed back at the next write-back (`FLUSH_S`), or lease, and every one at
      close; a replica that stopped hands none back, and the bucket refills as if they were spent, so the
      replicas still running have the whole rate again within a burst's refill (`LEASE_S` after the lease at most
      its tokens were ever spent).

    How many tokens a lease asks for (`batch`): twice the last if every token of the last was spent, else as many as
    were (at least one), up to the burst or `AHEAD_S` seconds of refill (more of a bucket paced one call a second).
    A replica alone on a bucket (no other replica took from it between its last two leases) takes that many even if
    the bucket does not have them yet: the ones in debt are ready as the bucket refills, in order, as its calls
    would have waited for them one by one, and a busy bucket costs a statement a batch rather than a call. Where
    other replicas take from it too, a lease takes only what the bucket holds now (one, if it holds none), so that
    no other replica waits behind tokens leased ahead that nobody spends; it still takes a batch when there.

    A look that takes nothing (is the workspace idle, is a call left above the reserve) goes by the row as this
    replica last saw it, refilled since, with its unspent tokens: what the bucket would hold were they handed back.
    A 429 is written to the row at once, under its lock, with this replica's unspent tokens handed back (the calls
    promised keep their places after the pause), and other replicas' leases read it there; whether live text is
    paused is read with each write-back."""

    LEASE_S = 1.0  # platform seconds a leased token may be spent after it is ready (see above)
    AHEAD_S = 5.0  # a batch is at most the burst, or this many seconds of refill if more
    FLUSH_S = 1.0  # wall-clock seconds between write-backs: unspent tokens handed back, live text's pauses read
    IDLE_S = 300.0  # a bucket unused this long (nothing leased) is forgotten

    def __init__(self, store: Store, *, scale: float = 1.0, wall: Callable[[], float] = time.time) -> None:
        self.store, self.scale, self._wall = store, scale, wall
        self._leases: dict[str, Lease] = {}
        self._turns: dict[str, asyncio.Lock] = {}  # one lease of a bucket at a time in this process
        self._pauses: dict[str, list[float]] = {}  # live text's buckets: [paused until, wall time last asked]
        self._writing = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None

    def _now(self) -> float:
        return self._wall() * self.scale

    def _lease_of(self, key: str, rate: Rate) -> Lease:
        lease = self._leases.get(key)
        if lease is None:
            lease = self._leases[key] = Lease(rate)
            self._write_back_soon()
        lease.rate, lease.used = rate, self._wall()
        return lease

    def _expire(self, lease: Lease, now: float) -> None:
        """Tokens whose time ran out unspent, to be handed back."""
        late = bisect.bisect_left(lease.ready, now - self.LEASE_S)
        if late:
            del lease.ready[:late]
            lease.back += late

    def _view(self, lease: Lease, now: float) -> Bucket:
        """The bucket as this replica last saw it, refilled since, with the tokens it holds or hands back."""
        r = refill(lease.row, lease.rate, now)
        return replace(r, tokens=min(lease.rate.burst, r.tokens + len(lease.ready) + lease.back))

    async def spend(self, key: str, rate: Rate, now: float) -> float:
        lease = self._lease_of(key, rate)
        async with self._turn(key):
            self._expire(lease, now)
            if not lease.ready:
                await self._lease(key, lease, now, must=True)
            return max(0.0, self._spend(lease) - now)

    async def take(self, key: str, rate: Rate, now: float, keep: float) -> bool:
        lease = self._lease_of(key, rate)
        async with self._turn(key):
            self._expire(lease, now)
            if not take_left(self._view(lease, now), rate, now, keep)[1]:
                return False  # none left above `keep`, or paused, as this replica last saw the bucket
            if not (lease.ready and lease.ready[0] <= now):
                await self._lease(key, lease, now, must=False, keep=keep)
                if not (lease.ready and lease.ready[0] <= now):
                    return False  # the row says otherwise: other replicas took them
            self._spend(lease)
            return True

    async def idle(self, key: str, rate: Rate, now: float) -> bool:
        lease = self._lease_of(key, rate)
        self._expire(lease, now)
        return idle(self._view(lease, now), rate, now)[1]

    async def paused(self, key: str, now: float) -> bool:
        known = self._pauses.get(key)
        if known is None:  # read with the next write-back; till then, as a workspace no 429 paused
            known = self._pauses[key] = [0.0, 0.0]
            self._write_back_soon()
        known[1] = self._wall()
        return known[0] > now

    async def pause(self, key: str, rate: Rate | None, now: float, until: float) -> None:
        lease = self._leases.get(key)
        back = 0.0
        if lease is not None:  # handed back with the pause: calls waiting for them wait for the pause instead
            back, lease.back = lease.back + len(lease.ready), 0.0
            lease.ready.clear()
        async with self.store.tx() as tx:
            await tx.make_bucket(key, (rate.burst if rate else 0.0, now, 0.0))  # as a lease would (if not there)
            row = await tx.lock_bucket(key)
            was = Bucket(*row) if row else None
            if rate is not None and back:
                r = refill(was, rate, now)
                was = replace(r, tokens=min(rate.burst, r.tokens + back))
            b = stopped(was, rate, now, until)
            await tx.save_bucket(key, (b.tokens, b.at, b.paused_until))
        if lease is not None:
            lease.row = b
        if rate is None:
            self._pauses[key] = [b.paused_until, self._wall()]
            self._write_back_soon()

    def _turn(self, key: str) -> asyncio.Lock:
        return self._turns.get(key) or self._turns.setdefault(key, asyncio.Lock())  # no lock made per call

    @staticmethod
    def _spend(lease: Lease) -> float:
        lease.spent += 1
        return lease.ready.pop(0)

    async def _lease(self, key: str, lease: Lease, now: float, *, must: bool, keep: float = 0.0) -> None:
        rate = lease.rate
        if lease.took:  # grown while every token leased is spent, shrunk to what was where some were not
            top = max(1.0, math.floor(max(rate.burst, rate.per_s * self.AHEAD_S)))
            lease.batch = min(top, lease.batch * 2) if lease.spent >= lease.took else max(1.0, float(lease.spent))
        back, lease.back = lease.back, 0.0
        try:
            async with self.store.autocommit() as tx:
                row, taken = await tx.lease_bucket(key, now, (rate.per_s, rate.burst), lease.batch, keep=keep,
                                                   must=must, ahead=lease.alone, back=back)
        except BaseException:
            lease.back += back  # not handed back: the next write-back tries again
            raise
        had = row[0] + taken  # the bucket, refilled and with what was handed back, before this lease
        if lease.row is not None:  # another replica took from it since, if it held less than this one left it
            lease.alone = had >= min(rate.burst, refill(lease.row, rate, now).tokens + back) - 1e-9
        lease.row, lease.took, lease.spent = Bucket(*row), taken, 0
        for j in range(1, int(taken) + 1):  # the j-th token taken is ready when the bucket would have had it
            bisect.insort(lease.ready, row[1] + max(0.0, j - had) / rate.per_s)

    def _write_back_soon(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._write_back(), name="rate-budget:write-back")

    async def _write_back(self) -> None:
        while self._leases or self._pauses:
            await asyncio.sleep(self.FLUSH_S)
            try:
                await self.flush()
            except Exception:  # the tokens are handed back by a later write-back, or a lease
                log.warning("could not write back %d rate budget bucket(s)", len(self._leases), exc_info=True)

    async def flush(self, *, everything: bool = False) -> None:
        """Hand back the tokens whose time ran out unspent (all unspent, with `everything`: at close), read
        whether live text is paused, and forget the buckets nothing used for IDLE_S."""
        async with self._writing:
            now, wall = self._now(), self._wall()
            backs: dict[str, tuple[float, float, float]] = {}
            for key, lease in self._leases.items():
                self._expire(lease, now)
                if everything:
                    lease.back += len(lease.ready)
                    lease.ready.clear()
                if lease.back:
                    backs[key] = (lease.rate.per_s, lease.rate.burst, lease.back)
                    lease.back = 0.0
            asked = sorted(k for k, (_, at) in self._pauses.items() if wall - at < self.IDLE_S)
            pauses: dict[str, float] = {}
            try:
                if backs or (asked and not everything):
                    async with self.store.autocommit() as tx:  # each on its own: neither needs the other
                        if backs:
                            await tx.give_back(now, backs)
                        pauses = await tx.pauses(asked) if asked and not everything else {}
            except BaseException:
                for key, (_, _, back) in backs.items():
                    self._leases[key].back += back
                raise
            for key, (_, _, back) in backs.items():  # the row as the hand-back left it
                lease = self._leases[key]
                r = refill(lease.row, lease.rate, now)
                lease.row = replace(r, tokens=min(lease.rate.burst, r.tokens + back))
            for key in list(self._pauses):
                if key in pauses:
                    self._pauses[key][0] = pauses[key]
                elif key not in asked:
                    del self._pauses[key]
            for key in [k for k, lease in self._leases.items()
                        if not lease.ready and wall - lease.used >= self.IDLE_S]:
                del self._leases[key]
                self._turns.pop(key, None)

    async def close(self) -> None:
        """Hand back every unspent token, so other replicas need not wait for the refill (a failure is logged: the
        bucket then refills as if they were spent)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        try:
            await self.flush(everything=True)
        except Exception:
            log.warning("could not hand back rate budget tokens of %d bucket(s)", len(self._leases), exc_info=True)


def buckets_for(store: Store, scale: float = 1.0) -> Buckets:
    """`scale`: the budget's time scale (leased tokens are timed on its clock)."""
    return LocalBuckets() if store.engine.dialect.name == "sqlite" else LeasedBuckets(store, scale=scale)


class RateBudget:
    """The calls a platform allows, spent by priority. `per_minute`: method -> calls a minute per workspace; a
    method not named has `default` calls a minute (None: no budget here); new posts are paced per channel with
    `pace`."""

    def __init__(self, buckets: Buckets, per_minute: Mapping[str, float], *, default: float | None = None,
                 scale: float = 1.0, wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.buckets, self.per_minute, self.default, self.scale = buckets, per_minute, default, scale
        self._wall, self._sleep = wall, sleep
        self.spent: Counter[tuple[str, str]] = Counter()  # (method, "final" | "live" | "skipped" | "refused")

    def now(self) -> float:
        return self._wall() * self.scale

    def rate(self, method: str) -> Rate | None:
        limit = self.per_minute.get(method, self.default)
        if not limit:
            return None
        return Rate(per_s=SHARE * limit / 60, burst=max(1.0, BURST_SHARE * limit))

    async def wait(self, platform_s: float) -> None:
        if platform_s > 0:
            await self._sleep(platform_s / self.scale)

    async def spend(self, scope: str, method: str) -> None:
        """Take a call for work people must see, waiting for it if the bucket is empty or paused."""
        rate = self.rate(method)
        if rate is None:
            return
        await self.wait(await self.buckets.spend(f"{scope}:{method}", rate, self.now()))
        self.spent[(method, "final")] += 1

    async def spend_left(self, scope: str, method: str, first: bool = False) -> bool:
        """Take a call for live text, only from what is left (`first`: a turn's first words, above a smaller
        reserve), and never while the workspace's live text is paused by a 429; False: skip this update."""
        rate = self.rate(method)
        if rate is None:
            return True
        now = self.now()
        ok = not await self.buckets.paused(f"{scope}:live", now) and await self.buckets.take(
            f"{scope}:{method}", rate, now, rate.first_reserve if first else rate.reserve)
        self.spent[(method, "live" if ok else "skipped")] += 1
        return ok

    async def spend_spare(self, scope: str, method: str) -> bool:
        """Take a call only if one is there right now (a courtesy worth no wait); False: go without it."""
        rate = self.rate(method)
        if rate is None:
            return True
        ok = await self.buckets.take(f"{scope}:{method}", rate, self.now(), 0.0)
        self.spent[(method, "spare" if ok else "skipped")] += 1
        return ok

    async def idle(self, scope: str, method: str) -> bool:
        """Whether no work spends this method's calls right now (its bucket is full), taking none: work that would
        want a call later, and that other calls could do instead, is started only then (a bucket merely not empty
        let 100 discussions' placeholders take or waste so many edits that round 1 took 1.3-1.4x Slack's bound)."""
        rate = self.rate(method)
        if rate is None:
            return True
        return await self.buckets.idle(f"{scope}:{method}", rate, self.now())

    async def refused(self, scope: str, method: str, retry_after_s: float, channel: str = "") -> None:
        """The platform answered 429: pause this bucket (a channel's posts, or the workspace's method), and the
        workspace's live text whatever the method: it is the first thing to give way."""
        self.spent[(method, "refused")] += 1
        now = self.now()
        until = now + retry_after_s
        await self.buckets.pause(f"{scope}:live", None, now, until)
        key, rate = (f"{scope}:post:{channel}", Rate(1.0, 1.0)) if channel else (f"{scope}:{method}",
                                                                                   self.rate(method))
        if rate is not None:
            await self.buckets.pause(key, rate, now, until)

    async def pace(self, scope: str, channel: str, interval_s: float) -> None:
        """Wait for this channel's next slot for a new message: one per `interval_s`, in the order asked."""
        if interval_s <= 0:
            return
        rate = Rate(per_s=1 / interval_s, burst=1.0)
        await self.wait(await self.buckets.spend(f"{scope}:post:{channel}", rate, self.now()))
