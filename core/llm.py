"""The LLM port on the Anthropic Messages API: prompt layout, cache breakpoints, retries, usage, cost."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

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
# The beta a request names to ask for thinking display "updates" (the notes a model writes between tool calls).
DISPLAY_UPDATES_BETA = "thinking-display-updates-2026-08-18"


def _notes_in_thinking() -> frozenset[str]:
    return frozenset({"claude-sonnet-5-5", "claude-opus-5-5"})


class ModelPrice(BaseModel):
    """One model's rates in US dollars per million tokens: input and output, a cache write (5 minutes, the only
    kind this project asks for) and a cache read as multiples of the input rate, and, for a model that charges
    more for a long prompt, the input and output rates of a request whose prompt (its input, cache writes and
    cache reads together) is over `long_context_over` tokens; every token of such a request is charged at them,
    its cache writes and reads at the same multiples."""

    model_config = ConfigDict(extra="forbid")  # a misspelt rate in COUNCIL_PRICES is an error, not a default

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_write_mult: float = Field(default=1.25, ge=0)
    cache_read_mult: float = Field(default=0.1, ge=0)
    long_context_over: int | None = Field(default=None, ge=1)
    long_input_per_mtok: float | None = Field(default=None, ge=0)
    long_output_per_mtok: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _long_rates_come_together(self) -> ModelPrice:
        given = [self.long_context_over is not None, self.long_input_per_mtok is not None,
                 self.long_output_per_mtok is not None]
        if any(given) and not all(given):
            raise ValueError("a long-context price needs long_context_over, long_input_per_mtok and "
                             "long_output_per_mtok together")
        return self

    def rates(self, prompt_tokens: int) -> tuple[float, float]:
        """The input and output rates of one request whose prompt is this many tokens."""
        if self.long_context_over is not None and prompt_tokens > self.long_context_over:
            assert self.long_input_per_mtok is not None and self.long_output_per_mtok is not None
            return self.long_input_per_mtok, self.long_output_per_mtok
        return self.input_per_mtok, self.output_per_mtok


def _default_models() -> dict[Tier, str]:
    return {"light": "claude-haiku-5-5", "medium": "claude-sonnet-5-5", "heavy": "claude-opus-5-5"}


def default_prices() -> dict[str, ModelPrice]:
    """The price table: each configured model's rates as its model page lists them (late 2026). COUNCIL_PRICES
    overrides any rate of any row (bot/settings.py)."""
    return {
        # $0.10 / $0.50, cache writes $0.125, reads $0.01; a prompt over 100,000 tokens: $0.50 / $2.50 (writes
        # $0.625, reads $0.05), on every token of the request.
        "claude-haiku-5-5": ModelPrice(input_per_mtok=0.10, output_per_mtok=0.50, long_context_over=100_000,
                                       long_input_per_mtok=0.50, long_output_per_mtok=2.50),
        # $2 / $10, cache writes $2.50, reads $0.20.
        "claude-sonnet-5-5": ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0),
        # $4 / $20, cache writes $5, reads $0.20: 0.05x the input rate, not the usual 0.1x.
        "claude-opus-5-5": ModelPrice(input_per_mtok=4.0, output_per_mtok=20.0, cache_read_mult=0.05),
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
    prices: dict[str, ModelPrice] = Field(default_factory=default_prices)
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
    # Models that return the text they write between tool calls inside thinking blocks (Sonnet 5.5, Opus 5.5;
    # not Haiku 5.5): a search on them asks for display "updates" to read it.
    notes_in_thinking: frozenset[str] = Field(default_factory=_notes_in_thinking)
    base_url: str | None = None
    api_key: str = Field(repr=False)

    @model_validator(mode="after")
    def _every_model_has_a_price(self) -> LLMConfig:
        missing = sorted(set(self.models.values()) - set(self.prices))
        if missing:
            raise ValueError(f"no price for model(s) {', '.join(missing)}: budgets need one per model")
        return self


def cost(usage_counts: Usage, price: ModelPrice) -> float:
    """Dollars for the token counts of one request (its cost_usd is ignored): a long prompt's rates depend on that
    request's prompt alone, so the counts of several requests are priced one by one, never summed first."""
    u = usage_counts
    rate_in, rate_out = price.rates(u.input_tokens + u.cache_write_tokens + u.cache_read_tokens)
    return (
        u.input_tokens * rate_in
        + u.cache_write_tokens * rate_in * price.cache_write_mult
        + u.cache_read_tokens * rate_in * price.cache_read_mult
        + u.output_tokens * rate_out
    ) / 1_000_000


class _StreamBroke(Exception):
    """An error inside an open stream (its cause says which), which the SDK does not retry. `counts`: what the
    stream had used when it broke, so the attempt is charged, not dropped."""

    def __init__(self, counts: Usage) -> None:
        super().__init__()
        self.counts = counts


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
        characters (more tokens than the models count in prose), at a long prompt's rates when that many tokens
        would make it one; with the web search tool, the searches it may run too (one request runs `max_uses` at
        most, and a paused turn is continued only while fewer ran). A call cut at max_tokens and run again with
        more room is a further call."""
        model = prompt.model or self._config.models[prompt.tier]
        price = self._config.prices[model]
        cap = self._request(prompt, model)["max_tokens"]
        chars = sum(len(b.text) for b in [*prompt.system, *prompt.shared]) + len(prompt.instruction)
        tokens = -(-chars // 3)
        rate_in, rate_out = price.rates(tokens)
        inputs = tokens * rate_in * max(1.0, price.cache_write_mult)
        config = self._config.search
        runs = config.max_uses if config.max_continuations == 0 else 2 * config.max_uses - 1
        searches = runs * config.price_per_search_usd if search else 0.0
        return (inputs + cap * rate_out) / 1_000_000 + searches

    def _more_room(self, request: dict[str, Any], model: str, paid: Usage, attempt: int) -> None:
        """After a stop at max_tokens: twice the room for the next attempt, or the call fails (never cut)."""
        cap = request["max_tokens"]
        log.warning("LLM output cut at max_tokens %d (%s, attempt %d/%d)", cap, model, attempt,
                    self._config.room_attempts)
        if attempt == self._config.room_attempts or cap >= MAX_OUTPUT_TOKENS:
            raise LLMUnavailable(f"the model's answer did not fit in {cap} tokens, even with room to think",
                                 usage=paid)
        request["max_tokens"] = min(MAX_OUTPUT_TOKENS, cap * 2)

    @staticmethod
    def _stopped(stop: str | None, model: str, paid: Usage) -> None:
        """Raise for a stop reason that leaves no usable answer (its cost carried on the error)."""
        if stop == "refusal":
            log.warning("LLM refused (%s)", model)
            raise LLMRefused("the model declined to write this", usage=paid)
        if stop == "model_context_window_exceeded":
            raise LLMUnavailable("the discussion no longer fits the model's context window", usage=paid)

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        model = prompt.model or self._config.models[prompt.tier]
        text, paid, _ = await self._answer(self._request(prompt, model), on_text, model)
        return Completion(text=text, usage=paid)

    async def _answer(self, request: dict[str, Any], on_text: TextSink | None, model: str) -> tuple[str, Usage, str]:
        """A whole answer: an attempt cut at max_tokens (thinking took its room) is asked again with more room.
        Returns the text, what every attempt cost (each priced as the request it was), and the stop reason; an
        error, whichever attempt it ends, carries what every earlier attempt cost, so it is charged."""
        paid: Usage | None = None
        for attempt in range(1, self._config.room_attempts + 1):
            text, usage, stop = await self._turn(request, on_text, model, paid)
            paid = usage if paid is None else paid + usage
            if stop == "max_tokens":
                self._more_room(request, model, paid, attempt)
                continue
            self._stopped(stop, model, paid)
            return text, paid, stop
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _turn(self, request: dict[str, Any], on_text: TextSink | None, model: str,
                    paid: Usage | None = None) -> tuple[str, Usage, str]:
        """One streamed answer, the whole turn retried when its stream breaks after it started; returns its text,
        what it cost (priced, broken attempts included) and its stop reason. `paid`: what the call's earlier
        attempts cost (None: nothing yet), carried with this turn's by an error that ends it, so it is charged."""
        attempts = max(1, self._config.turn_attempts)
        broken: Usage | None = None  # what this turn's broken streams used before they broke
        for attempt in range(1, attempts + 1):
            try:
                text, counts, stop = await self._stream(request, on_text)
                usage = self._priced(model, counts)
                return text, usage if broken is None else broken + usage, stop
            except _StreamBroke as broke:
                spent = self._priced(model, broke.counts)
                broken = spent if broken is None else broken + spent
                # The SDK never retries an error that arrives inside a stream: retry the whole turn.
                cause = broke.__cause__ or broke
                reason = _reason(cause)
                log.warning("LLM stream broke (%s, %s, attempt %d/%d)", reason, model, attempt, attempts)
                if attempt == attempts:
                    raise LLMUnavailable(reason, usage=_sum(paid, broken)) from cause
                await asyncio.sleep(self._config.turn_retry_delay_s * attempt)
            except self._sdk.APIError as exc:
                raise self._unavailable(exc, model, _sum(paid, broken)) from exc
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
        streamed = 0  # characters of text and thinking read: what a broken stream is charged for as output
        try:
            async with stream:
                async for event in stream:
                    if read % _EVENTS_A_STRETCH == 0:
                        await self._pause()
                    read += 1
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        parts.append(event.delta.text)
                        streamed += len(event.delta.text)
                        if on_text is not None:
                            on_text(parts)
                    elif event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                        streamed += len(event.delta.thinking)
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
            # Billed all the same: the input message_start counted, and the output read so far, at least a token
            # for every three characters (the estimate worst_case_usd makes), or the last count if it says more.
            counts["output_tokens"] = max(counts.get("output_tokens", 0), -(-streamed // 3))
            raise _StreamBroke(_usage(counts)) from exc
        return "".join(parts), _usage(counts), stop

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        """JSON in the schema's shape (structured outputs), parsed once the message is whole: its stop reason says
        whether the JSON is whole. Streamed: a model that thinks long keeps the connection busy, where an
        unstreamed call would time out (and the SDK's retry bill it again); read from its raw events as a turn is
        (the SDK's stream helper rebuilt the message at every delta, and read a buffered stream in one stretch)."""
        model = prompt.model or self._config.models[prompt.tier]
        request = self._request(prompt, model)
        fmt = {"type": "json_schema", "schema": _json_schema(schema)}
        request["output_config"] = {**request["output_config"], "format": fmt}
        text, paid, stop = await self._answer(request, None, model)
        try:
            return schema.model_validate_json(text), paid
        except ValidationError as exc:
            log.warning("LLM returned no %s (%s, stop_reason %s)", schema.__name__, model, stop)
            raise self._unavailable(exc, model, paid) from exc

    async def search(self, prompt: Prompt) -> Searched:
        """One message written with the web search tool, streamed. Sources are read from the citations the API
        attached to the text, never from the text itself; no successful search means no check (`refused` says
        why). A turn the API paused is sent back to be continued; searches are paid for as they run, so a call
        that breaks off is charged for those it reported, and none is run again."""
        model = prompt.model or self._config.models[prompt.tier]
        config = self._config.search
        # Built once for the whole turn: a continuation sends the same system, tools and earlier blocks. Each
        # thinking block is bound to everything before it, and the API answers 400 when any of that changed.
        request = self._request(prompt, model) | {"tools": [config.tool()]}
        if model in self._config.notes_in_thinking:
            # These models return the text they write between searches inside thinking blocks, empty at the
            # default display; "updates" returns those notes and still leaves the reasoning out.
            request["thinking"] = {**THINKING, "display": "updates"}
            request["extra_headers"] = {"anthropic-beta": DISPLAY_UPDATES_BETA}
        question = request["messages"][0]
        blocks: list[CitedText] = []
        failures: list[str] = []
        found = searches = 0
        paid = Usage(model=model)
        refused = ""
        sent_back: list[Any] = []  # the paused turn so far, every leg's content in order, as it came
        for leg in range(config.max_continuations + 1):
            message, broke = await self._search_leg(request)
            if message is None:  # nothing of this leg arrived
                refused = self._search_refused(broke, model, leg, searches)
                blocks = []
                break
            paid += self._priced(model, _counts(message))
            ran = 0
            for block in message.content:
                if block.type == "text":
                    sources = [Source(url=c.url, title=c.title or "") for c in block.citations or []
                               if c.type == "web_search_result_location"]
                    blocks.append(CitedText(text=block.text, sources=sources))
                elif block.type == "thinking" and block.thinking.strip():
                    # Text written between searches (a verdict, too), which comes back as a thinking block.
                    note = block.thinking if block.thinking.endswith("\n") else block.thinking + "\n"
                    blocks.append(CitedText(text=note))
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
                refused = (f"the web search broke off after {_searches(searches)} ({_reason(broke)}); they are "
                           "charged and were not run again")
                blocks = []
                break
            if message.stop_reason != "pause_turn":
                refused = self._stopped_check(message.stop_reason, model, searches)
                if refused:
                    blocks = []  # never a half-written verdict; asking again would run (and bill) the searches again
                break
            if leg == config.max_continuations:
                refused = (f"the web search was still running after the API paused it {leg + 1} times; "
                           f"{_charged(searches)}")
                blocks = []
                break
            if searches >= config.max_uses:
                # The tool's max_uses caps one request, and a continuation sends the tool unchanged: the check's
                # own cap is kept here, by not continuing a turn that has run all its searches.
                refused = (f"the web search was paused after running all the searches a check may run, before "
                           f"its verdicts were written; {_charged(searches)}")
                blocks = []
                break
            # Paused: the turn so far goes back as the assistant's, thinking blocks as they came, and the API
            # carries on from it.
            sent_back += [_param(b) for b in message.content]
            request = request | {"messages": [question, {"role": "assistant", "content": sent_back}]}
        usage = paid.model_copy(update={"cost_usd": paid.cost_usd + searches * config.price_per_search_usd})
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
        n = _charged(searches)
        if stop == "refusal":
            log.warning("the fact check was refused (%s)", model)
            return f"the model declined to check these claims; {n}"
        if stop in ("max_tokens", "model_context_window_exceeded"):
            log.warning("the fact check was cut off (%s, %s)", stop, model)
            return f"the check was cut off before its verdicts were written; {n}"
        return ""

    def _search_refused(self, exc: BaseException | None, model: str, leg: int, searches: int) -> str:
        """Why a search leg that returned nothing is no check. Only the first request's 400 is the tool refused
        (web search off for the organization, or a model without it); a continuation's is the API refusing what
        was sent back, after searches that ran and are charged."""
        exc = exc or RuntimeError()
        if leg == 0 and isinstance(exc, self._sdk.BadRequestError):
            log.warning("the web search tool was refused (%s, %s)", _reason(exc), model)
            return ("the Anthropic API refused the web search tool: an admin must turn web search on for the "
                    "organization in the Anthropic Console, and the model must offer it")
        reason = str(self._unavailable(exc, model))
        if leg == 0:
            return reason
        return f"the web search could not be continued after the API paused it ({reason}); {_charged(searches)}"

    def _priced(self, model: str, counts: Usage) -> Usage:
        """One request's counts with their cost (a request at a time: see `cost`)."""
        return counts.model_copy(update={"model": model, "cost_usd": cost(counts, self._config.prices[model])})

    @staticmethod
    def _unavailable(exc: BaseException, model: str, paid: Usage | None = None) -> LLMUnavailable:
        """`paid`: what the call's earlier attempts cost, already priced (None: nothing)."""
        reason = _reason(exc)
        log.warning("LLM call failed (%s, %s)", reason, model)
        return LLMUnavailable(reason, usage=paid)


def _sum(*costs: Usage | None) -> Usage | None:
    """What several attempts cost together (None: none of them cost anything yet)."""
    known = [c for c in costs if c is not None]
    return sum(known[1:], known[0]) if known else None


def _usage(counts: dict[str, int]) -> Usage:
    """A stream's running token counts (the API's field names) as a Usage, unpriced."""
    return Usage(
        input_tokens=counts.get("input_tokens", 0),
        output_tokens=counts.get("output_tokens", 0),
        cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
        cache_read_tokens=counts.get("cache_read_input_tokens", 0),
    )


def _counts(message: Message) -> Usage:
    u = message.usage
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_write_tokens=u.cache_creation_input_tokens or 0,
        cache_read_tokens=u.cache_read_input_tokens or 0,
    )


def _searches(n: int) -> str:
    return f"{n} search{'es' if n != 1 else ''}"


def _charged(n: int) -> str:
    return f"its {_searches(n)} {'is' if n == 1 else 'are'} charged"


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
