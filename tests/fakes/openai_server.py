"""Loopback fake of an OpenAI-compatible Chat Completions API (OpenAI, OpenRouter, vLLM, Ollama): streamed SSE
chunks, usage in the last chunk, automatic prefix caching where the server has it, and fault injection."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from tests.fakes.json_schema_instance import instance
from tests.fakes.prompt_cache import tokens

ERRORS = {  # status -> (error.type, error.code, message), as OpenAI's API answers them
    400: ("invalid_request_error", None, "Invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided"),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it"),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests"),
    500: ("server_error", None, "The server had an error while processing your request"),
    503: ("server_error", None, "The engine is currently overloaded"),
}
CACHE_MIN_TOKENS = 1024  # OpenAI caches a prompt's prefix from 1024 tokens, in steps of 128
CACHE_STEP = 128
REFUSAL = "I'm sorry, I can't help with that."


@dataclass
class Fault:
    """One injected failure: an error status before any output, or a stream that breaks after `after_chunks`
    content chunks: with an SSE `error` payload ("error") or a connection cut without a word ("drop")."""

    status: int = 429
    retry_after: str | None = "0.01"  # seconds, as the Retry-After header carries them
    mid_stream: str = ""  # "", "error" or "drop"
    after_chunks: int = 2
    with_usage: bool = False  # a broken stream that had already sent its usage chunk


class FakeOpenAI:
    """`async with FakeOpenAI(models=[...]) as fake:` then point the SDK at `fake.base_url`.

    `caching`: the server reports cached prompt tokens (`prompt_tokens_details.cached_tokens`) as OpenAI's
    automatic prefix cache does; a self-hosted server without it reports none. `json_schema`: it honours
    `response_format` of type json_schema; without it, it answers 400 to one (as some servers do) and a client
    must ask for a tool call instead."""

    def __init__(self, *, models: Iterable[str] = ("gpt-5.1",), caching: bool = True, json_schema: bool = True,
                 api_key: str = "", chunk_chars: int = 24, name: str = "openai",
                 reply: Callable[[dict[str, Any]], str] | None = None) -> None:
        self.host, self.port = "127.0.0.1", 0
        self.models = set(models)
        self.caching = caching
        self.json_schema = json_schema
        self.api_key = api_key  # "" takes any key (vLLM and Ollama take whatever is sent)
        self.chunk_chars = chunk_chars
        self.name = name
        self.reply = reply or default_reply
        self.faults: deque[Fault] = deque()
        self.filter_next = 0  # the next n answers stop with finish_reason content_filter after a few words
        self.refuse_next = 0  # the next n structured answers are a refusal (delta.refusal), as OpenAI sends one
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.ledger: list[dict[str, Any]] = []  # each answer's model and token counts, as billed
        self._prefixes: set[str] = set()
        self._runner: web.AppRunner | None = None

    # -- control ---------------------------------------------------------------------------------

    def fail_next(self, n: int = 1, *, status: int = 429, retry_after: str | None = "0.01") -> None:
        self.faults.extend(Fault(status, retry_after) for _ in range(n))

    def break_stream_next(self, n: int = 1, *, how: str = "drop", after_chunks: int = 2,
                          with_usage: bool = False) -> None:
        self.faults.extend(Fault(500, None, how, after_chunks, with_usage) for _ in range(n))

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> FakeOpenAI:
        app = web.Application(client_max_size=32 * 1024**2)
        app.router.add_post("/v1/chat/completions", self._completions)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeOpenAI:
        return await self.start()

    async def __aexit__(self, *_: object) -> None:
        await self.stop()

    # -- the API ---------------------------------------------------------------------------------

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        if self.api_key and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401)
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, "We could not parse the JSON body of your request.")
        self.requests.append(body)
        self.headers.append(dict(request.headers))
        problem = self._problem(body)
        if problem:
            return _error(*problem)
        fault = self.faults.popleft() if self.faults else None
        if fault is not None and not fault.mid_stream:
            return _error(fault.status, retry_after=fault.retry_after)
        tool = _forced_tool(body)
        text = self.reply(body)
        finish = "tool_calls" if tool else "stop"
        refusal = ""
        structured = tool or (body.get("response_format") or {}).get("type") == "json_schema"
        if structured and self.refuse_next:
            self.refuse_next -= 1
            text, refusal, finish = "", REFUSAL, "stop"
        elif self.filter_next:
            self.filter_next -= 1
            text, finish = text[:40], "content_filter"
        cap = body.get("max_completion_tokens") or body.get("max_tokens")
        if cap is not None and tokens(text) > cap:
            text, finish = text[: cap * 4], "length"
        usage = self._usage(body, tokens(text) + tokens(refusal))
        if not body.get("stream"):
            return web.json_response(self._whole(body, text, refusal, tool, finish, usage))
        return await self._stream(request, body, text, refusal, tool, finish, usage, fault)

    def _problem(self, body: dict[str, Any]) -> tuple[int, str] | None:
        if body.get("model") not in self.models:
            return 404, f"The model `{body.get('model')}` does not exist or you do not have access to it."
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return 400, "'messages' is a required property"
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            if not self.json_schema:
                return 400, "response_format of type json_schema is not supported by this server"
            if not isinstance((fmt.get("json_schema") or {}).get("schema"), dict):
                return 400, "response_format.json_schema.schema is required"
        if "temperature" in body and not 0 <= body["temperature"] <= 2:
            return 400, "temperature must be between 0 and 2"
        return None

    def _usage(self, body: dict[str, Any], completion: int) -> dict[str, Any]:
        """Counts as the API bills them; with caching, the longest prefix an earlier request sent is read from
        the cache (from 1024 tokens, in steps of 128), and this request's prefixes are kept for later ones."""
        prompt_text = "".join(str(m.get("content") or "") for m in body["messages"])
        prompt = tokens(prompt_text)
        cached = 0
        if self.caching:
            for size in range(CACHE_MIN_TOKENS, prompt + 1, CACHE_STEP):
                key = f"{body['model']}|{prompt_text[: size * 4]}"
                if key in self._prefixes:
                    cached = size
                self._prefixes.add(key)
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        if self.caching:
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
        self.ledger.append({"model": body["model"], **usage})
        return usage

    def _whole(self, body: dict[str, Any], text: str, refusal: str, tool: str, finish: str,
               usage: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": None if tool else text,
                                   "refusal": refusal or None}
        if tool:
            message["tool_calls"] = [{"id": "call_1", "type": "function",
                                      "function": {"name": tool, "arguments": text}}]
        return {"id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}

    async def _stream(self, request: web.Request, body: dict[str, Any], text: str, refusal: str, tool: str,
                      finish: str, usage: dict[str, Any], fault: Fault | None) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)

        async def send(data: dict[str, Any] | str) -> None:
            await response.write(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode())

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
            return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

        await send(chunk({"role": "assistant", "content": ""}))
        pieces = [text[i: i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)]
        for n, piece in enumerate(pieces):
            if fault is not None and n == fault.after_chunks:
                return await self._broken(response, send, fault, usage)
            if tool:
                call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
                if n == 0:
                    call.update(id="call_1", type="function", function={"name": tool, "arguments": piece})
                await send(chunk({"tool_calls": [call]}))
            else:
                await send(chunk({"content": piece}))
        if refusal:
            await send(chunk({"refusal": refusal}))
        if fault is not None:  # fewer chunks than the fault waits for: it breaks at the end
            return await self._broken(response, send, fault, usage)
        await send(chunk({}, finish))
        if (body.get("stream_options") or {}).get("include_usage"):
            await send({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
                        "model": body["model"], "choices": [], "usage": usage})
        await send("[DONE]")
        await response.write_eof()
        return response

    async def _broken(self, response: web.StreamResponse, send: Callable[[Any], Any], fault: Fault,
                      usage: dict[str, Any]) -> web.StreamResponse:
        if fault.with_usage:
            await send({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": "",
                        "choices": [], "usage": usage})
        if fault.mid_stream == "error":
            await send({"error": {"message": "The server had an error while processing your request",
                                  "type": "server_error", "code": None}})
            await response.write_eof()
            return response
        transport = response._req.transport if response._req is not None else None  # a cut connection
        if transport is not None:
            transport.abort()
        return response


def _forced_tool(body: dict[str, Any]) -> str:
    """The function a request forces the model to call ('' when none)."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "function":
        return str(choice["function"]["name"])
    return ""


def default_reply(body: dict[str, Any]) -> str:
    """JSON for the json_schema or forced tool a request names, otherwise a short echo of its last message."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return json.dumps(instance(fmt["json_schema"]["schema"]))
    tool = _forced_tool(body)
    if tool:
        spec = next(t["function"] for t in body.get("tools") or [] if t["function"]["name"] == tool)
        return json.dumps(instance(spec["parameters"]))
    last = " ".join(str(body["messages"][-1].get("content") or "").split())
    instruction = last[-120:]
    reply = f"[{body['model']}] In reply to: {instruction} Here is my view, in a few plain sentences."
    if "Stance: <label>" in last:
        reply += "\n\nStance: undecided — it depends on what the trial shows"
    return reply


def _error(status: int, message: str = "", *, retry_after: str | None = None) -> web.Response:
    kind, code, default = ERRORS.get(status, ("server_error", None, "Internal server error"))
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = {"error": {"message": message or default, "type": kind, "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    fake = FakeOpenAI(models=args.models.split(","), caching=not args.no_caching, json_schema=not args.no_json_schema)
    fake.port = args.port
    async with fake:
        print(f"fake chat completions listening on {fake.base_url}", flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> None:
    """`python -m tests.fakes.openai_server --port 8401 --models gpt-5.1` (a demo, or a console run by hand)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--models", default="gpt-5.1", help="comma-separated model ids it serves")
    parser.add_argument("--no-caching", action="store_true", help="report no cached prompt tokens (vLLM, Ollama)")
    parser.add_argument("--no-json-schema", action="store_true", help="answer 400 to a json_schema response format")
    asyncio.run(_serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
