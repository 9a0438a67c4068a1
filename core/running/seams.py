"""The seams between the driver's parts: what the thin driver hands each part instead of letting it import another."""

from __future__ import annotations

from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from core.deliberation.engine import RunTurns, State, TurnPlan
from core.models import Discussion, Post, Usage
from core.ports import Prompt
from core.storage.store import Tx

Fenced = AbstractAsyncContextManager[tuple[Tx, Discussion]]


class Fence(Protocol):
    """The lease's fenced transaction (`Lease.fenced`): writes only while this process holds the discussion."""

    def __call__(self, discussion_id: str, *, charge: tuple[str, Usage | None] = ..., spent: bool = ...) -> Fenced: ...


class Settling(Protocol):
    """The placeholders, as the outbox settles them when a post takes a placeholder's place (`Placeholders`)."""

    async def settle(self, tx: Tx, d: Discussion, post: Post, of_turn: bool) -> list[str]: ...

    def settled(self, discussion_id: str, keys: list[str]) -> None: ...


class Sending(Protocol):
    """The outbox's fenced transaction whose posts are published once it commits (`Outbox.sending`)."""

    def __call__(self, discussion_id: str, *, charge: tuple[str, Usage | None] = ...) -> Fenced: ...


class Draining(Protocol):
    """The one drain of a discussion's queue a step loop took (`outbox.Drain`): it claims the queue's first post in
    the step's fenced transaction and sends the queue once that commits."""

    async def claim(self, tx: Tx, d: Discussion) -> None: ...

    async def send(self, d: Discussion) -> bool: ...

    def release(self) -> None: ...


class Posting(Protocol):
    """The outbox, as the step loop publishes through it (`Outbox`)."""

    async def publish(self, discussion_id: str) -> bool: ...

    async def take(self, discussion_id: str) -> Draining | None: ...

    def sending(self, discussion_id: str, *, charge: tuple[str, Usage | None] = ...) -> Fenced: ...


class Running(Protocol):
    """Starting and running a step's turns, as the step loop asks for them (`Turns`)."""

    async def start(self, tx: Tx, state: State, step: RunTurns
                    ) -> tuple[list[TurnPlan], tuple[float, float], dict[str, Prompt]]: ...

    async def run(self, state: State, step: RunTurns, turns: list[TurnPlan], spent_today: tuple[float, float],
                  built: dict[str, Prompt] | None = None) -> None: ...


class Jot(Protocol):
    """Keep a turn's words so far for the discussion's page."""

    def __call__(self, discussion_id: str, key: str, text: str) -> Awaitable[None]: ...
