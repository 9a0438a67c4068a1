"""The LLM port on the Anthropic Messages API: prompt layout, cache breakpoints, retries, usage, cost."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field, ValidationError, model_validator

from core.models import Phase, Usage
from core.ports import (
    Block,
    CitedText,
    Completion,
    LLMRefused,
    LLMUnavailable,
    Prompt,
    Searched,
    Source,
    T,
    TextSink,
    Tier,
)

if TYPE_CHECKING:  # the SDK takes ~2 s to import: only a process that builds the real client pays for it
    from anthropic.types import Message, MessageParam, TextBlockParam, ThinkingConfigParam

log = logging.getLogger(__name__)

MAX_BREAKPOINTS = 4  # the API rejects requests with more cache_control blocks
MAX_OUTPUT_TOKENS = 128_000  # the most any configured model writes in one message, thinking included
# Events a stream reads in one stretch: answers asked together arrive together, whole in the socket's buffer, and
# read without a wait; in one stretch each, a pass of the loop over many turns held a health check (or Slack's
# acknowledgement) for a third of a second. Before each stretch the stream awaits `pause`.
_EVENTS_A_STRETCH = 16


async def _next_pass() -> None:
    """Let every other ready callback run first (a stream with no admission to wait for)."""
    await asyncio.sleep(0)


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
Effort = Literal["low", "medium", "high", "xhigh", "max"]
# Adaptive thinking is the one setting every configured model takes: Opus 5.5 cannot turn thinking off, Sonnet 5.5
# refuses "disabled" with a 400, and none takes a fixed budget. The effort says how much it thinks.
THINKING: ThinkingConfigParam = {"type": "adaptive"}


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


def _thinking_room() -> dict[Effort, int]:
    return {"low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 65536}


class SearchConfig(BaseModel):
    """The server-side web search tool as fact checks use it: a cap per check, optional domain lists, and the
    price of one search (the API bills searches apart from tokens)."""

    tool_type: str = "web_search_20250305"
    max_uses: int = Field(default=5, ge=1)
    allowed_domains: list[str] = Field(default_factory=list)
    blocked_domains: list[str] = Field(default_factory=list)
    price_per_search_usd: float = Field(default=0.01, ge=0)
    max_continuations: int = Field(default=3, ge=0)  # a turn the API paused (pause_turn) is sent back this often

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
    # How hard the model thinks: short turns, bids, structured outputs and fact checks at `effort`, the syntheses
    # (the phases in `deep_phases`) at `synthesis_effort`.
    effort: Effort = "low"
    synthesis_effort: Effort = "medium"
    deep_phases: frozenset[Phase] = frozenset({Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS})
    # Thinking counts against max_tokens: each call's cap is its visible answer's plus this room for its effort.
    thinking_room: dict[Effort, int] = Field(default_factory=_thinking_room)
    room_attempts: int = Field(default=3, ge=1)  # a call cut at max_tokens runs again with twice the room
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

    def __init__(self, config: LLMConfig, pause: Callable[[], Awaitable[None]] = _next_pass) -> None:
        """`pause`: awaited before each stretch of a stream's events. Yielding alone still let one pass of the loop
        read a stretch of every stream whose answer had arrived (hundreds, a tenth of a second); an admission that
        lets a few stretches start a pass bounds it (bot/wiring.py)."""
        import anthropic  # here, not at the top: see TYPE_CHECKING above

        self._sdk = anthropic
        self._config = config
        self._pause = pause
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

    def _effort(self, prompt: Prompt) -> Effort:
        return self._config.synthesis_effort if prompt.purpose.phase in self._config.deep_phases else \
            self._config.effort

    def _request(self, prompt: Prompt, model: str) -> dict[str, Any]:
        effort = self._effort(prompt)
        cap = min(MAX_OUTPUT_TOKENS, prompt.max_tokens + self._config.thinking_room.get(effort, 0))
        return _request(prompt, model) | {"max_tokens": cap, "thinking": THINKING, "output_config": {"effort": effort}}

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        """The most one call of `prompt` may cost: every token of the max_tokens its request asks for (thinking
        room included) at the output price, and its input written to the cache at a token for every three
        characters (more tokens than the models count in prose); with the web search tool, `max_uses` searches
        too. A call cut at max_tokens and run again with more room is a further call."""
        model = self._config.models[prompt.tier]
        price = self._config.prices[model]
        cap = self._request(prompt, model)["max_tokens"]
        chars = sum(len(b.text) for b in [*prompt.system, *prompt.shared]) + len(prompt.instruction)
        inputs = -(-chars // 3) * price.input_per_mtok * max(1.0, price.cache_write_mult)
        searches = self._config.search.max_uses * self._config.search.price_per_search_usd if search else 0.0
        return (inputs + cap * price.output_per_mtok) / 1_000_000 + searches

    def _more_room(self, request: dict[str, Any], model: str, paid: Usage, attempt: int) -> None:
        """After a stop at max_tokens: twice the room for the next attempt, or the call fails (never cut)."""
        cap = request["max_tokens"]
        log.warning("LLM output cut at max_tokens %d (%s, attempt %d/%d)", cap, model, attempt,
                    self._config.room_attempts)
        if attempt == self._config.room_attempts or cap >= MAX_OUTPUT_TOKENS:
            raise LLMUnavailable(f"the model's answer did not fit in {cap} tokens, even with room to think",
                                 usage=self._priced(model, paid))
        request["max_tokens"] = min(MAX_OUTPUT_TOKENS, cap * 2)

    def _stopped(self, stop: str | None, model: str, paid: Usage) -> None:
        """Raise for a stop reason that leaves no usable answer (its cost carried on the error)."""
        if stop == "refusal":
            log.warning("LLM refused (%s)", model)
            raise LLMRefused("the model declined to write this", usage=self._priced(model, paid))
        if stop == "model_context_window_exceeded":
            raise LLMUnavailable("the discussion no longer fits the model's context window",
                                 usage=self._priced(model, paid))

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        model = self._config.models[prompt.tier]
        text, paid, _ = await self._answer(self._request(prompt, model), on_text, model)
        return Completion(text=text, usage=self._priced(model, paid))

    async def _answer(self, request: dict[str, Any], on_text: TextSink | None, model: str) -> tuple[str, Usage, str]:
        """A whole answer: an attempt cut at max_tokens (thinking took its room) is asked again with more room.
        Returns the text, what every attempt cost, and the stop reason; an error carries what was paid so far."""
        paid = Usage()
        for attempt in range(1, self._config.room_attempts + 1):
            text, usage, stop = await self._turn(request, on_text, model, paid if attempt > 1 else None)
            paid = _plus(paid, usage)
            if stop == "max_tokens":
                self._more_room(request, model, paid, attempt)
                continue
            self._stopped(stop, model, paid)
            return text, paid, stop
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _turn(self, request: dict[str, Any], on_text: TextSink | None, model: str,
                    paid: Usage | None = None) -> tuple[str, Usage, str]:
        """One streamed answer, the whole turn retried when its stream breaks after it started. `paid`: what the
        call's earlier attempts cost (None: nothing yet), carried by an error that ends it, so it is charged."""
        attempts = max(1, self._config.turn_attempts)
        for attempt in range(1, attempts + 1):
            try:
                return await self._stream(request, on_text)
            except _StreamBroke as broke:
                # The SDK never retries an error that arrives inside a stream: retry the whole turn.
                cause = broke.__cause__ or broke
                reason = _reason(cause)
                log.warning("LLM stream broke (%s, %s, attempt %d/%d)", reason, model, attempt, attempts)
                if attempt == attempts:
                    raise LLMUnavailable(reason) from cause
                await asyncio.sleep(self._config.turn_retry_delay_s * attempt)
            except self._sdk.APIError as exc:
                raise self._unavailable(exc, model, paid) from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _stream(self, request: dict[str, Any], on_text: TextSink | None) -> tuple[str, Usage, str]:
        """The text, token counts and stop reason of one streamed message, read from the API's raw events.

        The SDK's stream helper rebuilds a whole message snapshot and a typed event for every delta; a turn
        needs only the text, the usage and why it stopped, so the raw events are cheaper to read and say the
        same. Thinking blocks come first and carry no text to show."""
        # Opening the stream runs the SDK's own retries; an error raised there is final.
        stream = await self._client.messages.create(**request, stream=True)
        parts: list[str] = []
        counts: dict[str, int] = {}
        stop = ""
        read = 0
        try:
            async with stream:
                async for event in stream:
                    if read % _EVENTS_A_STRETCH == 0:
                        await self._pause()
                    read += 1
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                        if on_text is not None:
                            on_text(parts)
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
                        if event.type == "message_delta":
                            stop = event.delta.stop_reason or ""
        except Exception as exc:  # a dropped connection surfaces as the HTTP library's own error
            raise _StreamBroke from exc
        usage = Usage(
            input_tokens=counts.get("input_tokens", 0),
            output_tokens=counts.get("output_tokens", 0),
            cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
            cache_read_tokens=counts.get("cache_read_input_tokens", 0),
        )
        return "".join(parts), usage, stop

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        """JSON in the schema's shape (structured outputs), parsed once the message is whole: its stop reason says
        whether the JSON is whole. Streamed: a model that thinks long keeps the connection busy, where an
        unstreamed call would time out (and the SDK's retry bill it again); read from its raw events as a turn is
        (the SDK's stream helper rebuilt the message at every delta, and read a buffered stream in one stretch)."""
        model = self._config.models[prompt.tier]
        request = self._request(prompt, model)
        fmt = {"type": "json_schema", "schema": _json_schema(schema)}
        request["output_config"] = {**request["output_config"], "format": fmt}
        text, paid, stop = await self._answer(request, None, model)
        try:
            return schema.model_validate_json(text), self._priced(model, paid)
        except ValidationError as exc:
            log.warning("LLM returned no %s (%s, stop_reason %s)", schema.__name__, model, stop)
            raise self._unavailable(exc, model, paid) from exc

    async def search(self, prompt: Prompt) -> Searched:
        """One message written with the web search tool, streamed. Sources are read from the citations the API
        attached to the text, never from the text itself; no successful search means no check (`refused` says
        why). A turn the API paused is sent back to be continued; searches are paid for as they run, so a call
        that breaks off is charged for those it reported, and none is run again."""
        model = self._config.models[prompt.tier]
        request = self._request(prompt, model) | {"tools": [self._config.search.tool()]}
        blocks: list[CitedText] = []
        failures: list[str] = []
        found = searches = 0
        paid = Usage()
        refused = ""
        sent_back: list[Any] = []  # the paused turn so far, every leg's content in order
        for leg in range(self._config.search.max_continuations + 1):
            message, broke = await self._search_leg(request)
            if message is None:  # refused before anything ran: nothing to pay
                return Searched(refused=self._search_refused(broke, model), usage=self._priced(model, paid))
            paid = _plus(paid, _counts(message))
            ran = 0
            for block in message.content:
                if block.type == "text":
                    sources = [Source(url=c.url, title=c.title or "") for c in block.citations or []
                               if c.type == "web_search_result_location"]
                    blocks.append(CitedText(text=block.text, sources=sources))
                elif block.type == "web_search_tool_result":
                    ran += 1
                    if isinstance(block.content, list):
                        found += 1
                    else:
                        failures.append(block.content.error_code)
            server = message.usage.server_tool_use
            # Searches are billed per search: as the usage counts them, or as the results a broken stream showed.
            searches += max(ran, server.web_search_requests if server is not None else 0)
            if broke is not None:
                n = f"{searches} search{'es' if searches != 1 else ''}"
                refused = (f"the web search broke off after {n} ({_reason(broke)}); they are charged and were not "
                           "run again")
                blocks = []
                break
            if message.stop_reason != "pause_turn":
                refused = self._stopped_check(message.stop_reason, model, searches)
                if refused:
                    blocks = []  # never a half-written verdict; asking again would run (and bill) the searches again
                break
            if leg == self._config.search.max_continuations:
                refused = (f"the web search was still running after the API paused it {leg + 1} times; its "
                           f"{searches} searches are charged")
                blocks = []
                break
            # Paused: the turn so far goes back as the assistant's, and the API carries on from it.
            sent_back += [_param(b) for b in message.content]
            turn: MessageParam = {"role": "assistant", "content": sent_back}
            # max_uses caps one request: the continuation may run only what the cap leaves (the tool needs one).
            tool = self._config.search.tool() | {"max_uses": max(1, self._config.search.max_uses - searches)}
            request = request | {"messages": [*request["messages"][:1], turn], "tools": [tool]}
        usage = self._priced(model, paid)
        usage.cost_usd += searches * self._config.search.price_per_search_usd
        if not refused and not found:
            why = f"the search tool answered {', '.join(sorted(set(failures)))}" if failures else "no search ran"
            refused = f"the web search found nothing to check against ({why})"
        return Searched(blocks=blocks, searches=searches, usage=usage, refused=refused)

    async def _search_leg(self, request: dict[str, Any]) -> tuple[Message | None, BaseException | None]:
        """One streamed search message; when its stream breaks, what had arrived, with the error."""
        opened = False
        try:
            async with self._client.messages.stream(**request) as stream:
                opened = True
                return await stream.get_final_message(), None
        except Exception as exc:
            if not opened:
                return None, exc
            try:
                return stream.current_message_snapshot, exc
            except Exception:  # broke before the message started: nothing arrived
                return None, exc

    @staticmethod
    def _stopped_check(stop: str | None, model: str, searches: int) -> str:
        """Why a fact check that stopped early is no check ('' when it finished)."""
        n = "its 1 search is charged" if searches == 1 else f"its {searches} searches are charged"
        if stop == "refusal":
            log.warning("the fact check was refused (%s)", model)
            return f"the model declined to check these claims; {n}"
        if stop in ("max_tokens", "model_context_window_exceeded"):
            log.warning("the fact check was cut off (%s, %s)", stop, model)
            return f"the check was cut off before its verdicts were written; {n}"
        return ""

    def _search_refused(self, exc: BaseException | None, model: str) -> str:
        if isinstance(exc, self._sdk.BadRequestError):
            # The API's 400 for the tool: web search is off for the organization, or the model does not offer it.
            log.warning("the web search tool was refused (%s, %s)", _reason(exc), model)
            return ("the Anthropic API refused the web search tool: an admin must turn web search on for the "
                    "organization in the Anthropic Console, and the model must offer it")
        return str(self._unavailable(exc or RuntimeError(), model))

    def _priced(self, model: str, counts: Usage) -> Usage:
        return counts.model_copy(update={"model": model, "cost_usd": cost(counts, self._config.prices[model])})

    def _unavailable(self, exc: BaseException, model: str, paid: Usage | None = None) -> LLMUnavailable:
        reason = _reason(exc)
        log.warning("LLM call failed (%s, %s)", reason, model)
        return LLMUnavailable(reason, usage=self._priced(model, paid) if paid is not None else None)


def _counts(message: Message) -> Usage:
    u = message.usage
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_write_tokens=u.cache_creation_input_tokens or 0,
        cache_read_tokens=u.cache_read_input_tokens or 0,
    )


def _plus(a: Usage, b: Usage) -> Usage:
    return Usage(input_tokens=a.input_tokens + b.input_tokens, output_tokens=a.output_tokens + b.output_tokens,
                 cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
                 cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens)


def _param(block: Any) -> Any:
    """A content block of a paused turn as it goes back: as it came, less the SDK's own parse field."""
    data = block.to_dict()
    data.pop("parsed_output", None)
    return data


@functools.lru_cache(maxsize=64)
def _json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema the API is sent for a structured answer of this kind. Built once a kind: the SDK builds it
    through pydantic's JSON schema generation, its slowest path (a millisecond or more a call under load). The dict
    is shared by every request for the kind and never changed: the SDK only serialises it."""
    import anthropic  # here, not at the top: see TYPE_CHECKING above

    return anthropic.transform_schema(schema)


def _request(prompt: Prompt, model: str) -> dict[str, Any]:
    system = _blocks(prompt.system)
    content: list[TextBlockParam] = [*_blocks(prompt.shared), {"type": "text", "text": prompt.instruction}]
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
            out.append({"type": "text", "text": block.text})
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
    import anthropic  # loaded already: only the real client's calls fail with its errors
    import httpx2  # the SDK's HTTP library: a read that times out inside an open stream is its error, not the SDK's

    if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
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
