"""ScriptedLLM: the offline model plus a record of every prompt and failures on demand."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from core.deliberation.offline import OfflineLLM
from core.models import Phase, Usage
from core.ports import Completion, LLMUnavailable, Prompt, Searched, T, TextSink


class ScriptedLLM:
    offline = True

    def __init__(self, delay: float = 0.0) -> None:
        self.inner = OfflineLLM(delay=delay)
        self.prompts: list[Prompt] = []
        self.failures: dict[tuple[str, Phase], int] = {}  # (persona name, phase) -> failures left
        self.failure_cost: dict[tuple[str, Phase], float] = {}  # (persona name, phase) -> what a failure cost
        self.cost_per_call = 0.0
        # Phase -> something to do (once) when the first prompt of that phase arrives: a person pressing a
        # button while the model is writing that turn.
        self.on_phase: dict[Phase, Callable[[], Awaitable[object]]] = {}
        self.gate: asyncio.Event | None = None  # while set to an unset event, every call waits on it
        self.waiting = 0  # calls waiting on the gate now
        self.cancelled = 0  # calls cancelled while they waited (the caller gave up mid-call)
        # Phase -> what the model answers instead, given what the offline model would: hostile or odd output.
        self.rewrite: dict[Phase, Callable[[Any], Any]] = {}

    async def _hook(self, prompt: Prompt) -> None:
        action = self.on_phase.pop(prompt.purpose.phase, None)
        if action is not None:
            await action()

    def hold(self) -> asyncio.Event:
        """Make every call wait until the returned event is set: a model call in flight, as long as a test needs."""
        self.gate = asyncio.Event()
        return self.gate

    async def _wait_gate(self) -> None:
        if self.gate is None:
            return
        self.waiting += 1
        try:
            await self.gate.wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.waiting -= 1

    def fail(self, persona: str, phase: Phase, times: int = 1, *, cost_usd: float = 0.0) -> None:
        """The next `times` calls for this persona and phase fail; `cost_usd`: what each failed call had cost (an
        attempt cut at max_tokens before it), carried on the error as the real client does."""
        self.failures[(persona, phase)] = times
        self.failure_cost[(persona, phase)] = cost_usd

    def _maybe_fail(self, prompt: Prompt) -> None:
        key = (prompt.purpose.persona, prompt.purpose.phase)
        if self.failures.get(key, 0) > 0:
            self.failures[key] -= 1
            paid = self.failure_cost.get(key, 0.0)
            raise LLMUnavailable("Anthropic API overloaded (529)", usage=Usage(cost_usd=paid) if paid else None)

    def _charge(self, usage: Usage) -> Usage:
        return usage.model_copy(update={"cost_usd": self.cost_per_call})

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        self.prompts.append(prompt)
        await self._hook(prompt)
        self._maybe_fail(prompt)
        await self._wait_gate()
        done = await self.inner.complete(prompt, on_text)
        return done.model_copy(update={"usage": self._charge(done.usage)})

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        self.prompts.append(prompt)
        await self._hook(prompt)
        self._maybe_fail(prompt)
        await self._wait_gate()
        value, usage = await self.inner.structured(prompt, schema)
        edit = self.rewrite.get(prompt.purpose.phase)
        if edit is not None:
            value = edit(value)
        return value, self._charge(usage)

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return self.cost_per_call  # every call costs exactly this

    async def search(self, prompt: Prompt) -> Searched:
        self.prompts.append(prompt)
        await self._hook(prompt)
        await self._wait_gate()
        searched = await self.inner.search(prompt)
        return searched.model_copy(update={"usage": self._charge(searched.usage)})
