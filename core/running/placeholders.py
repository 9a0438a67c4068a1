"""Placeholders: the message a chat shows while a turn is written, stored until the turn's post settles it, so a
process taking a discussion over can remove the ones a crashed process left "writing…"."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from core.models import Discussion, Post, Status
from core.ports import ChatPort, Clock
from core.running.config import DriverConfig
from core.running.grouped import Grouped
from core.storage.placeholders import Shown
from core.storage.store import Store, Tx

log = logging.getLogger(__name__)

FAILURE_KINDS = ("notice", "error")  # posts that may report a turn's failure, under a key that starts with the turn's
SETTLING_KINDS = (*FAILURE_KINDS, "header")  # posts that may settle a placeholder of a turn they are not


class Placeholders:
    """The placeholders of the discussions driven here: stored as chats show them, removed when left by another
    process, and settled by the posts that take their place."""

    def __init__(self, store: Store, chats: Mapping[str, ChatPort], clock: Clock, config: DriverConfig) -> None:
        self.store, self.chats, self.clock, self.config = store, chats, clock, config
        # The turn keys whose placeholders may still be stored, per discussion driven here: read once as its lease
        # is taken, then kept as this process shows and settles them (a turn's post reads none of them again).
        self._shown: dict[str, set[str]] = {}
        self._placeholders: Grouped[Shown] = Grouped(self._store_placeholders)

    async def shown(self, d: Discussion, key: str, ref: str) -> None:
        """A chat showed a message for the turn `key` while it is written: kept with this process's name until
        the turn's post settles it, so a process taking over after a crash here can remove it. Returns once
        stored; placeholders shown while another is being stored share the next transaction."""
        await self._placeholders.add((d.id, key, ref, self.config.owner, self.clock.now()))

    async def _store_placeholders(self, shown: list[Shown]) -> None:
        async with self.store.tx() as tx:
            await tx.placeholders_shown(shown)
        for discussion_id, key, _, _, _ in shown:
            known = self._shown.get(discussion_id)
            if known is not None:
                known.add(key)

    async def retract_left(self, discussion_id: str, stored: list[tuple[str, str, str]]) -> None:
        """Remove the messages another process showed for turns it never finished (it died mid-step, or stopped):
        those turns run again here, and their first copy must not stay "writing…" beside the second. `stored`:
        the placeholders not settled, as the lease's transaction read them."""
        self._shown[discussion_id] = {key for key, _, _ in stored}
        left = [(key, ref) for key, ref, owner in stored if owner != self.config.owner]
        if not left:
            return
        async with self.store.tx() as tx:
            d = await tx.discussion(discussion_id)
        if d is None:
            return
        gone = []
        for key, ref in left:
            try:
                await self.chats[d.platform].retract(d, ref)
            except Exception:  # kept: the next takeover tries again
                log.warning("could not remove the placeholder of %s left by another process", key, exc_info=True)
                continue
            gone.append(key)
        if not gone:
            return
        log.info("removed %d placeholder(s) of %s left by another process", len(gone), discussion_id)
        async with self.store.tx() as tx:
            await tx.forget_placeholders(discussion_id, gone)
        self._shown[discussion_id] -= set(gone)

    async def settle(self, tx: Tx, d: Discussion, post: Post, of_turn: bool) -> list[str]:
        """A turn's post (`of_turn`) settles its placeholder, as do the notice that its turn failed (keyed under
        the turn's key) and the header a roster turn drew (its key ends with the turn's), and any post of a stopped
        discussion every placeholder still shown (its turns were set aside): the chat turned the placeholder into
        the post or a note, and no takeover may remove it. The keys stored are the ones this lease keeps; the
        caller forgets the ones settled (returned) once the transaction has committed (`settled`)."""
        if not of_turn and post.kind not in SETTLING_KINDS:
            return []
        known = self._shown.get(d.id)
        keys = known if known is not None else set(await tx.placeholder_keys(d.id))
        # A turn's own post settles its row by being marked sent (see placeholders()); a note keyed otherwise
        # settles it by deleting it.
        noted = list(keys) if d.status == Status.STOPPED else [
            k for k in keys if (post.kind in FAILURE_KINDS and post.key.startswith(k + ":"))
            or (post.kind == "header" and post.key.endswith(":" + k))]
        if noted:
            await tx.forget_placeholders(d.id, noted)
        return [*noted, *([post.key] if post.key in keys else [])]

    def settled(self, discussion_id: str, keys: list[str]) -> None:
        """The placeholders `settle` settled, once its transaction committed: no takeover may remove them."""
        self._shown.get(discussion_id, set()).difference_update(keys)

    def forget(self, discussion_id: str) -> None:
        """The lease on the discussion is let go: the next holder reads what is stored."""
        self._shown.pop(discussion_id, None)
