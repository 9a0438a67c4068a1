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
import contextlib
import logging
import math
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
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


def pause(b: Bucket | None, rate: Rate, now: float, until: float) -> tuple[Bucket, None]:
    """The platform refused a call: nothing more until `until`, and the bucket counted empty from then on."""
    b = refill(b, rate, now)
    return Bucket(min(b.tokens, 0.0), max(b.at, until), max(b.paused_until, until)), None


# A rule: the bucket as it is now (None: never written) -> the bucket to write, and the rule's answer. A rule that
# takes nothing gives back the bucket it was given, and nothing is written: only time passed, which the next change
# counts again from the same row.
Change = Callable[[Bucket | None], tuple[Bucket, T]]


class Buckets(Protocol):
    """Where buckets live: `change` reads one, applies the rule and writes it back, atomically."""

    def change(self, key: str, rule: Change[T]) -> Awaitable[T]: ...

    async def meet(self, fresh: dict[str, Bucket]) -> None:
        """Buckets a workspace will likely use, as they start: made now, where making each when first used costs."""

    async def close(self) -> None: ...


class LocalBuckets:
    """In this process (SQLite: one process drives everything)."""

    def __init__(self) -> None:
        self.rows: dict[str, Bucket] = {}

    async def change(self, key: str, rule: Change[T]) -> T:
        self.rows[key], out = rule(self.rows.get(key))
        return out

    async def meet(self, fresh: dict[str, Bucket]) -> None:
        """Nothing to make: a bucket starts when it is first changed, at no cost."""

    async def close(self) -> None:
        """Nothing to let go: the buckets end with the process."""


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

    A bucket held by none that this process wrote last is changed in one statement, without a transaction: written
    only if its row still reads what was written (and no replica holds it). A bucket this process has not met is
    made as its first change leaves it, in one statement that does nothing if its row is there; then it is read and
    changed in a transaction that locks its row, as is one another replica changed meanwhile. Changes to one
    bucket in this process queue for it here, so they never make each other miss. A look that takes nothing (is
    the workspace idle, is live text paused, is a call left for it) writes nothing and goes by what this process
    last wrote or read: a call it then takes is written only if the row still reads so, so another replica's calls
    are never undone; only such a look, which decides optional work (a placeholder, a live edit), can go by a
    count another replica has since moved."""

    KNOWN_MAX = 10_000  # buckets remembered; past this the memory starts over (each next change reads its row)
    HOLD_S = 10.0  # wall-clock seconds a hold lasts past its last write-back
    FLUSH_S = 1.0  # how often a holder writes its buckets back: about what a replica wanting one waits
    RENEW_S = HOLD_S / 4  # how often a holder renews its holds
    SHARED_S = 60.0  # a bucket two replicas wanted is held by none for this long
    IDLE_S = 300.0  # a hold nothing changed for this long is let go (used again, it is read and held again)

    def __init__(self, store: Store, *, holds: bool = True, scale: float = 1.0,
                 wall: Callable[[], float] = time.time) -> None:
        self.store, self.holds, self.scale, self._wall = store, holds, scale, wall
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
        self._writing = asyncio.Lock()
        self._flusher: asyncio.Task[None] | None = None

    def _now(self) -> float:
        return self._wall() * self.scale

    async def change(self, key: str, rule: Change[T]) -> T:
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
            was = self._known.get(key)
            if was is not None:
                b, out = rule(was)
                if b is was:  # took nothing: no write (a look goes by this process's last write or read)
                    return out
                async with self.store.autocommit() as tx:
                    swapped = await tx.swap_bucket(key, (was.tokens, was.at, was.paused_until),
                                                   (b.tokens, b.at, b.paused_until))
                if swapped:
                    self._known[key] = b
                    return out
            return await self._change_locked(key, rule)

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
            await asyncio.sleep(self.FLUSH_S / 2)  # until its holder lets it go, at its next write-back

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
        self._known[key] = b
        self._shared_until[key] = shared_until

    def _hold(self, key: str, b: Bucket, until: float) -> None:
        self._known.pop(key, None)
        self._shared_until.pop(key, None)
        self._held[key], self._held_until[key], self._used[key] = b, until, self._wall()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._write_back(), name="rate-budget:write-back")

    def _let_go(self, key: str) -> None:
        self._held.pop(key, None)
        self._held_until.pop(key, None)
        self._used.pop(key, None)
        self._dirty.discard(key)
        self._untouched.discard(key)

    async def _write_back(self) -> None:
        while self._held:
            await asyncio.sleep(self.FLUSH_S)
            try:
                await self.flush()
            except Exception:  # the holds run out here unless a later write-back renews them
                log.warning("could not write back %d rate budget bucket(s)", len(self._held), exc_info=True)

    async def flush(self, *, let_go: bool = False) -> None:
        """Write back the buckets changed since the last write-back, and renew the holds when due; let go of those
        another replica wants (held by none for SHARED_S after, if this one changed them), those nothing changed for
        IDLE_S, and all of them with `let_go` (at close)."""
        async with self._writing:
            if not self._held:
                return
            now, wall = self._now(), self._wall()
            until = now + self.HOLD_S * self.scale
            renew = let_go or now >= self._renew_at
            rows = {k: (b.tokens, b.at, b.paused_until) for k, b in self._held.items() if k in self._dirty}
            async with self.store.tx() as tx:
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
                if key in given:  # shared now: this process changes it row by row, each change one statement
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
            log.warning("could not let go of %d rate budget bucket(s)", len(self._held), exc_info=True)


def buckets_for(store: Store, scale: float = 1.0) -> Buckets:
    """`scale`: the budget's time scale (the holds of shared buckets are timed on its clock)."""
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
        now = self.now()
        await self.wait(await self.buckets.change(f"{scope}:{method}", lambda b: reserve(b, rate, now)))
        self.spent[(method, "final")] += 1

    async def spend_left(self, scope: str, method: str, first: bool = False) -> bool:
        """Take a call for live text, only from what is left (`first`: a turn's first words, above a smaller
        reserve); False: skip this update."""
        rate = self.rate(method)
        if rate is None:
            return True
        await self._meet(scope)
        now = self.now()
        quiet = [False]

        def heard(b: Bucket | None) -> tuple[Bucket, bool]:  # the workspace's live text is not paused by a 429
            quiet[0] = b is None or b.paused_until <= now
            return b or Bucket(0.0, now), quiet[0]

        def left(b: Bucket | None) -> tuple[Bucket, bool]:
            keep = rate.first_reserve if first else None
            return take_left(b, rate, now, keep) if quiet[0] else (b or refill(b, rate, now), False)

        # The pause read first, then the call taken: each bucket on its own, as any other change (a bucket this
        # replica wrote last changes in one statement, where the two in one transaction took five round trips on
        # PostgreSQL for every live edit). A 429 between the two only means this one edit is refused and skipped.
        await self.buckets.change(f"{scope}:live", heard)
        ok = await self.buckets.change(f"{scope}:{method}", left)
        self.spent[(method, "live" if ok else "skipped")] += 1
        return ok

    async def spend_spare(self, scope: str, method: str) -> bool:
        """Take a call only if one is there right now (a courtesy worth no wait); False: go without it."""
        rate = self.rate(method)
        if rate is None:
            return True
        await self._meet(scope)
        now = self.now()
        ok = await self.buckets.change(f"{scope}:{method}", lambda b: take_left(b, rate, now, keep=0.0))
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
        now = self.now()
        return await self.buckets.change(f"{scope}:{method}", lambda b: idle(b, rate, now))

    async def refused(self, scope: str, method: str, retry_after_s: float, channel: str = "") -> None:
        """The platform answered 429: pause this bucket (a channel's posts, or the workspace's method), and the
        workspace's live text whatever the method: it is the first thing to give way."""
        self.spent[(method, "refused")] += 1
        await self._meet(scope)
        now = self.now()
        until = now + retry_after_s
        await self.buckets.change(f"{scope}:live", lambda b: (Bucket(0.0, now, max(until, b.paused_until if b
                                                                                     else 0.0)), None))
        key, rate = (f"{scope}:post:{channel}", Rate(1.0, 1.0)) if channel else (f"{scope}:{method}",
                                                                                   self.rate(method))
        if rate is not None:
            await self.buckets.change(key, lambda b: pause(b, rate, now, now + retry_after_s))

    async def pace(self, scope: str, channel: str, interval_s: float) -> None:
        """Wait for this channel's next slot for a new message: one per `interval_s`, in the order asked."""
        if interval_s <= 0:
            return
        await self._meet(scope)
        rate, now = Rate(per_s=1 / interval_s, burst=1.0), self.now()
        await self.wait(await self.buckets.change(f"{scope}:post:{channel}", lambda b: reserve(b, rate, now)))
