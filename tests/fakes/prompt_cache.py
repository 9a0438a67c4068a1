"""Prompt-cache simulation for the fake Anthropic API: prefix keys, breakpoints, 20-block lookback."""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LOOKBACK = 20  # block boundaries checked backwards from each breakpoint, as the real API does
TTL_S = 300.0  # the default cache lifetime: an entry unread for 5 minutes is gone


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class CachePlan:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    writes: list[str] = field(default_factory=list)  # prefix keys stored once the response completes
    reads: list[str] = field(default_factory=list)  # prefix keys read: a read refreshes an entry's lifetime


@dataclass
class _Block:
    material: str  # what the prefix key covers
    tokens: int
    breakpoint: bool


def blocks(body: dict[str, Any]) -> list[_Block]:
    """The request as the cache sees it: tools, then system, then messages, block by block."""
    out = [_block("tool", tool) for tool in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        out.append(_Block("system:" + system, tokens(system), False))
    else:
        out += [_block("system", block) for block in system or []]
    for message in body.get("messages") or []:
        role, content = message.get("role", "user"), message.get("content", "")
        if isinstance(content, str):
            out.append(_Block(f"{role}:{content}", tokens(content), False))
        else:
            out += [_block(role, block) for block in content]
    if body.get("cache_control") and out:  # automatic caching: a breakpoint on the last block
        out[-1].breakpoint = True
    return out


def breakpoints(body: dict[str, Any]) -> int:
    return sum(block.breakpoint for block in blocks(body)) - bool(body.get("cache_control"))


def _block(where: str, block: dict[str, Any]) -> _Block:
    plain = {k: v for k, v in block.items() if k != "cache_control"}
    text = plain["text"] if plain.get("type") == "text" else json.dumps(plain, sort_keys=True)
    material = f"{where}:" + json.dumps(plain, sort_keys=True)
    return _Block(material, tokens(str(text)), bool(block.get("cache_control")))


class PromptCache:
    """Prefixes cached at breakpoints; a hit is the longest cached prefix within the lookback window. An entry
    lapses `ttl_s` after it was last written or read, on `clock` (injectable: tests move time, never sleep)."""

    def __init__(self, min_tokens: int = 1024, *, clock: Callable[[], float] = time.monotonic,
                 ttl_s: float = TTL_S) -> None:
        self.min_tokens = min_tokens
        self.clock, self.ttl_s = clock, ttl_s
        self._entries: dict[str, float] = {}  # prefix key -> when it lapses

    def _live(self, key: str) -> bool:
        expires = self._entries.get(key)
        return expires is not None and expires > self.clock()

    def plan(self, model: str, body: dict[str, Any]) -> CachePlan:
        request = blocks(body)
        keys: list[str] = []
        ends: list[int] = []  # tokens up to and including each block
        digest = hashlib.sha256(model.encode())
        total = 0
        for block in request:
            digest.update(block.material.encode() + b"\x00")
            keys.append(digest.copy().hexdigest())
            total += block.tokens
            ends.append(total)
        marks = [i for i, block in enumerate(request) if block.breakpoint]
        read = 0
        reads: list[str] = []
        for mark in marks:
            for i in range(mark, max(-1, mark - LOOKBACK), -1):
                if self._live(keys[i]):
                    read = max(read, ends[i])
                    reads.append(keys[i])
                    break
        if not marks or ends[marks[-1]] < self.min_tokens:
            return CachePlan(total - read, 0, read, reads=reads)
        write = ends[marks[-1]] - read
        writes = [keys[i] for i in marks if ends[i] >= self.min_tokens]
        return CachePlan(total - read - write, write, read, writes, reads)

    def commit(self, plan: CachePlan) -> None:
        expires = self.clock() + self.ttl_s
        for key in (*plan.writes, *plan.reads):
            self._entries[key] = expires

    def clear(self) -> None:
        self._entries.clear()
