"""One LLM port over several providers' clients: each call runs on the provider its prompt names, or its tier's."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from core.models import Usage
from core.ports import LLM, Completion, LLMUnavailable, Prompt, Searched, T, TextSink, Tier


class RoutedLLM:
    """`providers`: each client by the name routes use ("anthropic", "openai", "ollama", ...); `tiers`: the
    "provider:model" a prompt that names none runs on; `priced`: the model ids the price table has."""

    offline = False

    def __init__(self, providers: Mapping[str, LLM], tiers: Mapping[Tier, str], priced: Collection[str]) -> None:
        for tier, ref in tiers.items():
            provider, _, model = ref.partition(":")
            if provider not in providers or not model:
                raise ValueError(f"the {tier} tier's model {ref!r} names no configured provider "
                                 f"({', '.join(sorted(providers))})")
        self.providers = dict(providers)
        self.tiers = dict(tiers)
        self.priced = frozenset(priced)

    def route(self, prompt: Prompt) -> tuple[LLM, Prompt]:
        """The client a prompt runs on, and the prompt as that client reads it (the bare model id)."""
        ref = prompt.model or self.tiers[prompt.tier]
        provider, _, model = ref.partition(":")
        client = self.providers.get(provider)
        if client is None:
            raise LLMUnavailable(f"the provider `{provider}` is not configured here any more")
        if model not in self.priced:
            raise LLMUnavailable(f"the model `{model}` has no price, so its cost cannot be budgeted")
        return client, prompt.model_copy(update={"model": model})

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        client, routed = self.route(prompt)
        return await client.complete(routed, on_text)

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        client, routed = self.route(prompt)
        return await client.structured(routed, schema)

    async def search(self, prompt: Prompt) -> Searched:
        try:
            client, routed = self.route(prompt)
        except LLMUnavailable as exc:
            return Searched(refused=str(exc))
        return await client.search(routed)

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        """The routed client's worst case; a prompt that cannot be routed fails before it costs anything, so it
        reserves what its tier's model would."""
        try:
            client, routed = self.route(prompt)
        except LLMUnavailable:
            client, routed = self.route(prompt.model_copy(update={"model": ""}))
        return client.worst_case_usd(routed, search=search)

    async def aclose(self) -> None:
        for client in self.providers.values():
            close = getattr(client, "aclose", None)
            if close is not None:
                await close()
