"""The outbox: each queued post claimed under the lease, sent once in order, retried on backoff, or the discussion
blocked when the platform keeps refusing."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import timedelta

from core.models import Discussion, Post, Status, Usage
from core.ports import CannotPost, ChatPort, Clock, RateLimited
from core.running.config import DriverConfig
from core.running.effects import save_discussion
from core.running.kept import Kept
from core.running.seams import Fence, Settling
from core.showing import posts
from core.showing.extras import decorate
from core.storage.discussions import Queue, Unsent
from core.storage.store import Store, Tx

log = logging.getLogger(__name__)


class NotOurs(Exception):
    """Another drain sent (or is sending) this post, or our lease on the discussion expired."""


MAX_POST_ATTEMPTS = 6  # refusals of one post (about a minute of backoff) before the discussion is blocked
FIRST_RETRY_S, MAX_RETRY_S = 2.0, 600.0
Queued = tuple[Unsent, bool]  # unsent posts in order, and whether the first is claimed here


def retry_delay(attempts: int) -> float:
    """Seconds before trying a refused post again: 2, 4, 8 … doubling up to ten minutes."""
    return min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** max(0, attempts - 1))


class Outbox:
    """The posts of the discussions driven here, on their way out: one drain per discussion at a time sends its
    queue in order, claiming each post under the lease before the platform is called.

    Handed by the driver: `fenced` (the lease's transaction), `held_until` (when a lease held here runs out),
    `placeholders` (settled by the posts that replace them) and `come_back` (drive a discussion again after the
    wait a platform asked for)."""

    def __init__(self, store: Store, chats: Mapping[str, ChatPort], clock: Clock, config: DriverConfig, kept: Kept,
                 *, fenced: Fence, held_until: Callable[[str], float | None], placeholders: Settling,
                 come_back: Callable[[str, float], None]) -> None:
        self.store, self.chats, self.clock, self.config, self.kept = store, chats, clock, config, kept
        self.fenced, self.held_until, self.placeholders, self.come_back = fenced, held_until, placeholders, come_back
        self._locks: dict[str, asyncio.Lock] = {}
        # publish() calls per discussion, and how many of them a successful drain has served (see publish).
        self._asked: dict[str, int] = {}
        self._served: dict[str, int] = {}

    async def publish(self, discussion_id: str) -> bool:
        """Send unsent posts in order; stops at the first failure so the thread never reorders."""
        lock = self._locks.setdefault(discussion_id, asyncio.Lock())
        ticket = self._ask(discussion_id)
        async with lock:
            # A drain that read the queue after this call was made, and sent all of it, has done this call's
            # work (parallel turns each ask to publish; the first drain usually sends every one of them).
            if self._served.get(discussion_id, 0) >= ticket:
                return True
            return await self.drain(discussion_id, self._asked[discussion_id])

    async def take(self, discussion_id: str) -> Drain | None:
        """The discussion's drain, when none runs here (taken at once: a free lock is taken without waiting,
        before the queue is read, so no other drain claims from it); None: one runs, and sends what is queued."""
        lock = self._locks.setdefault(discussion_id, asyncio.Lock())
        if lock.locked():
            return None
        await lock.acquire()
        return Drain(self, discussion_id, lock, self._ask(discussion_id))

    @contextlib.asynccontextmanager
    async def sending(self, discussion_id: str, *, charge: tuple[str, Usage | None] = ("", None)
                      ) -> AsyncIterator[tuple[Tx, Discussion]]:
        """A fenced transaction whose posts are published once it commits. When no drain of the discussion runs
        here, the transaction also reads the queue and claims its first post, under the lease it has just checked:
        the drain's own first transaction is saved. Otherwise its posts go out behind that drain, as any other
        publish."""
        drain = await self.take(discussion_id)
        if drain is None:
            async with self.fenced(discussion_id, charge=charge) as fenced:
                yield fenced
            await self.publish(discussion_id)
            return
        try:
            async with self.fenced(discussion_id, charge=charge) as (tx, current):
                tx.claim_first = True  # sent right after this commits, by this drain
                yield tx, current
                await drain.claim(tx, current)
            await drain.send(current)
        finally:
            drain.release()

    def forget(self, discussion_id: str) -> None:
        """Every publish of the discussion's driver here has returned."""
        for per_discussion in (self._locks, self._asked, self._served):
            per_discussion.pop(discussion_id, None)

    async def drain(self, discussion_id: str, covers: int = 0) -> bool:
        """Send what is queued, in order; False at the first refusal (the rest stays queued). `covers`: the
        publish calls asked before the queue is read, served once it is sent (see `_send_queue`).

        Each post is claimed before it is sent (an attempt counted under the lease, so a post a crash cut short
        is looked up on the platform before it is sent again); the first claim shares the transaction that reads
        the queue, and every later one the transaction that records the post before it as sent."""
        async with self.store.tx() as tx:
            # The queue first: a discussion with nothing queued costs one statement, no lease check.
            queue = await tx.queue(discussion_id)
            if not queue[0]:
                self._serve(discussion_id, covers)
                return True
            d = await tx.fence(discussion_id, self.config.owner, self.clock.now())
            if d is None:
                log.info("%s is no longer driven here; its posts are left to the driver that has it", discussion_id)
                return False
            first = await self._first_post(tx, d, queue)
        served = await self._send_queue(d, first, covers)
        if served is None:
            return False
        self._serve(discussion_id, served)
        return True

    def _ask(self, discussion_id: str) -> int:
        """Count a publish asked of the discussion: its ticket, served once a drain that read the queue after it
        has sent it (see `_serve`)."""
        self._asked[discussion_id] = self._asked.get(discussion_id, 0) + 1
        return self._asked[discussion_id]

    def _serve(self, discussion_id: str, covers: int) -> None:
        """The publish calls up to `covers` have had their posts sent."""
        self._served[discussion_id] = max(self._served.get(discussion_id, 0), covers)

    async def _first_post(self, tx: Tx, d: Discussion, queue: Queue | None = None) -> Queued | None:
        """The queue (`queue`: as this transaction has just read it), and whether its first post is now claimed
        here, in a transaction that holds the lease; None: the first post waits out its backoff, and the rest keep
        their order behind it."""
        if queue is None:  # what this transaction queued, when that is the whole queue; else read
            here = tx.queued_here()
            queue = (here, None) if here is not None else await tx.queue(d.id)
        pending, due = queue
        if not pending:
            return [], False
        if pending[0][0] == tx.claimed_at_insert:  # claimed as it was queued, never tried before
            outbox_id, post, turn_key, _ = pending[0]
            return [(outbox_id, post, turn_key, 0), *pending[1:]], True
        if due is not None and due > self.clock.now():
            return None
        return pending, await self._claim(tx, d.id, pending[0], fenced=True)

    async def _send_queue(self, d: Discussion, first: Queued | None, covers: int) -> int | None:
        """Send the queue `_first_post` read, in order; None at the first refusal (the rest stays queued), else the
        publish calls served: `covers` (those asked before the queue was read), or more when publish was asked
        again while it was sent (parallel turns recorded behind this drain): the transaction that marks the last
        post sent then reads the queue again and claims what they queued, instead of a drain of their own."""
        if first is None:
            return None
        pending, claimed = first
        chat = self.chats[d.platform]
        for i, (outbox_id, post, turn_key, attempts) in enumerate(pending):
            try:
                if not claimed:
                    raise NotOurs(post.key)
                ref = await self._send(d=d, chat=chat, post=post, attempts=attempts)
            except NotOurs:
                log.info("%s is being sent by another driver", post.key)
                return None
            except CannotPost as exc:
                log.warning("%s can never be posted: %s", post.key, exc)
                async with self.store.tx() as tx:
                    await tx.bury_posts(d.id, str(exc))
                await self._block_for_posting(d.id, f"it cannot post any more: {exc}")
                return None
            except RateLimited as exc:  # pacing, not a refusal: waited out, never counted toward blocking
                log.info("%s: the platform asked to slow down; trying again in %.1f s", post.key, exc.retry_after)
                async with self.store.tx() as tx:
                    await tx.defer_post(outbox_id, self.clock.now() + timedelta(seconds=exc.retry_after),
                                        f"rate limited: {exc}", forget_attempt=True)
                self.come_back(d.id, exc.retry_after)
                return None
            except Exception as exc:
                # A platform that says when to come back (Discord's RateLimited.retry_after) is believed.
                delay = max(retry_delay(attempts + 1), float(getattr(exc, "retry_after", 0) or 0))
                log.warning("could not publish %s; trying again in %.0f s", post.key, delay, exc_info=True)
                async with self.store.tx() as tx:
                    await tx.defer_post(outbox_id, self.clock.now() + timedelta(seconds=delay),
                                        f"{type(exc).__name__}: {exc}")
                if attempts + 1 >= MAX_POST_ATTEMPTS:
                    await self._block_for_posting(
                        d.id, f"the chat platform keeps refusing posts ({type(exc).__name__}); still trying")
                return None
            async with self.store.tx() as tx:  # not fenced: the platform has the post, so its ref must be kept
                following = pending[i + 1] if i + 1 < len(pending) else None
                if following is not None:  # the next post is claimed in the statement that marks this one sent
                    claimed = await tx.mark_sent_claiming(outbox_id, ref, self.clock.now(), turn_key,
                                                          (following[0], following[3]), self.config.owner, d.id)
                else:
                    await tx.mark_sent(outbox_id, ref, self.clock.now(), turn_key)
                # Its turn's placeholder became it, or it says why not.
                settled = await self.placeholders.settle(tx, d, post, of_turn=bool(turn_key))
                if post.kind == "header" and d.status in (Status.DONE, Status.STOPPED):
                    await tx.forget_settled_placeholders(d.id)  # an ending's header is its last post: rows let go
                    await tx.forget_live_texts(d.id)
                if post.kind == "header" and not d.thread_ref:
                    d.thread_ref = ref
                    fresh = await tx.discussion(d.id)
                    assert fresh is not None
                    fresh.thread_ref = ref
                    await tx.save_discussion(fresh, self.clock.now())
                if post.kind == "poll" and post.poll is not None and not post.replaces:
                    await tx.set_poll_ref(post.poll.poll_id, ref)
                asked = self._asked.get(d.id, 0)
                if i + 1 == len(pending) and asked > covers:  # more was queued, and publish asked, meanwhile
                    more, due = await tx.queue(d.id)
                    if due is None or due <= self.clock.now():  # else the drains asked for find it waiting
                        covers = asked
                        pending.extend(more)
                if following is None and i + 1 < len(pending):  # read again just now
                    claimed = await self._claim(tx, d.id, pending[i + 1])
            self.kept.committed(d.id, tx)
            self.placeholders.settled(d.id, settled)
            kept = self.kept.get(d.id)
            if kept is not None and ref and not post.replaces:
                kept.refs[post.key] = ref
        return covers

    async def _claim(self, tx: Tx, discussion_id: str, queued: tuple[int, Post, str | None, int], *,
                     fenced: bool = False) -> bool:
        """Count an attempt at this post before any call, so one the platform keeps refusing eventually blocks;
        False when another driver has it or our lease is gone (`fenced`: this transaction already checked it)."""
        outbox_id, _, _, attempts = queued
        return await tx.claim_send(outbox_id, attempts, self.config.owner, self.clock.now(), discussion_id,
                                   fenced=fenced)

    async def _block_for_posting(self, discussion_id: str, reason: str) -> None:
        """Posts keep being refused, or never can land: stop spending on turns nobody can see, and tell the
        starter privately (the thread is where it cannot post), with a Retry button.

        A refused queue is still tried on its backoff; Retry tries every post again at once and goes on."""
        async with self.fenced(discussion_id) as (tx, d):
            if d.status not in (Status.RUNNING, Status.WAITING):
                return
            d.status, d.blocked_reason = Status.BLOCKED, reason
            await save_discussion(tx, d, self.clock.now())
        try:
            await self.chats[d.platform].tell(d, d.created_by, posts.cannot_post_post(d))
        except Exception:
            log.warning("could not tell %s that %s is blocked", d.created_by, d.id, exc_info=True)

    async def _send(self, *, d: Discussion, chat: ChatPort, post: Post, attempts: int) -> str:
        """Send a claimed post: an edit in place, one found on the platform after a crash, or a new message."""
        post = await decorate(self.store, self.config.pages, d, post, self.clock.now(),
                              functools.partial(self.kept.seats, d.id))
        if post.replaces:
            kept = self.kept.get(d.id)
            ref = kept.refs.get(post.replaces) if kept is not None else None
            if ref is None:
                async with self.store.tx() as tx:
                    ref = await tx.post_ref(post.replaces)
                if ref and kept is not None:
                    kept.refs[post.replaces] = ref
            if ref:
                await chat.update(d, ref, post)
            return ref or ""
        if attempts > 0 and self.config.send_lands_s > 0:  # tried before, maybe by a process still sending it
            log.info("%s was tried before; looking for it on the platform in %.0f s", post.key,
                     self.config.send_lands_s)
            await asyncio.sleep(self.config.send_lands_s)
        found = await chat.find(d, post.key) if attempts > 0 else None
        if found:
            await chat.update(d, found, post)
            return found
        # The claim held the lease, but the way here (a look-up, a chart, a starved process) may have outlasted it:
        # another process may have claimed the post since and, finding nothing, sent it. Checked with no wait
        # between it and the call, so a post sent here began its way while the lease held (see send_lands_s).
        # A drain outside this process's drive loop (none runs so in production: every publish is a step's) has
        # only its claim's fence to go by.
        expires = self.held_until(d.id)
        if expires is not None and self.clock.now().timestamp() >= expires:
            raise NotOurs(post.key)
        return await chat.publish(d, post)


class Drain:
    """The one drain of a discussion's queue this process runs (`Outbox.take`): it claims the queue's first post in
    the fenced transaction that took it, sends the queue once that commits, and is released in every case."""

    def __init__(self, outbox: Outbox, discussion_id: str, lock: asyncio.Lock, covers: int) -> None:
        self._outbox, self._discussion_id, self._lock, self._covers = outbox, discussion_id, lock, covers
        self._first: Queued | None = None

    async def claim(self, tx: Tx, d: Discussion) -> None:
        """Read the queue in this fenced transaction and claim its first post (what it has just queued, often)."""
        self._first = await self._outbox._first_post(tx, d)

    async def send(self, d: Discussion) -> bool:
        """Send the queue claimed; False at the first refusal (or a post sent elsewhere): a sweep comes back."""
        served = await self._outbox._send_queue(d, self._first, self._covers)
        if served is None:
            return False
        self._outbox._serve(self._discussion_id, served)
        return True

    def release(self) -> None:
        self._lock.release()
