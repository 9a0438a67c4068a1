"""How many gateway events Council's Discord handlers are at work on: discord.py runs each event's handler in a task
of its own, so this is the one place that knows whether what came in is done."""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class InFlight:
    """How many gateway events the handlers are at work on; `quiet()` returns once none is."""

    def __init__(self) -> None:
        self.count = 0
        self._quiet = asyncio.Event()
        self._quiet.set()

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        self.count += 1
        self._quiet.clear()
        try:
            yield
        finally:
            self.count -= 1
            if not self.count:
                self._quiet.set()

    async def quiet(self) -> None:
        await self._quiet.wait()


class _Counted(Protocol):
    in_flight: InFlight


S = TypeVar("S", bound=_Counted)


def counted(method: Callable[Concatenate[S, P], Awaitable[R]]
            ) -> Callable[Concatenate[S, P], Coroutine[Any, Any, R]]:
    """An entry point from discord.py, counted in `in_flight` from its first step (taken before any await, so
    an event read from the gateway is counted once its task has run at all) to its end. Autocomplete from fixed
    lists (zones, suggestions) is answered by discord.py alone and is not counted."""
    @functools.wraps(method)
    async def run(self: S, *args: P.args, **kwargs: P.kwargs) -> R:
        with self.in_flight.one():
            return await method(self, *args, **kwargs)
    return run
