"""Protocols the core owns and the outside world implements: chat platforms, the LLM, the clock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Literal, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field

from core.models import Discussion, Persona, Phase, Post, Usage

Tier = Literal["light", "medium", "heavy"]
T = TypeVar("T", bound=BaseModel)
# Receives the text written so far as a stream arrives, in pieces: a list its writer appends to (a new attempt
# starts a new list). It returns at once; joining the pieces at every one of a turn's hundred deltas cost more
# than reading them.
TextSink = Callable[[list[str]], None]


class Block(BaseModel):
    text: str
    cache: bool = False  # a cache breakpoint after this block


class Purpose(BaseModel):
    """Why a prompt is sent: for logs, budgets and the offline model (never sent to the API)."""

    phase: Phase
    persona: str = ""
    role: str = ""
    topic: str = ""
    round: int = 1
    others: list[str] = Field(default_factory=list)
    humans: list[str] = Field(default_factory=list)
    last_round: bool = False  # an answer's: no round follows it (the flow ends, or the closing is asked for)


class Prompt(BaseModel):
    """Shared content first (system rules, then the transcript), the persona's own instruction last."""

    tier: Tier = "medium"
    # The model this call runs on: "provider:model" as a discussion routes it (a router reads the provider off
    # and hands the provider the bare model id); "" is the tier's model.
    model: str = ""
    system: list[Block]
    shared: list[Block]
    instruction: str
    max_tokens: int = 1024
    purpose: Purpose


class Completion(BaseModel):
    text: str
    usage: Usage


class Source(BaseModel):
    """A web page the API cited (a `web_search_result_location` citation): never a URL the model only wrote."""

    url: str
    title: str = ""


class CitedText(BaseModel):
    """One text block of an answer, with the sources the API attached to it."""

    text: str
    sources: list[Source] = Field(default_factory=list)


class Searched(BaseModel):
    """An answer written with the server-side web search tool. `refused` says, in words people understand, why
    nothing could be searched (an offline model, the API refusing the tool, every search failing): then the
    answer must not be read as a check."""

    blocks: list[CitedText] = Field(default_factory=list)
    searches: int = 0  # usage.server_tool_use.web_search_requests: billed per search
    usage: Usage = Field(default_factory=Usage)
    refused: str = ""


class LLMUnavailable(Exception):
    """The call failed after the client's own retries; the message is safe to show users. `usage`: what the
    failed attempts cost (tokens the model wrote before it stopped are billed), to be charged all the same."""

    def __init__(self, message: str = "", usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class LLMRefused(LLMUnavailable):
    """The model declined to write this (stop_reason `refusal`): asking again the same way will not help."""


class LLM(Protocol):
    offline: bool

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        """The whole answer; `on_text`, when given, is called with the text so far (its pieces) as the model writes
        it."""
        ...

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]: ...

    async def search(self, prompt: Prompt) -> Searched:
        """An answer the model writes with the web search tool (its searches priced into the usage)."""
        ...

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        """The most one call of `prompt` may cost (with the web search tool: its searches too), reserved of the
        budgets before it runs."""
        ...


class CannotPost(Exception):
    """The platform will never take posts for this discussion (channel archived, bot removed, thread gone);
    the message says why in words people understand."""


class RateLimited(Exception):
    """The platform asked to slow down: try again after `retry_after` seconds. Pacing, not a refusal: it never
    counts toward blocking a discussion."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


# A chat reports each message it shows for a turn being written (discussion, turn key, message ref), so the
# process that takes over after a crash can remove it (ChatPort.retract).
PlaceholderShown = Callable[[Discussion, str, str], Awaitable[None]]


@runtime_checkable
class ShowsPlaceholders(Protocol):
    """A chat whose turns show messages while they are written; the wiring hands it the driver's record."""

    placeholders: PlaceholderShown | None


class ChatPort(Protocol):
    """A chat platform as the core sees it: posts in a discussion's thread, found again by key."""

    async def publish(self, discussion: Discussion, post: Post) -> str:
        """Show the post (a header starts the thread); return the platform's message ref."""
        ...

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None: ...

    async def find(self, discussion: Discussion, key: str) -> str | None:
        """After a crash: the ref of a post already carrying this key, if the platform has one."""
        ...

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        """Show that a persona is working on the turn with this key."""
        ...

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        """Show the words of the turn with this key written so far (at most about once a second per turn);
        the finished post replaces them."""
        ...

    async def retract(self, discussion: Discussion, ref: str) -> None:
        """Remove a message a turn showed while it was written (a placeholder, live text) that the process which
        showed it never settled (it died): the turn is written again. A message already gone is no error."""
        ...

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        """A new top-level message in a channel, outside any discussion (digests); returns its ref."""
        ...

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        """After a crash: the ref of a top-level post in the channel already carrying this key, if any."""
        ...

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        """A private message to one person about this discussion (its starter, when it cannot post)."""
        ...

    async def link(self, discussion: Discussion) -> str:
        """A URL people can click to open the discussion's thread ("" when the platform has none)."""
        ...


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
