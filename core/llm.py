"""The LLM port on the Anthropic Messages API: prompt layout, cache breakpoints, retries, usage, cost."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import anthropic
from anthropic.types import Message, MessageParam, TextBlockParam
from pydantic import BaseModel, Field, ValidationError, model_validator

from core.models import Usage
from core.ports import Block, CitedText, Completion, LLMUnavailable, Prompt, Searched, Source, T, TextSink, Tier

log = logging.getLogger(__name__)

MAX_BREAKPOINTS = 4  # the API rejects requests with more cache_control blocks
_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class ModelPrice(BaseModel):
    """US dollars per million tokens; cache writes and reads are priced relative to input."""

    input_per_mtok: float
    output_per_mtok: float
    cache_write_mult: float = 1.25
    cache_read_mult: float = 0.1


def _default_models() -> dict[Tier, str]:
    return {"light": "claude-haiku-5-5", "medium": "claude-sonnet-5-5", "heavy": "claude-opus-5-5"}


def _default_prices() -> dict[str, ModelPrice]:
    return {
        "claude-haiku-5-5": ModelPrice(input_per_mtok=0.10, output_per_mtok=0.50),
        "claude-sonnet-5-5": ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0),
        "claude-opus-5-5": ModelPrice(input_per_mtok=4.0, output_per_mtok=20.0),
    }


class SearchConfig(BaseModel):
    """The server-side web search tool as fact checks use it: a cap per check, optional domain lists, and the
    price of one search (the API bills searches apart from tokens)."""

    tool_type: str = "web_search_20250305"
    max_uses: int = Field(default=5, ge=1)
    allowed_domains: list[str] = Field(default_factory=list)
    blocked_domains: list[str] = Field(default_factory=list)
    price_per_search_usd: float = Field(default=0.01, ge=0)

    @model_validator(mode="after")
    def _one_domain_list(self) -> SearchConfig:
        if self.allowed_domains and self.blocked_domains:
            raise ValueError("the web search tool takes allowed domains or blocked domains, not both")
        return self

    def tool(self) -> dict[str, Any]:
        tool: dict[str, Any] = {"type": self.tool_type, "name": "web_search", "max_uses": self.max_uses}
        if self.allowed_domains:
            tool["allowed_domains"] = self.allowed_domains
        if self.blocked_domains:
            tool["blocked_domains"] = self.blocked_domains
        return tool


class LLMConfig(BaseModel):
    search: SearchConfig = Field(default_factory=SearchConfig)
    models: dict[Tier, str] = Field(default_factory=_default_models)
    prices: dict[str, ModelPrice] = Field(default_factory=_default_prices)
    timeout_s: float = 120.0
    max_retries: int = 3  # the SDK's own retries of 408/409/429/5xx before any output
    turn_attempts: int = 2  # whole-turn attempts when a stream fails after it started
    turn_retry_delay_s: float = 1.0
    base_url: str | None = None
    api_key: str = Field(repr=False)

    @model_validator(mode="after")
    def _every_model_has_a_price(self) -> LLMConfig:
        missing = sorted(set(self.models.values()) - set(self.prices))
        if missing:
            raise ValueError(f"no price for model(s) {', '.join(missing)}: budgets need one per model")
        return self


def cost(usage_counts: Usage, price: ModelPrice) -> float:
    """Dollars for the token counts in `usage_counts` (its cost_usd is ignored)."""
    u, p = usage_counts, price
    return (
        u.input_tokens * p.input_per_mtok
        + u.cache_write_tokens * p.input_per_mtok * p.cache_write_mult
        + u.cache_read_tokens * p.input_per_mtok * p.cache_read_mult
        + u.output_tokens * p.output_per_mtok
    ) / 1_000_000


class _StreamBroke(Exception):
    """An error inside an open stream (its cause says which), which the SDK does not retry."""


class AnthropicLLM:
    """Shared blocks first with cache breakpoints, the persona's instruction last; temperature never set."""

    offline = False

    def __init__(self, config: LLMConfig) -> None:
        self._config = config
        self._client = anthropic.AsyncAnthropic(
            api_key=config.api_key,
            base_url=config.base_url,
            timeout=config.timeout_s,
            max_retries=config.max_retries,
            # aiohttp's pool finds a free connection in constant time; httpx's walks every pooled connection
            # on each request and release, which under 100 concurrent streams took a fifth of the loop's CPU.
            http_client=anthropic.DefaultAioHttpClient(timeout=config.timeout_s),
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        model = self._config.models[prompt.tier]
        request = _request(prompt, model)
        attempts = max(1, self._config.turn_attempts)
        for attempt in range(1, attempts + 1):
            try:
                text, usage = await self._stream(request, on_text)
            except _StreamBroke as broke:
                # The SDK never retries an error that arrives inside a stream: retry the whole turn.
                cause = broke.__cause__ or broke
                reason = _reason(cause)
                log.warning("LLM stream broke (%s, %s, attempt %d/%d)", reason, model, attempt, attempts)
                if attempt == attempts:
                    raise LLMUnavailable(reason) from cause
                await asyncio.sleep(self._config.turn_retry_delay_s * attempt)
            except anthropic.APIError as exc:
                raise self._unavailable(exc, model) from exc
            else:
                return Completion(text=text, usage=self._priced(model, usage))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _stream(self, request: dict[str, Any], on_text: TextSink | None) -> tuple[str, Usage]:
        """The text and token counts of one streamed message, read from the API's raw events.

        The SDK's stream helper rebuilds a whole message snapshot and a typed event for every delta; a turn
        needs only the text and the usage, so the raw events are cheaper to read and say the same."""
        # Opening the stream runs the SDK's own retries; an error raised there is final.
        stream = await self._client.messages.create(**request, stream=True)
        parts: list[str] = []
        counts: dict[str, int] = {}
        try:
            async with stream:
                async for event in stream:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                        if on_text is not None:
                            await on_text("".join(parts))
                    elif event.type == "content_block_start" and event.content_block.type == "text":
                        if event.content_block.text:
                            parts.append(event.content_block.text)
                    elif event.type in ("message_start", "message_delta"):
                        # message_start carries the first counts; message_delta's are running totals, and
                        # a count it leaves out keeps its earlier value.
                        raw = event.message.usage if event.type == "message_start" else event.usage
                        for name in _USAGE_FIELDS:
                            value = getattr(raw, name, None)
                            if value is not None:
                                counts[name] = value
        except Exception as exc:  # a dropped connection surfaces as the HTTP library's own error
            raise _StreamBroke from exc
        usage = Usage(
            input_tokens=counts.get("input_tokens", 0),
            output_tokens=counts.get("output_tokens", 0),
            cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
            cache_read_tokens=counts.get("cache_read_input_tokens", 0),
        )
        return "".join(parts), usage

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        model = self._config.models[prompt.tier]
        try:
            message = await self._client.messages.parse(**_request(prompt, model), output_format=schema)
        except (anthropic.APIError, ValidationError) as exc:
            raise self._unavailable(exc, model) from exc
        parsed = message.parsed_output
        if parsed is None:
            log.warning("LLM returned no structured output (%s, stop_reason %s)", model, message.stop_reason)
            raise LLMUnavailable(f"Anthropic API returned no {schema.__name__} (stop: {message.stop_reason})")
        return parsed, self._usage(model, message)

    async def search(self, prompt: Prompt) -> Searched:
        """One message written with the web search tool. Sources are read from the citations the API attached to
        the text, never from the text itself; no successful search means no check (`refused` says why)."""
        model = self._config.models[prompt.tier]
        request = _request(prompt, model) | {"tools": [self._config.search.tool()]}
        try:
            message = await self._client.messages.create(**request)
        except anthropic.BadRequestError as exc:
            log.warning("the web search tool was refused (%s, %s)", _reason(exc), model)
            return Searched(refused=f"the Anthropic API refused the web search tool ({_reason(exc)})")
        except anthropic.APIError as exc:
            return Searched(refused=str(self._unavailable(exc, model)))
        blocks: list[CitedText] = []
        failures: list[str] = []
        found = 0
        for block in message.content:
            if block.type == "text":
                sources = [Source(url=c.url, title=c.title or "") for c in block.citations or []
                           if c.type == "web_search_result_location"]
                blocks.append(CitedText(text=block.text, sources=sources))
            elif block.type == "web_search_tool_result":
                if isinstance(block.content, list):
                    found += 1
                else:
                    failures.append(block.content.error_code)
        server = message.usage.server_tool_use
        searches = server.web_search_requests if server is not None else 0
        usage = self._usage(model, message)
        # Searches are billed per search, apart from tokens: the budgets count them with the turn.
        usage.cost_usd += searches * self._config.search.price_per_search_usd
        refused = ""
        if message.stop_reason == "pause_turn":  # a long search the API paused: the verdicts were never written
            refused = "the web search took too long and the API paused it before the check was written"
        elif not found:
            why = f"the search tool answered {', '.join(sorted(set(failures)))}" if failures else "no search ran"
            refused = f"the web search found nothing to check against ({why})"
        return Searched(blocks=blocks, searches=searches, usage=usage, refused=refused)

    def _usage(self, model: str, message: Message) -> Usage:
        u = message.usage
        counts = Usage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_write_tokens=u.cache_creation_input_tokens or 0,
            cache_read_tokens=u.cache_read_input_tokens or 0,
        )
        return self._priced(model, counts)

    def _priced(self, model: str, counts: Usage) -> Usage:
        return counts.model_copy(update={"model": model, "cost_usd": cost(counts, self._config.prices[model])})

    @staticmethod
    def _unavailable(exc: Exception, model: str) -> LLMUnavailable:
        reason = _reason(exc)
        log.warning("LLM call failed (%s, %s)", reason, model)
        return LLMUnavailable(reason)


def _request(prompt: Prompt, model: str) -> dict[str, Any]:
    system = _blocks(prompt.system)
    content = [*_blocks(prompt.shared), TextBlockParam(type="text", text=prompt.instruction)]
    _keep_last_breakpoints(system, content)
    message: MessageParam = {"role": "user", "content": content}
    request: dict[str, Any] = {"model": model, "max_tokens": prompt.max_tokens, "messages": [message]}
    if system:
        request["system"] = system
    return request


def _blocks(blocks: list[Block]) -> list[TextBlockParam]:
    out: list[TextBlockParam] = []
    for block in blocks:
        if block.text.strip():
            out.append(TextBlockParam(type="text", text=block.text))
        if block.cache and out:  # an empty block's breakpoint moves to the block before it
            out[-1]["cache_control"] = {"type": "ephemeral"}
    return out


def _keep_last_breakpoints(*lists: list[TextBlockParam]) -> None:
    marked = [block for blocks in lists for block in blocks if "cache_control" in block]
    if len(marked) > MAX_BREAKPOINTS:
        log.warning("prompt has %d cache breakpoints; keeping the last %d", len(marked), MAX_BREAKPOINTS)
        for block in marked[:-MAX_BREAKPOINTS]:
            del block["cache_control"]


_KINDS = {  # error.type -> (words for users, the status the API uses for it)
    "overloaded_error": ("overloaded", 529),
    "rate_limit_error": ("rate limit reached", 429),
    "api_error": ("internal error", 500),
    "timeout_error": ("timed out", 504),
    "authentication_error": ("rejected the API key", 401),
    "permission_error": ("permission denied", 403),
    "billing_error": ("billing problem", 402),
    "not_found_error": ("model not found", 404),
    "request_too_large": ("request too large", 413),
    "invalid_request_error": ("rejected the request", 400),
}


def _reason(exc: BaseException) -> str:
    """A short, human-safe reason: status and kind only, never headers, keys or prompt text."""
    if isinstance(exc, anthropic.APITimeoutError):
        return "Anthropic API timed out"
    if isinstance(exc, anthropic.APIConnectionError):
        return "Anthropic API unreachable"
    if isinstance(exc, anthropic.APIStatusError):
        words, status = _KINDS.get(str(exc.type), ("error", exc.status_code))
        # Inside a stream the HTTP status is 200; the error's type says what happened.
        return f"Anthropic API {words} ({exc.status_code if exc.status_code >= 400 else status})"
    if isinstance(exc, ValidationError):
        return "Anthropic API returned output that does not match the expected shape"
    if isinstance(exc, anthropic.APIError):
        return "Anthropic API returned an unexpected response"
    return "Anthropic API stream interrupted"
