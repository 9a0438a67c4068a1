"""Loopback fake of the Anthropic Messages API (JSON and SSE) with prompt caching and fault injection."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import time
from collections import deque
from collections.abc import Callable
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


@dataclass
class Fault:
    """One injected failure: an error status before any output, or an SSE `error` event mid-stream."""

    status: int = 529
    retry_after_ms: int | None = 10
    mid_stream: bool = False
    after_deltas: int = 2


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
    ) -> None:
        self.host, self.port = host, port
        self.latency_s = latency_s
        self.chunk_chars = chunk_chars
        self.delta_gap_s = delta_gap_s  # pause between streamed deltas: a model writing slowly
        self.first_delta_at: dict[str, float] = {}  # reply text -> monotonic time its first delta was sent
        self.reply = reply or default_reply
        self.cache = PromptCache(min_cacheable_tokens)
        self.faults: deque[Fault] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.request_count = 0
        self.completed_count = 0
        self.input_tokens = self.cache_write_tokens = self.cache_read_tokens = self.output_tokens = 0
        self._runner: web.AppRunner | None = None
        # The server-side web search tool: "results" answers with searches and cited text, "refuse" rejects the
        # tool with a 400 (a model or account without it), "unavailable" returns a web_search_tool_result error,
        # "pause" stops with stop_reason pause_turn after the searches (a long turn the API paused).
        self.web_search = "results"
        self.search_answer: list[tuple[str, list[tuple[str, str]]]] | None = None  # (text, [(url, title)]) blocks
        self.searches_run = 0

    # -- control ---------------------------------------------------------------------------------

    def fail_next(self, n: int = 1, *, status: int = 529, retry_after_ms: int | None = 10) -> None:
        """The next n requests answer `status` (529 overloaded_error, 429, 500...) before any output."""
        self.faults.extend(Fault(status, retry_after_ms) for _ in range(n))

    def break_stream_next(self, n: int = 1, *, after_deltas: int = 2, status: int = 529) -> None:
        """The next n streaming requests send an SSE `error` event after `after_deltas` text deltas."""
        self.faults.extend(Fault(status, None, True, after_deltas) for _ in range(n))

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
        streaming = bool(body.get("stream"))
        fault = self._take_fault(streaming)
        if fault is not None and not fault.mid_stream:
            await asyncio.sleep(self.latency_s)
            return _error(fault.status, rid, retry_after_ms=fault.retry_after_ms)
        if any(str(tool.get("type", "")).startswith("web_search_") for tool in body.get("tools") or []):
            return await self._searched(body, rid, streaming)
        text = self.reply(body)
        stop_reason = "end_turn"
        if tokens(text) > body["max_tokens"]:
            text, stop_reason = text[: body["max_tokens"] * 4], "max_tokens"
        # Planned on arrival, committed after completion: parallel identical requests each write.
        plan = self.cache.plan(body["model"], body)
        await asyncio.sleep(self.latency_s)
        message = {
            "id": f"msg_fake{self.request_count:06d}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": _usage(plan, tokens(text)),
        }
        if streaming:
            return await self._stream(request, rid, message, plan, fault)
        self._complete(plan, tokens(text))
        return web.json_response(message, headers={"request-id": rid})

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
        await response.prepare(request)

        async def send(event: str, data: dict[str, Any]) -> None:
            await response.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())

        text, usage = message["content"][0]["text"], message["usage"]
        start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        await send("message_start", {"type": "message_start", "message": start})
        block = {"type": "text", "text": ""}
        await send("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
        await send("ping", {"type": "ping"})
        chunks = [text[i : i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)]
        for n, chunk in enumerate(chunks):
            if fault is not None and n == fault.after_deltas:
                break
            if n == 0:
                self.first_delta_at.setdefault(text, time.monotonic())
            elif self.delta_gap_s:
                await asyncio.sleep(self.delta_gap_s)
            delta = {"type": "text_delta", "text": chunk}
            await send("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        if fault is not None:
            kind, text = ERROR_TYPES.get(fault.status, ("api_error", "Internal server error"))
            await send("error", {"type": "error", "error": {"type": kind, "message": text}})
            await response.write_eof()
            return response
        await send("content_block_stop", {"type": "content_block_stop", "index": 0})
        delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
        out = {"output_tokens": usage["output_tokens"]}
        await send("message_delta", {"type": "message_delta", "delta": delta, "usage": out})
        await send("message_stop", {"type": "message_stop"})
        await response.write_eof()
        self._complete(plan, usage["output_tokens"])
        return response

    async def _searched(self, body: dict[str, Any], rid: str, streaming: bool) -> web.Response:
        """A message written with the server-side web search tool: server_tool_use and web_search_tool_result
        blocks for each search, then text blocks, some carrying web_search_result_location citations."""
        tool = next(t for t in body["tools"] if str(t.get("type", "")).startswith("web_search_"))
        if self.web_search == "refuse":
            return _error(400, rid, f"tools.0: the tool type '{tool['type']}' is not available for this model")
        if streaming:
            return _error(400, rid, "the fake streams no server tools; ask without stream")
        answer = self.search_answer if self.search_answer is not None else default_search_answer(body)
        urls = list(dict.fromkeys(url for _, cited in answer for url, _ in cited))
        titles = {url: title for _, cited in answer for url, title in cited}
        searches = max(1, min(int(tool.get("max_uses") or 5), len(urls) or 1))
        content: list[dict[str, Any]] = []
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
        for text, cited in ([] if self.web_search == "pause" else answer):
            block: dict[str, Any] = {"type": "text", "text": text}
            if cited and self.web_search != "unavailable":
                block["citations"] = [{"type": "web_search_result_location", "url": u, "title": t,
                                       "encrypted_index": f"idx-{i}", "cited_text": text[:150]}
                                      for i, (u, t) in enumerate(cited)]
            content.append(block)
        out = sum(tokens(text) for text, _ in answer)
        plan = self.cache.plan(body["model"], body)
        await asyncio.sleep(self.latency_s)
        usage = _usage(plan, out) | {"server_tool_use": {"web_search_requests": searches, "web_fetch_requests": 0}}
        message = {"id": f"msg_fake{self.request_count:06d}", "type": "message", "role": "assistant",
                   "model": body["model"], "content": content,
                   "stop_reason": "pause_turn" if self.web_search == "pause" else "end_turn", "stop_sequence": None,
                   "usage": usage}
        self.searches_run += searches
        self._complete(plan, out)
        return web.json_response(message, headers={"request-id": rid})

    # -- helpers ---------------------------------------------------------------------------------

    def _take_fault(self, streaming: bool) -> Fault | None:
        """The first queued fault that applies; mid-stream faults wait for a streaming request."""
        for fault in self.faults:
            if streaming or not fault.mid_stream:
                self.faults.remove(fault)
                return fault
        return None

    def _complete(self, plan: CachePlan, output: int) -> None:
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
