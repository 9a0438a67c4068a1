"""Loopback fake of the Anthropic Messages API (JSON and SSE) with prompt caching and fault injection."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from aiohttp import web

from tests.fakes.json_schema_instance import instance
from tests.fakes.prompt_cache import CachePlan, PromptCache, breakpoints, tokens

ERROR_TYPES = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Permission denied"),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed size"),
    429: ("rate_limit_error", "Number of request tokens has exceeded your rate limit"),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}
MAX_BREAKPOINTS = 4
# The models this fake serves, with what their pages say of thinking: the thinking types each accepts (all think
# adaptively when `thinking` is left out) and the effort each uses when none is sent.
MODELS: dict[str, tuple[frozenset[str], str]] = {
    "claude-haiku-5-5": (frozenset({"adaptive", "disabled"}), "medium"),
    "claude-sonnet-5-5": (frozenset({"adaptive", "between_tools"}), "high"),
    "claude-opus-5-5": (frozenset({"adaptive"}), "medium"),
}
EFFORTS = ("low", "medium", "high", "xhigh", "max")
# What a thinking block's text shows (thinking.display). The 5.5 models default to "omitted": blocks come back with
# an empty `thinking` and only a signature. "updates" is a beta (its header below) on Sonnet 5.5 and Opus 5.5, not
# Haiku 5.5: the notes written between tool calls carry their text, the reasoning stays empty.
DISPLAYS = ("summarized", "omitted", "updates")
UPDATES_BETA = "thinking-display-updates-2026-08-18"
# Models whose text between tool calls comes back in thinking blocks (the 5.5 pages' "text between tool calls").
NOTES_IN_THINKING = frozenset({"claude-sonnet-5-5", "claude-opus-5-5"})
REASONING_SUMMARY = "(a summary of the model's reasoning)"  # what "summarized" shows of a reasoning block
THINKING_SCALE = {"low": 1, "medium": 2, "high": 4, "xhigh": 6, "max": 8}  # thinking grows with the effort
# What the API answers when web search is off for the organization (an admin turns it on in the Console).
WEB_SEARCH_OFF = "Web search is not enabled for this organization. An administrator can enable it in the Console."
FILLER = (
    "The evidence so far points both ways, and the costs fall on different teams. ",
    "A trial with a clear stopping rule would tell us more than another round of opinion. ",
    "What matters most is who carries the risk if the change goes wrong, and how fast we would notice. ",
    "Teams that tried this elsewhere report gains in the first quarter that faded without support. ",
    "I would measure lead time, incidents and people's own account of their week, not one of them alone. ",
)


@dataclass
class Fault:
    """One injected failure: an error status before any output, or an SSE `error` event mid-stream."""

    status: int = 529
    retry_after_ms: int | None = 10
    mid_stream: bool = False
    after_deltas: int = 2
    skip: int = 0  # requests it lets through first (a fault for a later request: a continuation, a retry)


class FakeAnthropic:
    """`async with FakeAnthropic() as fake:` then point the SDK at `fake.base_url`."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
        min_cacheable_tokens: int = 1024,
        chunk_chars: int = 24,
        delta_gap_s: float = 0.0,
        reply: Callable[[dict[str, Any]], str] | None = None,
        thinking_tokens: int = 0,
        reply_chars: int = 0,
        models: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.host, self.port = host, port
        self.latency_s = latency_s
        # Requests overlap for sure: no answer leaves before this many have arrived and been planned.
        self.answer_together, self.planned, self._together = 0, 0, asyncio.Event()
        self.chunk_chars = chunk_chars
        self.delta_gap_s = delta_gap_s  # pause between streamed deltas: a model writing slowly
        self.first_delta_at: dict[str, float] = {}  # reply text -> monotonic time its first delta was sent
        self.reply = reply or default_reply
        # A model that thinks as today's do: this many thinking tokens at low effort (more at higher efforts),
        # written before the answer and counted against max_tokens. 0: a model that never thinks.
        self.thinking_tokens = thinking_tokens
        self.reply_chars = reply_chars  # default replies padded to about this length, as real turns are
        self.models = dict(MODELS)
        self.serve(*models)
        self.clock = clock  # the prompt cache's time: entries lapse 5 minutes after their last use
        self.cache = PromptCache(min_cacheable_tokens, clock=clock)
        self.written: list[str] = []  # every reply's whole text, before any cut: what a finished turn must say
        self.refuse_next = 0  # the next n messages stop with stop_reason "refusal" after a few words
        self.refuse: Callable[[dict[str, Any]], bool] = lambda body: False  # and every message this picks
        self.ledger: list[dict[str, Any]] = []  # each completed message's model and token counts, as billed
        self.faults: deque[Fault] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.request_count = 0
        self.completed_count = 0
        self.input_tokens = self.cache_write_tokens = self.cache_read_tokens = self.output_tokens = 0
        # Streams broken on purpose, each with the usage its message_start reported and the characters of text
        # it sent before the error: the API bills what a broken stream used, and so must the client.
        self.broken: list[dict[str, int]] = []
        self._runner: web.AppRunner | None = None
        # The server-side web search tool: "results" answers with searches and cited text, "refuse" rejects the
        # tool with a 400 (a model or account without it), "unavailable" returns a web_search_tool_result error,
        # "pause" stops with stop_reason pause_turn after the searches (a long turn the API paused) and writes the
        # answer when the paused turn is sent back; "pause_always" pauses every time; "off" answers the 400 of an
        # organization whose admin has not turned web search on; "break" sends the searches, then a stream error;
        # "stall" sends the searches, then nothing more (no pings) until the fake stops.
        self.web_search = "results"
        self.search_answer: list[tuple[str, list[tuple[str, str]]]] | None = None  # (text, [(url, title)]) blocks
        # Text the model writes after its first search and before its second: a thinking block on the models of
        # NOTES_IN_THINKING (its text shown only at display "summarized" or "updates"), a text block on others.
        self.between_searches = ""
        self.searches_run = 0
        # Each thinking block made: its signature -> the request that made it, the blocks before it in its turn,
        # and its text. A block sent back is checked against them (preserved thinking).
        self.thinking_made: dict[str, tuple[dict[str, Any], list[Any], str]] = {}
        self._unstall = asyncio.Event()  # "stall" mode: the stream waits for this (set at stop) after its searches

    # -- control ---------------------------------------------------------------------------------

    def fail_next(self, n: int = 1, *, status: int = 529, retry_after_ms: int | None = 10, skip: int = 0) -> None:
        """The next n requests (after `skip` more) answer `status` (529 overloaded_error, 429, 500...) before any
        output."""
        self.faults.extend(Fault(status, retry_after_ms, skip=skip) for _ in range(n))

    def break_stream_next(self, n: int = 1, *, after_deltas: int = 2, status: int = 529, skip: int = 0) -> None:
        """The next n streaming requests (after `skip` more) send an SSE `error` event after `after_deltas` text
        deltas."""
        self.faults.extend(Fault(status, None, True, after_deltas, skip) for _ in range(n))

    def serve(self, *models: str) -> None:
        """Serve these model ids too (others answer 404 not_found_error, as the API does for an unknown id)."""
        for model in models:
            self.models.setdefault(model, (frozenset({"adaptive"}), "high"))

    def stats(self) -> dict[str, int]:
        return {
            "request_count": self.request_count,
            "completed_count": self.completed_count,
            "input_tokens": self.input_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "output_tokens": self.output_tokens,
        }

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    # -- lifecycle -------------------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(client_max_size=32 * 1024**2)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/_fake/stats", self._stats)
        app.router.add_get("/_fake/requests", self._requests)
        app.router.add_post("/_fake/faults", self._add_faults)
        return app

    async def start(self) -> FakeAnthropic:
        self._runner = web.AppRunner(self.app(), handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        self._unstall.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeAnthropic:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # -- handlers --------------------------------------------------------------------------------

    async def _stats(self, _: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _requests(self, _: web.Request) -> web.Response:
        return web.json_response(self.requests)

    async def _add_faults(self, request: web.Request) -> web.Response:
        spec = await request.json()
        count = int(spec.pop("count", 1))
        self.faults.extend(Fault(**spec) for _ in range(count))
        return web.json_response([asdict(f) for f in self.faults])

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        self.request_count += 1
        rid = f"req_fake{self.request_count:06d}"
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, rid, "Request body is not valid JSON")
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        problem = _validate(body)
        if problem:
            return _error(400, rid, problem)
        if body["model"] not in self.models:
            return _error(404, rid, f"model: {body['model']}")
        problem = self._check_thinking(body, request.headers.get("anthropic-beta", "")) or self._check_binding(body)
        if problem:
            return _error(400, rid, problem)
        streaming = bool(body.get("stream"))
        fault = self._take_fault(streaming)
        if fault is not None and not fault.mid_stream:
            await asyncio.sleep(self.latency_s)
            return _error(fault.status, rid, retry_after_ms=fault.retry_after_ms)
        if any(str(tool.get("type", "")).startswith("web_search_") for tool in body.get("tools") or []):
            return await self._searched(request, body, rid, streaming, fault)
        text = self.reply(body)
        if self.reply_chars and self.reply is default_reply and not (body.get("output_config") or {}).get("format"):
            text = padded(text, self.reply_chars)
        self.written.append(text)
        content, stop_reason, output = self._written(body, text)
        if (self.refuse_next or self.refuse(body)) and stop_reason == "end_turn":
            self.refuse_next = max(0, self.refuse_next - 1)
            content = [b if b["type"] != "text" else {**b, "text": b["text"][:40]} for b in content]
            stop_reason = "refusal"
        # Planned on arrival, committed after completion: parallel identical requests each write.
        plan = self.cache.plan(body["model"], body)
        self.planned += 1
        if self.planned >= self.answer_together:
            self._together.set()
        await self._together.wait()
        await asyncio.sleep(self.latency_s)
        message = {
            "id": f"msg_fake{self.request_count:06d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": _usage(plan, output),
        }
        if stop_reason == "refusal":
            message["stop_details"] = {"type": "refusal", "category": None, "explanation": None}
        if streaming:
            return await self._stream(request, rid, message, plan, fault)
        if self.delta_gap_s:  # unstreamed, the whole answer arrives when the model has written all of it
            text = "".join(b.get("text", "") for b in content)
            await asyncio.sleep(self.delta_gap_s * max(0, -(-len(text) // self.chunk_chars) - 1))
        self._complete(plan, output, body["model"])
        return web.json_response(message, headers={"request-id": rid})

    def _thinking(self, body: dict[str, Any]) -> int:
        """The thinking tokens this request makes the model write: none when thinking is off, more at more effort."""
        thinking = (body.get("thinking") or {}).get("type", "adaptive")
        if not self.thinking_tokens or thinking != "adaptive":
            return 0
        effort = (body.get("output_config") or {}).get("effort") or self.models[body["model"]][1]
        return self.thinking_tokens * THINKING_SCALE[effort]

    def _written(self, body: dict[str, Any], text: str) -> tuple[list[dict[str, Any]], str, int]:
        """The content blocks, stop reason and output tokens of a reply: thinking first, then the text, all of
        it counted against max_tokens; a reply that does not fit is cut there (stop_reason max_tokens)."""
        cap, thought = body["max_tokens"], self._thinking(body)
        content: list[dict[str, Any]] = []
        if thought:
            content.append(self._thought(body, content))
        if thought >= cap:
            return content, "max_tokens", cap
        room = cap - thought
        if tokens(text) > room:
            text = text[: room * 4]
            content.append({"type": "text", "text": text})
            return content, "max_tokens", cap
        content.append({"type": "text", "text": text})
        return content, "end_turn", thought + tokens(text)

    def _thought(self, body: dict[str, Any], before: list[dict[str, Any]], note: str = "") -> dict[str, Any]:
        """A thinking block, recorded with what came before it: the model's reasoning, or (`note`) text it wrote
        between tool calls, each shown as the request's display shows it."""
        display = (body.get("thinking") or {}).get("display") or "omitted"
        if note:
            text = note if display in ("summarized", "updates") else ""
        else:
            text = REASONING_SUMMARY if display == "summarized" else ""
        signature = f"sig-{self.request_count}-{len(before)}"
        messages = body["messages"]
        turn = messages[-1]["content"] if messages[-1]["role"] == "assistant" else []  # a paused turn goes on
        self.thinking_made[signature] = (body, [*turn, *before], text)
        return {"type": "thinking", "thinking": text, "signature": signature}

    def _check_binding(self, body: dict[str, Any]) -> str:
        """A thinking block sent back must be one this API made, as it came, after the same system prompt, tools
        and earlier blocks as when it was made (preserved thinking: on accounts created since 31 August 2026 a
        block whose prefix changed fails the request with a 400); '' when every block holds."""
        messages = body["messages"]
        for i, message in enumerate(messages):
            if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
                continue
            for j, block in enumerate(message["content"]):
                if not isinstance(block, dict) or block.get("type") != "thinking":
                    continue
                made = self.thinking_made.get(str(block.get("signature")))
                if made is None or made[2] != block.get("thinking"):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
                origin, before, _ = made
                turn = origin["messages"][:-1] if origin["messages"][-1]["role"] == "assistant" \
                    else origin["messages"]
                if _prefix(origin, turn, before) != _prefix(body, messages[:i], message["content"][:j]):
                    return (f"messages.{i}.content.{j}: the system prompt, tools or messages before this thinking "
                            "block differ from those it was produced after; send them unchanged")
        return ""

    def _check_thinking(self, body: dict[str, Any], betas: str = "") -> str:
        """The thinking settings the model refuses with a 400, as its page says; '' when fine."""
        accepted, _ = self.models[body["model"]]
        thinking = (body.get("thinking") or {}).get("type", "adaptive")
        display = (body.get("thinking") or {}).get("display")
        effort = (body.get("output_config") or {}).get("effort")
        if effort is not None and effort not in EFFORTS:
            return f"output_config.effort: Input should be {', '.join(repr(e) for e in EFFORTS)}"
        if display is not None and display not in DISPLAYS:
            return f"thinking.display: Input should be {', '.join(repr(d) for d in DISPLAYS)}"
        if display == "updates" and UPDATES_BETA not in [b.strip() for b in betas.split(",")]:
            return f'thinking.display: "updates" requires the anthropic-beta header "{UPDATES_BETA}"'
        if display == "updates" and body["model"] not in NOTES_IN_THINKING:
            return 'thinking.display: "updates" is not supported for this model'
        if thinking not in accepted:
            hint = '"thinking.type.between_tools"' if "between_tools" in accepted else '"thinking.type.adaptive"'
            return (f'"thinking.type.{thinking}" is not supported for this model. Use {hint} and '
                    '"output_config.effort" to control thinking behavior.')
        if thinking in ("between_tools", "disabled") and effort in ("xhigh", "max"):
            return f'"thinking.type.{thinking}" is not supported with effort "{effort}"'
        return ""

    async def _stream(
        self, request: web.Request, rid: str, message: dict[str, Any], plan: CachePlan, fault: Fault | None
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8", "request-id": rid})
        try:
            return await self._events(request, response, message, plan, fault)
        except ConnectionResetError:  # the caller hung up mid-stream (a Stop, a kill): the stream just ends
            return response

    async def _events(
        self, request: web.Request, response: web.StreamResponse, message: dict[str, Any], plan: CachePlan,
        fault: Fault | None,
    ) -> web.StreamResponse:
        """The message as the API streams it: each content block started, filled by small deltas, stopped."""
        await response.prepare(request)

        async def send(event: str, data: dict[str, Any]) -> None:
            await response.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())

        usage = message["usage"]
        # Searches are counted in the closing message_delta, not at the start.
        first_usage = {k: v for k, v in usage.items() if k != "server_tool_use"} | {"output_tokens": 1}
        start = {**message, "content": [], "stop_reason": None, "usage": first_usage}
        start.pop("stop_details", None)
        await send("message_start", {"type": "message_start", "message": start})
        await send("ping", {"type": "ping"})
        sent = 0  # text deltas sent, for a fault that breaks the stream after n of them
        streamed = 0  # characters of text and thinking sent
        broken = False
        for index, block in enumerate(message["content"]):
            kind = block["type"]
            first: dict[str, Any]
            if kind == "text":
                first = {"type": "text", "text": ""}
            elif kind == "thinking":
                first = {"type": "thinking", "thinking": "", "signature": ""}
            elif kind == "server_tool_use":
                first = {**block, "input": {}}
            else:
                first = block
            await send("content_block_start", {"type": "content_block_start", "index": index, "content_block": first})
            if kind == "thinking":
                if block["thinking"]:
                    streamed += len(block["thinking"])
                    delta = {"type": "thinking_delta", "thinking": block["thinking"]}
                    await send("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                delta = {"type": "signature_delta", "signature": block["signature"]}
                await send("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            elif kind == "server_tool_use":
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                await send("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            elif kind == "text":
                for citation in block.get("citations") or []:
                    delta = {"type": "citations_delta", "citation": citation}
                    await send("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                text = block["text"]
                for i in range(0, len(text), self.chunk_chars):
                    if fault is not None and sent == fault.after_deltas:
                        broken = True
                        break
                    if sent == 0:
                        self.first_delta_at.setdefault(text, time.monotonic())
                    elif self.delta_gap_s:
                        await asyncio.sleep(self.delta_gap_s)
                    sent += 1
                    streamed += len(text[i : i + self.chunk_chars])
                    delta = {"type": "text_delta", "text": text[i : i + self.chunk_chars]}
                    await send("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            if broken:
                break
            await send("content_block_stop", {"type": "content_block_stop", "index": index})
            if kind == "web_search_tool_result" and self.web_search == "stall":
                await self._unstall.wait()
                return response
        if fault is not None:
            self.broken.append({**{k: v for k, v in first_usage.items() if isinstance(v, int)}, "chars": streamed})
            kind, words = ERROR_TYPES.get(fault.status, ("api_error", "Internal server error"))
            await send("error", {"type": "error", "error": {"type": kind, "message": words}})
            await response.write_eof()
            return response
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None,
                 "stop_details": message.get("stop_details")}
        out: dict[str, Any] = {"output_tokens": usage["output_tokens"]}
        if "server_tool_use" in usage:
            out["server_tool_use"] = usage["server_tool_use"]
        await send("message_delta", {"type": "message_delta", "delta": delta, "usage": out})
        await send("message_stop", {"type": "message_stop"})
        await response.write_eof()
        self._complete(plan, usage["output_tokens"], message["model"])
        return response

    async def _searched(self, request: web.Request, body: dict[str, Any], rid: str, streaming: bool,
                        fault: Fault | None) -> web.StreamResponse:
        """A message written with the server-side web search tool: server_tool_use and web_search_tool_result
        blocks for each search, then text blocks, some carrying web_search_result_location citations. A paused
        turn sent back (its last message the assistant's, ending in search results) is continued: the answer is
        written from the searches already run, and none is run again."""
        tool = next(t for t in body["tools"] if str(t.get("type", "")).startswith("web_search_"))
        if self.web_search == "refuse":
            return _error(400, rid, f"tools.0: the tool type '{tool['type']}' is not available for this model")
        if self.web_search == "off":
            return _error(400, rid, WEB_SEARCH_OFF)
        answer = self.search_answer if self.search_answer is not None else default_search_answer(body)
        urls = list(dict.fromkeys(url for _, cited in answer for url, _ in cited))
        titles = {url: title for _, cited in answer for url, title in cited}
        resumed = body["messages"][-1]["role"] == "assistant"
        pause = self.web_search == "pause_always" or (self.web_search == "pause" and not resumed)
        searches = max(1, min(int(tool.get("max_uses") or 5), len(urls) or 1))
        if resumed and self.web_search != "pause_always":
            searches = 0  # a continued turn writes from the searches it already ran
        content: list[dict[str, Any]] = []
        thought = self._thinking(body)
        if thought:
            content.append(self._thought(body, content))
        for n in range(searches):
            tool_id = f"srvtoolu_fake{self.request_count:04d}{n:02d}"
            content.append({"type": "server_tool_use", "id": tool_id, "name": "web_search",
                            "input": {"query": f"check claim {n + 1}"}})
            if self.web_search == "unavailable":
                result: Any = {"type": "web_search_tool_result_error", "error_code": "unavailable"}
            else:
                mine = urls[n::searches]
                result = [{"type": "web_search_result", "url": u, "title": titles[u], "page_age": "April 2, 2025",
                           "encrypted_content": f"enc-{n}-{i}"} for i, u in enumerate(mine)]
            content.append({"type": "web_search_tool_result", "tool_use_id": tool_id, "content": result})
            if n == 0 and searches > 1 and self.between_searches:
                note = self.between_searches
                thought += tokens(note)
                content.append(self._thought(body, content, note) if body["model"] in NOTES_IN_THINKING
                               else {"type": "text", "text": note})
        written = [] if pause else answer
        for text, cited in written:
            block: dict[str, Any] = {"type": "text", "text": text}
            if cited and self.web_search != "unavailable":
                block["citations"] = [{"type": "web_search_result_location", "url": u, "title": t,
                                       "encrypted_index": f"idx-{i}", "cited_text": text[:150]}
                                      for i, (u, t) in enumerate(cited)]
            content.append(block)
        out = thought + sum(tokens(text) for text, _ in written)
        stop = "pause_turn" if pause else "end_turn"
        if out > body["max_tokens"]:  # thinking and verdicts past the cap: the text stops where the cap is
            room, cut = (body["max_tokens"] - thought) * 4, []
            for block in content:
                if block["type"] == "text":
                    block = {**block, "text": block["text"][:max(0, room)]}
                    room -= len(block["text"])
                cut.append(block)
            content, out, stop = [b for b in cut if b["type"] != "text" or b["text"]], body["max_tokens"], "max_tokens"
        elif written and (self.refuse_next or self.refuse(body)):
            self.refuse_next = max(0, self.refuse_next - 1)
            stop = "refusal"
        plan = self.cache.plan(body["model"], body)
        await asyncio.sleep(self.latency_s)
        usage = _usage(plan, out) | {"server_tool_use": {"web_search_requests": searches, "web_fetch_requests": 0}}
        message = {"id": f"msg_fake{self.request_count:06d}", "type": "message", "role": "assistant",
                   "model": body["model"], "content": content,
                   "stop_reason": stop, "stop_sequence": None, "usage": usage}
        self.searches_run += searches  # run, and billed, whether or not the answer reaches the caller
        if self.web_search == "break" and fault is None:
            fault = Fault(529, None, True, 0)
        if streaming:
            return await self._stream(request, rid, message, plan, fault)
        self._complete(plan, out, body["model"])
        return web.json_response(message, headers={"request-id": rid})

    # -- helpers ---------------------------------------------------------------------------------

    def _take_fault(self, streaming: bool) -> Fault | None:
        """The first queued fault that applies; mid-stream faults wait for a streaming request, and faults that
        skip requests let this one through (counting it)."""
        for fault in self.faults:
            if fault.skip:
                for waiting in self.faults:
                    waiting.skip = max(0, waiting.skip - 1)
                return None
            if streaming or not fault.mid_stream:
                self.faults.remove(fault)
                return fault
        return None

    def _complete(self, plan: CachePlan, output: int, model: str = "") -> None:
        self.ledger.append({"model": model, "input_tokens": plan.input_tokens, "output_tokens": output,
                            "cache_write_tokens": plan.cache_creation_input_tokens,
                            "cache_read_tokens": plan.cache_read_input_tokens})
        self.cache.commit(plan)
        self.completed_count += 1
        self.input_tokens += plan.input_tokens
        self.cache_write_tokens += plan.cache_creation_input_tokens
        self.cache_read_tokens += plan.cache_read_input_tokens
        self.output_tokens += output


def default_reply(body: dict[str, Any]) -> str:
    """JSON matching `output_config.format` when asked for one, otherwise a short echo of the instruction."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    if fmt.get("type") == "json_schema":
        return json.dumps(instance(fmt["schema"]))
    last = body["messages"][-1]["content"]
    if not isinstance(last, str):
        last = next((b.get("text", "") for b in reversed(last) if b.get("type") == "text"), "")
    instruction = " ".join(last.split())
    if len(instruction) > 120:
        instruction = instruction[:117] + "..."
    reply = f"[{body['model']}] In reply to: {instruction} Here is my view, in a few plain sentences."
    if "Stance: <label>" in last:  # a model follows the requested last line
        reply += "\n\nStance: undecided — it depends on what the trial shows"
    return reply


def padded(reply: str, chars: int) -> str:
    """A reply grown to about `chars` characters, as a real turn is; a last `Stance:` line stays last."""
    body, sep, stance = reply.rpartition("\n\nStance:")
    if not sep:
        body, stance = reply, ""
    n = 0
    while len(body) < chars - len(stance):
        body += (" " if not body.endswith(" ") else "") + FILLER[n % len(FILLER)].strip()
        n += 1
    return f"{body}\n\nStance:{stance}" if sep else body


def default_search_answer(body: dict[str, Any]) -> list[tuple[str, list[tuple[str, str]]]]:
    """A check of two claims: one supported with a citation, one false with a URL only written in the text."""
    return [
        ("[supported] A claim made above — ", []),
        ("the cited survey says the same.", [("https://research.example.org/survey-2025", "Survey 2025")]),
        ("\n[false] Another claim — see https://made-up.example.com/fake-study for nothing.", []),
    ]


def _validate(body: dict[str, Any]) -> str:
    """The request checks the real API makes that this project could trip over; '' when fine."""
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    if not isinstance(body["max_tokens"], int) or body["max_tokens"] < 1:
        return "max_tokens: must be a positive integer"
    if not body["messages"]:
        return "messages: at least one message is required"
    last = body["messages"][-1]
    if last.get("role") == "assistant" and not (
        isinstance(last.get("content"), list)
        and any(b.get("type") == "web_search_tool_result" for b in last["content"])
    ):  # only a paused turn may be sent back as the last message
        return "This model does not support assistant message prefill. The conversation must end with a user message."
    if body.get("temperature", 1.0) != 1.0:
        return f"temperature is not supported by {body['model']}; only the default is allowed"
    count = breakpoints(body)
    if count > MAX_BREAKPOINTS:
        return f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {count}."
    system = body.get("system")
    contents = [m.get("content") for m in body["messages"]] + [system if isinstance(system, list) else []]
    for content in contents:
        if isinstance(content, list) and any(b.get("type") == "text" and not b.get("text") for b in content):
            return "text content blocks must be non-empty"
    for tool in body.get("tools") or []:
        if str(tool.get("type", "")).startswith("web_search_"):
            if tool.get("name") != "web_search":
                return "tools.0.name: the web search tool must be named 'web_search'"
            if tool.get("allowed_domains") and tool.get("blocked_domains"):
                return "tools.0: cannot use both allowed_domains and blocked_domains"
            if "max_uses" in tool and (not isinstance(tool["max_uses"], int) or tool["max_uses"] < 1):
                return "tools.0.max_uses: must be a positive integer"
    fmt = (body.get("output_config") or {}).get("format")
    if fmt and (fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict)):
        return "output_config.format: expected {type: 'json_schema', schema: {...}}"
    return ""


def _prefix(body: dict[str, Any], messages: list[Any], blocks: list[Any]) -> str:
    """What a thinking block is bound to: the system prompt, the tools, the messages before its turn and the
    blocks before it in its turn."""
    return json.dumps({"system": body.get("system"), "tools": body.get("tools"), "messages": messages,
                       "blocks": blocks}, sort_keys=True)


def _usage(plan: CachePlan, output: int) -> dict[str, Any]:
    return {
        "input_tokens": plan.input_tokens,
        "cache_creation_input_tokens": plan.cache_creation_input_tokens,
        "cache_read_input_tokens": plan.cache_read_input_tokens,
        "output_tokens": output,
    }


def _error(status: int, rid: str, message: str = "", *, retry_after_ms: int | None = None) -> web.Response:
    kind, default = ERROR_TYPES.get(status, ("api_error", "Internal server error"))
    headers = {"request-id": rid}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    body = {"type": "error", "error": {"type": kind, "message": message or default}, "request_id": rid}
    return web.json_response(body, status=status, headers=headers)


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    fake = FakeAnthropic(
        host=args.host, port=args.port, latency_s=args.latency, min_cacheable_tokens=args.min_cacheable_tokens
    )
    async with fake:
        print(f"fake anthropic listening on {fake.base_url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each response")
    parser.add_argument("--min-cacheable-tokens", type=int, default=1024)
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
