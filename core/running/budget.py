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
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar

from core.storage.store import Store

T = TypeVar("T")
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


# A rule: the bucket as it is now (None: never written) -> the bucket to write, and the rule's answer. A rule that
# takes nothing gives back the bucket it was given, and nothing is written: only time passed, which the next change
# counts again from the same row.
Change = Callable[[Bucket | None], tuple[Bucket, T]]


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

    async def meet(self, fresh: dict[str, Bucket]) -> None:
        """Buckets a workspace will likely use, as they start: made now, where making each when first used costs."""

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

    async def meet(self, fresh: dict[str, Bucket]) -> None:
        """Nothing to make: a bucket starts when it is first changed, at no cost."""

    async def close(self) -> None:
        """Nothing to let go: the buckets end with the process."""


@dataclass
class Lease:
    """What this process leased of a bucket held by none, and has not spent."""

    rate: Rate
    ready: list[float] = field(default_factory=list)  # platform seconds each unspent token is ready from, in order
    back: float = 0.0  # unspent tokens to hand back: their time ran out
    batch: float = 1.0  # tokens the next lease asks for
    took: float = 0.0  # tokens the last lease took, and of them ...
    spent: int = 0  # ... how many were spent
    used: float = 0.0  # wall-clock seconds of the last use


class SharedBuckets:
    """In the database, a row per bucket (PostgreSQL: shared by every replica).

    A bucket is held by the replica that uses it, while no other wants it: the holder changes it in memory, with
    no statement at all (a replica's Slack calls otherwise cost a statement each, the most frequent statement of
    all). Every `FLUSH_S` it writes back the buckets it changed and looks for any another replica wants, in one
    transaction, and every `RENEW_S` renews all its holds for `HOLD_S`. A replica that needs a bucket another holds
    marks it wanted and waits; the holder lets it go at its next write-back, and then no replica holds it for
    `SHARED_S`: it is changed row by row, as below (one its holder never changed since `meet` made it is let go
    as if idle, and held by the replica that wanted it). A workspace's buckets are made together, held, at its first
    call (`meet`): made one by one, they cost a statement each, about one in three model calls. A hold nothing
    changed for `IDLE_S` is let go. A hold whose replica stopped writing runs out, and the next replica counts the
    bucket empty until the hold's end (what the stopped one spent since its last write is unknown); a holder stops
    using its hold half a hold before it ends, so clocks may differ by that much between replicas.

    A bucket held by none (for `SHARED_S` after two replicas wanted it, or always, without holds) is leased from
    by every replica that uses it, a batch of tokens at a time: a replica with no token of it left takes a batch
    from its row in one statement (the row refilled to now, the tokens it hands back added, the batch taken; made,
    full, if not there; left as it is if another replica holds it), and spends them in memory with no statement.
    Changed row by row instead, with three replicas sharing a workspace, every call was a write of a row every
    replica wrote, most of them a missed compare-and-swap, a read under lock and a write (8.45 row writes a model
    call). Within the platform's limits across replicas:
    - a replica spends only tokens it leased, each once, and leases another batch only when it has none left;
    - a token leased is taken from the row as a call would have been, when it was leased (or, leased ahead, when
      the bucket would have had it), so the replicas together take no more than the bucket allows;
    - a token may be spent only within `LEASE_S` of when it is ready, that much later than the bucket counted it:
      `SHARE` leaves a minute's limit room for 1.36 s of that (49 of 50 calls), so `LEASE_S` is 1 s;
    - a token not spent by then is handed back at the next write-back (`FLUSH_S`) or lease, and every one at close;
      a replica that stopped hands none back, and the bucket refills as if they were spent: the others have the
      whole rate again within a burst's refill, and never wait for its lease to end.
    How many tokens a lease asks for: twice the last if every token of the last was spent, else as many as were (at
    least one), up to the burst or `AHEAD_S` seconds of refill, whichever is more (a channel's pace has a burst of
    one). A replica alone on the bucket (its row reads at least what this replica's last lease left it, refilled:
    none took from it since, which the lease statement itself checks) takes that many even where the bucket does not
    have them yet, each ready as the bucket would have had it, so a busy bucket costs a statement a batch rather than
    a call; where others take from it too, a lease takes only what the bucket holds now (one, if none), so no replica
    waits behind tokens leased ahead that nobody spends. Batches stay small where tokens go unspent, as they do when
    several replicas share a bucket each making a few of its calls, and grow where one replica makes them all.

    A look that takes nothing (is the workspace idle, is live text paused, is a call left for it) writes nothing and
    goes by what this process last wrote or read, refilled since, with the tokens it leased and has not spent; only
    such a look, which decides optional work (a placeholder, a live edit), can go by a count another replica has
    since moved. A 429 is written to the row under its lock (with the tokens leased and unspent, so the calls
    promised keep their places after the pause), and leases read it there. A bucket this process has not met is
    made as its first change leaves it, in one statement that does nothing if its row is there; then it is read and
    changed in a transaction that locks its row. Changes to one bucket in this process queue for it here."""

    KNOWN_MAX = 10_000  # buckets remembered; past this the memory starts over (each next change reads its row)
    HOLD_S = 10.0  # wall-clock seconds a hold lasts past its last write-back
    FLUSH_S = 1.0  # how often a holder writes its buckets back: about what a replica wanting one waits
    RENEW_S = HOLD_S / 4  # how often a holder renews its holds
    SHARED_S = 300.0  # a bucket two replicas wanted is held by none, and leased from, for this long
    IDLE_S = 300.0  # a hold nothing changed, or a lease nothing used, for this long is let go (or forgotten)
    LEASE_S = 1.0  # platform seconds a leased token may be spent after it is ready (see above)
    AHEAD_S = 5.0  # a lease asks for at most the burst, or this many seconds of refill if more

    def __init__(self, store: Store, *, holds: bool = True, scale: float = 1.0,
                 wall: Callable[[], float] = time.time,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.store, self.holds, self.scale, self._wall, self._sleep = store, holds, scale, wall, sleep
        self.me = uuid.uuid4().hex
        self._known: dict[str, Bucket] = {}  # each bucket as this process last wrote it
        self._shared_until: dict[str, float] = {}  # of those, until when none may hold it (then held again)
        self._turns: dict[str, asyncio.Lock] = {}  # of the buckets known, one change at a time in this process
        self._held: dict[str, Bucket] = {}  # the buckets this process holds, as they are now
        self._held_until: dict[str, float] = {}  # in the platform's seconds, as the row says
        self._used: dict[str, float] = {}  # wall-clock time each held bucket last changed
        self._met: set[str] = set()  # buckets this process found or made a row of: the others are made first
        self._dirty: set[str] = set()  # held buckets changed since they were last written
        self._untouched: set[str] = set()  # held buckets made at `meet` and not changed since: wanted, just given
        self._renew_at = 0.0  # in the platform's seconds: when the holds are next renewed
        self._leases: dict[str, Lease] = {}  # of the buckets known (held by none), what this process leased
        self._writing = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None

    def _now(self) -> float:
        return self._wall() * self.scale

    async def spend(self, key: str, rate: Rate, now: float) -> float:
        return await self._change(key, lambda b: reserve(b, rate, now), (rate, None))

    async def take(self, key: str, rate: Rate, now: float, keep: float) -> bool:
        return await self._change(key, lambda b: take_left(b, rate, now, keep), (rate, keep))

    async def idle(self, key: str, rate: Rate, now: float) -> bool:
        return await self._change(key, lambda b: idle(b, rate, now))

    async def paused(self, key: str, now: float) -> bool:
        def heard(b: Bucket | None) -> tuple[Bucket, bool]:
            return b or Bucket(0.0, now), b is not None and b.paused_until > now

        return await self._change(key, heard)

    async def pause(self, key: str, rate: Rate | None, now: float, until: float) -> None:
        lease = self._leases.pop(key, None)  # its unspent tokens go back to the row with the pause
        back = lease.back + len(lease.ready) if lease is not None else 0.0

        def stop(b: Bucket | None) -> tuple[Bucket, None]:
            if rate is not None and back:
                r = refill(b, rate, now)
                b = replace(r, tokens=min(rate.burst, r.tokens + back))
            return stopped(b, rate, now, until), None

        if key in self._held:
            await self._change(key, stop)
        else:
            await self._change_locked(key, stop)

    async def _change(self, key: str, rule: Change[T], ask: tuple[Rate, float | None] | None = None) -> T:
        """`ask`: a change that takes a call (the bucket's rate, and what live text leaves: None for work that must
        be done), leased where the bucket is held by none; a look otherwise."""
        if key in self._held:
            if self._writing.locked():  # a write in flight: what it writes must stay what is held
                async with self._writing:
                    pass
            done = self._change_held(key, rule)
            if done is not None:
                return done[0]
        if key not in self._known or self._now() >= self._shared_until.get(key, math.inf):
            return await self._change_locked(key, rule)  # new here, or no longer shared: held again if it can be
        turn = self._turns.get(key) or self._turns.setdefault(key, asyncio.Lock())  # no lock made per call
        async with turn:
            if key in self._known:
                if ask is not None:
                    leased = await self._leased(key, *ask, self._now())
                    if leased is not None:
                        return leased[0]  # type: ignore[return-value]  # the rule's answer, as the lease gave it
                else:
                    view = self._view(key)
                    b, out = rule(view)
                    if b is view:  # took nothing: no write
                        return out
            return await self._change_locked(key, rule)

    def _view(self, key: str) -> Bucket:
        """A bucket held by none as this process last wrote or read it, refilled since, with the tokens it leased
        and has not spent: what the bucket holds were they handed back."""
        lease, was = self._leases.get(key), self._known[key]
        if lease is None:
            return was
        self._expire(lease)
        r = refill(was, lease.rate, self._now())
        return replace(r, tokens=min(lease.rate.burst, r.tokens + len(lease.ready) + lease.back))

    def _expire(self, lease: Lease) -> None:
        """Tokens whose time ran out unspent, to be handed back."""
        late = bisect.bisect_left(lease.ready, self._now() - self.LEASE_S)
        if late:
            del lease.ready[:late]
            lease.back += late

    async def _leased(self, key: str, rate: Rate, keep: float | None, now: float) -> tuple[float | bool] | None:
        """A call taken from what this process leased of a bucket held by none: work that must be done waits (the
        seconds returned) for its token; other work takes one only if one is left above `keep` now (None: this
        process cannot lease from its row, which another replica holds now)."""
        lease = self._leases.get(key)
        if lease is None:
            lease = self._leases[key] = Lease(rate)
            self._write_back_soon()
        lease.rate, lease.used = rate, self._wall()
        self._expire(lease)
        if keep is None:
            if not lease.ready and not await self._lease(key, lease, now, must=True):
                return None
            return (max(0.0, self._spend(lease) - now),)
        if not take_left(self._view(key), rate, now, keep)[1]:
            return (False,)  # none left above `keep`, or paused, as this process last saw the bucket
        if not (lease.ready and lease.ready[0] <= now):
            if not await self._lease(key, lease, now, must=False, keep=keep):
                return None
            if not (lease.ready and lease.ready[0] <= now):
                return (False,)  # the row says otherwise: other replicas took them
        self._spend(lease)
        return (True,)

    @staticmethod
    def _spend(lease: Lease) -> float:
        lease.spent += 1
        return lease.ready.pop(0)

    async def _lease(self, key: str, lease: Lease, now: float, *, must: bool, keep: float = 0.0) -> bool:
        """A batch of tokens leased from the bucket's row, in one statement (False: another replica holds it)."""
        rate = lease.rate
        if lease.took:  # grown while every token leased is spent, shrunk to what was where some were not
            top = max(1.0, math.floor(max(rate.burst, rate.per_s * self.AHEAD_S)))
            lease.batch = min(top, lease.batch * 2) if lease.spent >= lease.took else max(1.0, float(lease.spent))
        back, lease.back = lease.back, 0.0
        # The row as this process's last lease left it, refilled, with what it hands back: if the row reads at least
        # that, no other replica took from it since, and a lease may take tokens ahead of the refill.
        alone = min(rate.burst, refill(self._known[key], rate, now).tokens + back) - 1e-6 if lease.took else math.inf
        try:
            async with self.store.autocommit() as tx:
                found = await tx.lease_bucket(key, now, (rate.per_s, rate.burst), lease.batch, keep=keep,
                                              must=must, alone=alone, back=back)
        except BaseException:
            lease.back += back  # not handed back: the next write-back tries again
            raise
        if found is None:
            self._leases.pop(key, None)  # what it held goes with it: counted spent, as for a stopped replica
            self._known.pop(key, None)
            return False
        row, taken = found
        had = row[0] + taken  # the bucket, refilled and with what was handed back, before this lease
        self._known[key], lease.took, lease.spent = Bucket(*row), taken, 0
        for j in range(1, int(taken) + 1):  # the j-th token taken is ready when the bucket would have had it
            bisect.insort(lease.ready, row[1] + max(0.0, j - had) / rate.per_s)
        return True

    def _change_held(self, key: str, rule: Change[T]) -> tuple[T] | None:
        """A bucket this process holds, changed in memory (None: not held, or its hold ends within half a hold)."""
        held = self._held.get(key)
        if held is None or self._now() >= self._held_until[key] - self.HOLD_S * self.scale / 2:
            return None
        b, out = rule(held)
        if b is not held:
            self._held[key], self._used[key] = b, self._wall()
            self._dirty.add(key)
            self._untouched.discard(key)
        return (out,)

    async def _change_locked(self, key: str, rule: Change[T]) -> T:
        while True:
            # One write of held buckets at a time in this process: a hold taken, renewed or let go, a write-back.
            async with self._writing:
                done = self._change_held(key, rule)  # held meanwhile, by a change that went first
                if done is None and key not in self._met:
                    done = await self._make(key, rule)
                if done is not None:
                    return done[0]
                waits = False
                async with self.store.tx() as tx:
                    found = await tx.lock_held_bucket(key)
                    if found is None:  # its row is gone (deleted by hand): made again, as a bucket new here is
                        self._met.discard(key)
                        continue
                    row, (holder, held_until, wanted, shared_until) = found
                    now = self._now()
                    until = now + self.HOLD_S * self.scale
                    given = self._held.get(key) if holder == self.me else None
                    if given is None:
                        given = Bucket(*row)
                    if holder not in (None, self.me) and held_until > now:  # another replica holds it: ask
                        waits = True
                        if not wanted:
                            await tx.want_bucket(key)
                    else:
                        if holder not in (None, self.me):  # its replica stopped: what it spent since is unknown
                            given = Bucket(min(given.tokens, 0.0), max(given.at, held_until), given.paused_until)
                        b, out = rule(given)
                        held = self.holds and shared_until <= now
                        if held or holder is not None or b is not given:
                            await tx.save_bucket(key, (b.tokens, b.at, b.paused_until),
                                                 (self.me, until, False, shared_until) if held else
                                                 (None, 0.0, False, shared_until))
                if not waits:
                    if held:
                        self._hold(key, b, until)
                        return out
                    self._let_go(key)
                    self._remember(key, b, shared_until if self.holds else math.inf)  # the row reads so now
                    return out
            await self._sleep(self.FLUSH_S / 2)  # until its holder lets it go, at its next write-back

    async def meet(self, fresh: dict[str, Bucket]) -> None:
        """Make the buckets this process has not met yet as `fresh` says they start, in one statement, and hold the
        ones made; those that were there are read when first changed."""
        if all(k in self._met for k in fresh):
            return
        async with self._writing:
            todo = {k: b for k, b in fresh.items() if k not in self._met}  # met meanwhile, by a change that waited
            if not todo:
                return
            for key in todo:
                self._note_met(key)
            until = self._now() + self.HOLD_S * self.scale
            async with self.store.autocommit() as tx:
                made = await tx.make_buckets({k: (b.tokens, b.at, b.paused_until) for k, b in todo.items()},
                                             self.me if self.holds else None, until)
            for key in made:
                if self.holds:
                    self._hold(key, todo[key], until)
                    self._untouched.add(key)
                else:
                    self._remember(key, todo[key])

    def _note_met(self, key: str) -> None:
        if len(self._met) >= self.KNOWN_MAX:
            self._met.clear()
        self._met.add(key)

    async def _make(self, key: str, rule: Change[T]) -> tuple[T] | None:
        """A bucket this process has not met yet, made as its first change leaves it (and held), in one statement
        of its own; None: its row was there (or made meanwhile by another replica), and nothing was written."""
        self._note_met(key)
        b, out = rule(None)
        until = self._now() + self.HOLD_S * self.scale
        async with self.store.autocommit() as tx:
            if not await tx.make_bucket(key, (b.tokens, b.at, b.paused_until), self.me if self.holds else None,
                                        until):  # a row held by none: its held_until is never read
                return None
        if self.holds:
            self._hold(key, b, until)
        else:
            self._remember(key, b)
        return (out,)

    def _remember(self, key: str, b: Bucket, shared_until: float = math.inf) -> None:
        """A bucket held by none, as this process last wrote it, changed row by row until `shared_until`."""
        if len(self._known) >= self.KNOWN_MAX:
            self._known.clear()
            self._shared_until.clear()
            self._turns.clear()  # a change waiting on a dropped lock is still safe: its write checks the row
            self._leases.clear()  # what they held counted spent, as for a stopped replica
        self._known[key] = b
        self._shared_until[key] = shared_until

    def _hold(self, key: str, b: Bucket, until: float) -> None:
        self._known.pop(key, None)
        self._shared_until.pop(key, None)
        self._leases.pop(key, None)  # read with the row it now holds: what it leased and did not spend, counted spent
        self._held[key], self._held_until[key], self._used[key] = b, until, self._wall()
        self._write_back_soon()

    def _write_back_soon(self) -> None:
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._write_back(), name="rate-budget:write-back")

    def _let_go(self, key: str) -> None:
        self._held.pop(key, None)
        self._held_until.pop(key, None)
        self._used.pop(key, None)
        self._dirty.discard(key)
        self._untouched.discard(key)

    async def _write_back(self) -> None:
        while self._held or self._leases:
            await self._sleep(self.FLUSH_S)
            try:
                await self.flush()
            except Exception:  # the holds run out here unless a later write-back renews them
                log.warning("could not write back %d rate budget bucket(s)", len(self._held), exc_info=True)

    async def flush(self, *, let_go: bool = False) -> None:
        """Write back the buckets changed since the last write-back, and renew the holds when due; let go of those
        another replica wants (held by none for SHARED_S after, if this one changed them), those nothing changed for
        IDLE_S, and all of them with `let_go` (at close). Hand back the leased tokens whose time ran out unspent
        (every one unspent with `let_go`), and forget the leases nothing used for IDLE_S."""
        async with self._writing:
            now, wall = self._now(), self._wall()
            backs = self._backs(let_go)
            try:
                await self._write(now, wall, backs, let_go)
            except BaseException:
                for key, (_, _, back) in backs.items():  # not handed back: the next write-back tries again
                    if key in self._leases:
                        self._leases[key].back += back
                raise
            for key, (_, _, back) in backs.items():  # the row as the hand-back left it
                if key in self._known and key in self._leases:
                    r = refill(self._known[key], self._leases[key].rate, now)
                    self._known[key] = replace(r, tokens=min(self._leases[key].rate.burst, r.tokens + back))
            for key in [k for k, lease in self._leases.items() if not lease.ready and wall - lease.used >= self.IDLE_S]:
                del self._leases[key]

    def _backs(self, everything: bool) -> dict[str, tuple[float, float, float]]:
        """The leased tokens to hand back now, taken from the leases: key -> (per second, burst, tokens)."""
        backs = {}
        for key, lease in self._leases.items():
            self._expire(lease)
            if everything:
                lease.back += len(lease.ready)
                lease.ready.clear()
            if lease.back:
                backs[key] = (lease.rate.per_s, lease.rate.burst, lease.back)
                lease.back = 0.0
        return backs

    async def _write(self, now: float, wall: float, backs: dict[str, tuple[float, float, float]],
                     let_go: bool) -> None:
        if not self._held:
            if backs:
                async with self.store.autocommit() as tx:
                    await tx.give_back(now, backs)
            return
        until = now + self.HOLD_S * self.scale
        renew = let_go or now >= self._renew_at
        rows = {k: (b.tokens, b.at, b.paused_until) for k, b in self._held.items() if k in self._dirty}
        async with self.store.tx() as tx:
            if backs:
                await tx.give_back(now, backs)
            if rows:
                await tx.write_held(self.me, rows)
            still = await tx.renew_held(self.me, until) if renew else None
            wanted = {k for k, w in still.items() if w} if still is not None else await tx.wanted_held(self.me)
            # Sets: a replica holds a bucket per method of every workspace it serves (a thousand with 60), and
            # lists made the loop below quadratic in them, once a second.
            kept = {k for k in self._held if still is None or k in still}
            # One this replica never changed is given as if idle: the two replicas never both used it
            # (a workspace's buckets are made where its first call ran, often not where it is used).
            idle = {k for k in kept if let_go or wall - self._used.get(k, wall) >= self.IDLE_S
                    or (k in wanted and k in self._untouched)}
            given = {k for k in kept if k in wanted and k not in idle}
            if idle:
                await tx.release_held(self.me, sorted(idle))
            if given:
                await tx.release_held(self.me, sorted(given), now + self.SHARED_S * self.scale)
        self._dirty.difference_update(rows)
        if renew:
            self._renew_at = now + self.RENEW_S * self.scale
        for key in list(self._held):
            b = self._held[key]
            if key in kept and key not in idle and key not in given:
                if renew:
                    self._held_until[key] = until
                continue
            self._let_go(key)
            if key in given:  # shared now: every replica leases from it
                self._remember(key, b, now + self.SHARED_S * self.scale)

    async def close(self) -> None:
        """Let go of every hold, written back, so other replicas need not wait for them to run out (a failure is
        logged: the holds then run out on their own)."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        try:
            await self.flush(let_go=True)
        except Exception:
            log.warning("could not let go of %d rate budget bucket(s)", len(self._held) + len(self._leases),
                        exc_info=True)


def buckets_for(store: Store, scale: float = 1.0) -> Buckets:
    """`scale`: the budget's time scale (the holds and leases of shared buckets are timed on its clock)."""
    return LocalBuckets() if store.engine.dialect.name == "sqlite" else SharedBuckets(store, scale=scale)


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
        self._met: set[str] = set()  # workspaces whose buckets were made (see `meet`)

    def now(self) -> float:
        return self._wall() * self.scale

    async def _meet(self, scope: str) -> None:
        """At a workspace's first call here: all its methods' buckets, full, and its live text's, unpaused."""
        if scope in self._met:
            return
        if len(self._met) >= SharedBuckets.KNOWN_MAX:
            self._met.clear()
        self._met.add(scope)
        now = self.now()
        fresh = {f"{scope}:{m}": Bucket(r.burst, now) for m in self.per_minute if (r := self.rate(m)) is not None}
        if fresh:
            await self.buckets.meet(fresh | {f"{scope}:live": Bucket(0.0, now)})

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
        await self._meet(scope)
        await self.wait(await self.buckets.spend(f"{scope}:{method}", rate, self.now()))
        self.spent[(method, "final")] += 1

    async def spend_left(self, scope: str, method: str, first: bool = False) -> bool:
        """Take a call for live text, only from what is left (`first`: a turn's first words, above a smaller
        reserve); False: skip this update."""
        rate = self.rate(method)
        if rate is None:
            return True
        await self._meet(scope)
        now = self.now()
        # Live text's pause read first (a 429 on any method pauses it), then the call taken: each bucket on its own.
        ok = not await self.buckets.paused(f"{scope}:live", now) and await self.buckets.take(
            f"{scope}:{method}", rate, now, rate.first_reserve if first else rate.reserve)
        self.spent[(method, "live" if ok else "skipped")] += 1
        return ok

    async def spend_spare(self, scope: str, method: str) -> bool:
        """Take a call only if one is there right now (a courtesy worth no wait); False: go without it."""
        rate = self.rate(method)
        if rate is None:
            return True
        await self._meet(scope)
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
        await self._meet(scope)
        return await self.buckets.idle(f"{scope}:{method}", rate, self.now())

    async def refused(self, scope: str, method: str, retry_after_s: float, channel: str = "") -> None:
        """The platform answered 429: pause this bucket (a channel's posts, or the workspace's method), and the
        workspace's live text whatever the method: it is the first thing to give way."""
        self.spent[(method, "refused")] += 1
        await self._meet(scope)
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
        await self._meet(scope)
        rate = Rate(per_s=1 / interval_s, burst=1.0)
        await self.wait(await self.buckets.spend(f"{scope}:post:{channel}", rate, self.now()))
