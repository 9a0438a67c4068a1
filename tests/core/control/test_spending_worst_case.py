"""The daily budget under parallel heavy discussions, on the real SDK against the fake Messages API: each turn
reserves what all its attempts may cost before it runs (a model that thinks past its room is asked again with
twice and four times the room), so the spend stays within the budget plus one turn's worst case."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.llm import MAX_OUTPUT_TOKENS, LLMConfig
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock

BUDGET = 1.00


async def test_eight_parallel_heavy_councils_stay_within_the_daily_budget_plus_one_turn(tmp_path: Path) -> None:
    # Thinking longer than a turn's first room: the first attempt is cut at max_tokens and paid for, the second
    # (twice the room) answers. A turn costs about 2.5 times its first attempt's worst case.
    async with FakeAnthropic(thinking_tokens=4000, reply_chars=2400) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url,
                            council_workspace_budget_usd_per_day=BUDGET, council_budget_usd=100.0)
        clock = FakeClock(datetime(2026, 3, 2, 9, tzinfo=UTC))
        app = await build_app(settings, {"console": RecordingChat()}, clock=clock)
        try:
            await asyncio.gather(*(app.service.handle(c.StartDiscussion(
                topic=f"Should team {n} move to a four-day week?", flow="council", tier="heavy", rounds=1,
                platform="console", workspace="T1", channel=f"C{n}", in_channel=f"C{n}", user_id=f"U{n}"))
                for n in range(8)))
            await app.driver.idle()
            async with app.store.tx() as tx:
                spent = sum(d.cost_usd for d in await tx.discussions())
        finally:
            await app.close()
    # One turn's worst case, from what was sent: each of its three attempts (the room doubling each time, never
    # past the most a model writes) with every token of its max_tokens at Opus's output price, and every
    # character of the request (never fewer than its tokens) at Opus's input price written to the cache.
    opus, attempts = LLMConfig(api_key="x").prices["claude-opus-5-5"], LLMConfig(api_key="x").room_attempts
    first = [body for body in fake.requests if body["max_tokens"] < 2 * min(b["max_tokens"] for b in fake.requests)]
    worst = max(sum(min(MAX_OUTPUT_TOKENS, body["max_tokens"] * 2 ** i) * opus.output_per_mtok
                    + len(json.dumps(body)) * opus.input_per_mtok * opus.cache_write_mult for i in range(attempts))
                for body in first) / 1_000_000
    retried = [body for body in fake.requests if body not in first]
    assert retried and fake.completed_count >= 8, "the turns ran, and were asked again with more room"
    assert spent <= BUDGET + worst, f"spent ${spent:.2f} of ${BUDGET:.2f} (one turn at worst ${worst:.2f})"
