"""The LLM port on an OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, vLLM, Ollama): streaming,
structured output, stops, retries, usage and cost."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from core.llm import ModelPrice, cost
from core.models import Usage
from core.ports import Completion, LLMRefused, LLMUnavailable, Prompt, Searched, T, TextSink, Tier

log = logging.getLogger(__name__)

_CHUNKS_A_STRETCH = 16  # chunks a stream reads before it awaits `pause` again (see core/llm.py)
MAX_OUTPUT_TOKENS = 128_000


async def _next_pass() -> None:
    await asyncio.sleep(0)


class OpenAIConfig(BaseModel):
    """One OpenAI-compatible server: its name in routes and messages, where it is, how it answers."""

    provider: str = "openai"
    models: dict[Tier, str] = Field(default_factory=dict)  # a prompt that names no model takes its tier's
    prices: dict[str, ModelPrice]
    base_url: str | None = None  # None: api.openai.com; OpenRouter, vLLM and Ollama are reached by theirs
    api_key: str = Field(repr=False)
    timeout_s: float = 120.0
    max_retries: int = 3  # the SDK's own retries of 408/409/429/5xx before any output, after Retry-After
    turn_attempts: int = 2  # whole-turn attempts when a stream breaks after it started
    turn_retry_delay_s: float = 1.0
    room_attempts: int = Field(default=3, ge=1)  # an answer cut at its token cap runs again with twice the room
    # Room for a reasoning model's hidden reasoning, which counts against max_completion_tokens.
    reasoning_room: int = Field(default=2048, ge=0)
    # Whether the server honours response_format json_schema; a server without it is asked for a forced tool
    # call whose arguments are the answer.
    json_schema: bool = True
    # The name the server reads the output cap under: OpenAI's newer one, or the older one some servers still
    # read alone.
    cap_field: Literal["max_completion_tokens", "max_tokens"] = "max_completion_tokens"


class _StreamBroke(Exception):
    """An error inside an open stream, which the SDK does not retry; `counts` is the usage, if it had arrived."""

    def __init__(self, counts: Usage | None) -> None:
        super().__init__()
        self.counts = counts


class OpenAICompatLLM:
    """The whole prompt in one system and one user message (the server's own prefix cache, where it has one,
    reads the shared part); temperature never set."""

    offline = False

    def __init__(self, config: OpenAIConfig, pause: Callable[[], Awaitable[None]] = _next_pass) -> None:
        import openai  # here, not at the top: only a process that builds this client pays for the import

        self._sdk = openai
        self._config = config
        self._pause = pause
        self._client = openai.AsyncOpenAI(
            api_key=config.api_key, base_url=config.base_url, timeout=config.timeout_s,
            max_retries=config.max_retries, http_client=openai.DefaultAioHttpClient(timeout=config.timeout_s))

    @property
    def provider(self) -> str:
        return self._config.provider

    async def aclose(self) -> None:
        await self._client.close()

    def _model(self, prompt: Prompt) -> str:
        model = prompt.model or self._config.models.get(prompt.tier, "")
        if not model:
            raise LLMUnavailable(f"no {prompt.tier} model is configured on {self._config.provider}")
        return model

    def _request(self, prompt: Prompt, model: str) -> dict[str, Any]:
        system = "\n\n".join(b.text for b in prompt.system if b.text.strip())
        user = "\n\n".join([*(b.text for b in prompt.shared if b.text.strip()), prompt.instruction])
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        cap = min(MAX_OUTPUT_TOKENS, prompt.max_tokens + self._config.reasoning_room)
        return {"model": model, "messages": messages, self._config.cap_field: cap,
                "stream": True, "stream_options": {"include_usage": True}}

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        """Every token of the request's cap at the output price, and its input at a token for every three
        characters at the input price (no search: this API has no server-side search tool)."""
        model = self._model(prompt)
        price = self._config.prices[model]
        cap = self._request(prompt, model)[self._config.cap_field]
        chars = sum(len(b.text) for b in [*prompt.system, *prompt.shared]) + len(prompt.instruction)
        tokens = -(-chars // 3)
        rate_in, rate_out = price.rates(tokens)
        return (tokens * rate_in * max(1.0, price.cache_write_mult) + cap * rate_out) / 1_000_000

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        model = self._model(prompt)
        text, paid = await self._answer(self._request(prompt, model), on_text, model)
        return Completion(text=text, usage=paid)

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        """JSON in the schema's shape: a json_schema response format, or a forced tool call where the server
        has no such format; parsed once the answer is whole."""
        model = self._model(prompt)
        request = self._request(prompt, model)
        tool = _tool(schema)
        if self._config.json_schema:
            request["response_format"] = {"type": "json_schema", "json_schema": {
                "name": tool["function"]["name"], "schema": tool["function"]["parameters"], "strict": True}}
        else:
            request["tools"] = [tool]
            request["tool_choice"] = {"type": "function", "function": {"name": tool["function"]["name"]}}
        text, paid = await self._answer(request, None, model)
        try:
            return schema.model_validate_json(text), paid
        except ValidationError as exc:
            log.warning("LLM returned no %s (%s, %s)", schema.__name__, self._config.provider, model)
            raise LLMUnavailable(f"{self._name()} returned output that does not match the expected shape",
                                 usage=paid) from exc

    async def search(self, prompt: Prompt) -> Searched:
        """No check: the Chat Completions API has no server-side web search whose sources it cites."""
        return Searched(refused=f"{self._name()} has no web search tool: fact checks need a model that has one "
                                "(route the fact-check tier to an Anthropic model)")

    async def _answer(self, request: dict[str, Any], on_text: TextSink | None, model: str) -> tuple[str, Usage]:
        """A whole answer: one cut at its cap (reasoning took the room) is asked again with twice the room. An
        error, whichever attempt it ends, carries what every earlier attempt cost, so it is charged."""
        paid: Usage | None = None
        cap_field = self._config.cap_field
        for attempt in range(1, self._config.room_attempts + 1):
            text, counts, finish, refusal = await self._turn(request, on_text, model, paid)
            usage = self._priced(model, counts)
            paid = usage if paid is None else paid + usage
            if finish == "length":
                cap = request[cap_field]
                log.warning("LLM output cut at %d tokens (%s, %s, attempt %d/%d)", cap, self._config.provider,
                            model, attempt, self._config.room_attempts)
                if attempt == self._config.room_attempts or cap >= MAX_OUTPUT_TOKENS:
                    raise LLMUnavailable(f"the model's answer did not fit in {cap} tokens", usage=paid)
                request[cap_field] = min(MAX_OUTPUT_TOKENS, cap * 2)
                continue
            if finish == "content_filter" or refusal:
                log.warning("LLM refused (%s, %s, %s)", self._config.provider, model, finish or "refusal")
                raise LLMRefused("the model declined to write this", usage=paid)
            return text, paid
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _turn(self, request: dict[str, Any], on_text: TextSink | None, model: str,
                    paid: Usage | None) -> tuple[str, Usage, str, str]:
        """One streamed answer, the whole turn asked again when its stream breaks after it started; a broken
        attempt whose usage had arrived is charged with the rest."""
        attempts = max(1, self._config.turn_attempts)
        for attempt in range(1, attempts + 1):
            try:
                return await self._stream(request, on_text)
            except _StreamBroke as broke:
                if broke.counts is not None:
                    spent = self._priced(model, broke.counts)
                    paid = spent if paid is None else paid + spent
                reason = self._reason(broke.__cause__ or broke, streaming=True)
                log.warning("LLM stream broke (%s, %s, attempt %d/%d)", reason, model, attempt, attempts)
                if attempt == attempts:
                    raise LLMUnavailable(reason, usage=paid) from broke.__cause__
                await asyncio.sleep(self._config.turn_retry_delay_s * attempt)
            except self._sdk.APIError as exc:
                reason = self._reason(exc)
                log.warning("LLM call failed (%s, %s)", reason, model)
                raise LLMUnavailable(reason, usage=paid) from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _stream(self, request: dict[str, Any], on_text: TextSink | None) -> tuple[str, Usage, str, str]:
        """The text (or a forced tool call's arguments), counts, finish reason and any refusal of one stream."""
        stream = await self._client.chat.completions.create(**request)  # opening runs the SDK's retries
        parts: list[str] = []
        refusal: list[str] = []
        counts: Usage | None = None
        finish = ""
        read = 0
        try:
            async with stream:
                async for chunk in stream:
                    if read % _CHUNKS_A_STRETCH == 0:
                        await self._pause()
                    read += 1
                    if chunk.usage is not None:
                        counts = _counts(chunk.usage)
                    for choice in chunk.choices:
                        delta = choice.delta
                        if delta.content:
                            parts.append(delta.content)
                            if on_text is not None:
                                on_text(parts)
                        if delta.refusal:
                            refusal.append(delta.refusal)
                        for call in delta.tool_calls or []:
                            if call.function is not None and call.function.arguments:
                                parts.append(call.function.arguments)
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except Exception as exc:  # a dropped connection surfaces as the HTTP library's own error
            raise _StreamBroke(counts) from exc
        if not finish:  # the stream ended without saying why: cut off, not finished
            raise _StreamBroke(counts) from RuntimeError("the stream ended before the answer was finished")
        return "".join(parts), counts or Usage(), finish, "".join(refusal)

    def _priced(self, model: str, counts: Usage) -> Usage:
        return counts.model_copy(update={"model": model, "cost_usd": cost(counts, self._config.prices[model])})

    def _name(self) -> str:
        return f"the {self._config.provider} API"

    def _reason(self, exc: BaseException, *, streaming: bool = False) -> str:
        """A short, human-safe reason: status and kind only, never headers, keys or prompt text. `streaming`: the
        error broke an open stream (a lost connection there is an interruption, not an unreachable server)."""
        import httpx2  # the SDK's HTTP library, loaded already

        sdk, name = self._sdk, self._name()
        if isinstance(exc, sdk.APITimeoutError):
            # The aiohttp transport reports a refused connection as a connect timeout: either way, no server.
            return f"{name} unreachable" if isinstance(exc.__cause__, httpx2.ConnectTimeout) else f"{name} timed out"
        if isinstance(exc, sdk.APIConnectionError):
            return f"{name} stream interrupted" if streaming else f"{name} unreachable"
        if isinstance(exc, sdk.APIStatusError):
            return f"{name} {_WORDS.get(exc.status_code, 'error')} ({exc.status_code})"
        if isinstance(exc, sdk.APIError):
            return f"{name} returned an error inside its stream"
        return f"{name} stream interrupted"


_WORDS = {400: "rejected the request", 401: "rejected the API key", 403: "permission denied",
          404: "model not found", 408: "timed out", 413: "request too large", 429: "rate limit reached",
          500: "internal error", 502: "bad gateway", 503: "overloaded", 504: "timed out"}


def _counts(usage: Any) -> Usage:
    """Tokens as billed: cached prompt tokens (the server's automatic prefix cache) are cache reads; a server
    without a cache reports none, and every prompt token is input."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details is not None else 0
    return Usage(input_tokens=max(0, usage.prompt_tokens - cached), output_tokens=usage.completion_tokens or 0,
                 cache_read_tokens=cached)


@functools.lru_cache(maxsize=64)
def _tool(schema: type[BaseModel]) -> Any:
    """The SDK's strict function tool for a schema (its parameters serve the json_schema format too); built
    once a kind and never changed."""
    import openai

    return openai.pydantic_function_tool(schema)
