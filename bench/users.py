"""Discussions that differ as people's do, drawn from a seeded generator: each start's topic and roster size, and a
model whose answers differ from request to request (stances on different options, proposals, rosters and
syntheses of different lengths), so that nothing the app caches by content (a chart, a prompt's blocks) serves
every discussion after the first. bench/load.py starts its discussions and answers its model with these."""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from tests.fakes.json_schema_instance import _Generator

SUBJECTS = ["trunk-based development", "a four-day work week", "moving billing to PostgreSQL", "a public roadmap",
            "on-call for every engineer", "rewriting the mobile app in Flutter", "a monorepo", "paid parental leave "
            "beyond the law", "dropping the free tier", "an office in Lisbon", "feature flags for every release",
            "a design system team", "open-sourcing the SDK", "usage-based pricing", "quarterly hackathons",
            "a bug bounty", "GraphQL for the public API", "self-hosted CI runners", "a customer advisory board",
            "Kubernetes for the batch jobs"]
FORMS = ["Should team {team} adopt {subject}?", "Is {subject} worth it for team {team} this year?",
         "Team {team}: {subject}, or keep what we have?", "What should team {team} do about {subject}?"]
WORDS = ("cost risk trial teams customers release latency budget hiring review migration support quality "
         "security owners rollout feedback metrics deadline scope debt pilot contract vendor users").split()
REASONS = ["it depends on what the trial shows", "the cost is clear and the gain is not", "the risk is worth it",
           "the teams asked for it", "the numbers point that way", "nobody owns the rollout yet"]
LONG_FIELDS = {"text", "summary", "executive_summary", "description", "verdict", "position", "evolution"}


def starts(n: int, seed: int) -> list[tuple[str, int]]:
    """Each discussion's topic and number of experts, drawn from `seed`."""
    rng = random.Random(seed)
    return [(rng.choice(FORMS).format(team=f"{i:04d}", subject=rng.choice(SUBJECTS)), rng.randint(3, 6))
            for i in range(n)]


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def _prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while sum(len(s) + 1 for s in out) < chars:
        out.append(_sentence(rng, rng.randint(6, 18)))
    return " ".join(out)


def _asked(body: dict[str, Any]) -> str:
    """The request's words: its system blocks and its messages' text."""
    parts = [b.get("text", "") for b in body.get("system") or [] if isinstance(b, dict)]
    for m in body["messages"]:
        content = m.get("content")
        parts += [content] if isinstance(content, str) else [b.get("text", "") for b in content if isinstance(b, dict)]
    return "\n".join(parts)


def _label(rng: random.Random, asked: str) -> str:
    """A stance as a model chooses it: one of the options listed, now and then a new one, or undecided."""
    listed = sorted(set(re.findall(r"\bO\d+\b", asked)))
    roll = rng.random()
    if listed and roll < 0.8:
        return rng.choice(listed)
    if roll < 0.9:
        return "new: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4)))
    return "undecided"


class _Varied(_Generator):
    """A JSON instance of the schema with its choices, lengths and words drawn from `rng`."""

    def __init__(self, root: dict[str, Any], rng: random.Random, asked: str) -> None:
        super().__init__(root, items=3)
        self.rng, self.asked = rng, asked

    def value(self, schema: dict[str, Any], hint: str) -> Any:
        schema = self._resolve(schema)
        if schema.get("enum") and "const" not in schema:
            return self.rng.choice(schema["enum"])
        if schema.get("type") == "array":
            self.items = self.rng.randint(2, 5)
        return super().value(schema, hint)

    def _string(self, schema: dict[str, Any], bounds: dict[str, float], hint: str) -> str:
        if schema.get("format") or "maxLength" in bounds or "minLength" in bounds:
            return super()._string(schema, bounds, hint)
        if hint == "label":
            return _label(self.rng, self.asked)
        if hint in LONG_FIELDS:
            return _prose(self.rng, self.rng.randint(200, 700))
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(2, 8))).capitalize()


class Model:
    """The fake model's answers (FakeAnthropic's `reply`): from `seed` and the request, so one request is always
    answered alike, and two requests differently."""

    def __init__(self, seed: int, chars: int) -> None:
        self.seed, self.chars = seed, chars

    def __call__(self, body: dict[str, Any]) -> str:
        asked = _asked(body)
        digest = hashlib.blake2b(f"{self.seed}\n{asked}".encode(), digest_size=8).digest()
        rng = random.Random(int.from_bytes(digest, "big"))
        fmt = (body.get("output_config") or {}).get("format") or {}
        if fmt.get("type") == "json_schema":
            return json.dumps(_Varied(fmt["schema"], rng, asked).value(fmt["schema"], "value"))
        text = _prose(rng, int(self.chars * rng.uniform(0.7, 1.3)))
        if "Stance: <label>" in asked:  # a model ends with the stance line it was asked for
            text += f"\n\nStance: {_label(rng, asked)} — {rng.choice(REASONS)}"
        return text


def buttons(blocks: Any) -> list[tuple[str, str]]:
    """A poll's vote buttons (action id, value) in a message's blocks as Slack holds them."""
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    return [(e["action_id"], e.get("value", "")) for b in blocks or [] if b.get("type") == "actions"
            for e in b.get("elements", []) if e.get("type") == "button" and e["action_id"].startswith("vote:")]


VOTERS = 3  # the most people who vote on one poll: the same few people of the channel vote on each of its polls


def starter(channel: str) -> str:
    """The person who starts the channel's discussion."""
    return f"U{channel}"


def people(channel: str) -> list[str]:
    """Everyone of the load in a channel: its starter and its voters (Slack knows them, and they are in it)."""
    return [starter(channel), *(f"U{channel}V{k}" for k in range(VOTERS))]


def ballots(rng: random.Random, channel: str, team: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    """The block_actions payloads of the one to three people who vote on a poll, each for an option drawn."""
    choices = buttons(message.get("blocks"))
    out: list[dict[str, Any]] = []
    for k in range(rng.randint(1, VOTERS) if choices else 0):
        action_id, value = rng.choice(choices)
        user = people(channel)[1 + k]
        out.append({"type": "block_actions", "api_app_id": "A0001", "token": "load-not-a-token",
                    "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
                    "team": {"id": team, "domain": "load"}, "channel": {"id": channel, "name": channel.lower()},
                    "container": {"type": "message", "message_ts": message["ts"], "channel_id": channel,
                                  "is_ephemeral": False, "thread_ts": message.get("thread_ts")},
                    "message": message, "state": {"values": {}}, "enterprise": None,
                    "is_enterprise_install": False,
                    "actions": [{"action_id": action_id, "block_id": "actions:0", "value": value, "type": "button",
                                 "text": {"type": "plain_text", "text": action_id}, "action_ts": "1.2"}]})
    return out
