"""The seams between the driver's parts: what the thin driver hands each part instead of letting it import another."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol

from core.models import Discussion, Post, Usage
from core.storage.store import Tx

Fenced = AbstractAsyncContextManager[tuple[Tx, Discussion]]


class Fence(Protocol):
    """The lease's fenced transaction (`Lease.fenced`): writes only while this process holds the discussion."""

    def __call__(self, discussion_id: str, *, charge: tuple[str, Usage | None] = ..., spent: bool = ...) -> Fenced: ...


class Settling(Protocol):
    """The placeholders, as the outbox settles them when a post takes a placeholder's place (`Placeholders`)."""

    async def settle(self, tx: Tx, d: Discussion, post: Post, of_turn: bool) -> list[str]: ...

    def settled(self, discussion_id: str, keys: list[str]) -> None: ...
