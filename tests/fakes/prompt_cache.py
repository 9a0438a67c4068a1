"""Prompt-cache simulation for the fake Anthropic API: prefix keys, breakpoints, 20-block lookback."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

LOOKBACK = 20  # block boundaries checked backwards from each breakpoint, as the real API does


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


@dataclass
class CachePlan:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    writes: list[str] = field(default_factory=list)  # prefix keys stored once the response completes


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
    """Prefixes cached at breakpoints; a hit is the longest cached prefix within the lookback window."""

    def __init__(self, min_tokens: int = 1024) -> None:
        self.min_tokens = min_tokens
        self._entries: set[str] = set()

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
        for mark in marks:
            for i in range(mark, max(-1, mark - LOOKBACK), -1):
                if keys[i] in self._entries:
                    read = max(read, ends[i])
                    break
        if not marks or ends[marks[-1]] < self.min_tokens:
            return CachePlan(total - read, 0, read)
        write = ends[marks[-1]] - read
        writes = [keys[i] for i in marks if ends[i] >= self.min_tokens]
        return CachePlan(total - read - write, write, read, writes)

    def commit(self, plan: CachePlan) -> None:
        self._entries.update(plan.writes)

    def clear(self) -> None:
        self._entries.clear()
