"""A 30-round council through the real SDK and the loopback Messages API fake (realistic replies, prompt caching):
prints, per round, the largest prompt and the billed-equivalent input, then the two ratios round 30 ÷ round 3
(targets ≤ 1.3 each), and exits 1 when either misses."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from token_cost import EXPERTS, TOPIC, Recorder, billed, reply  # noqa: E402

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.wiring import build_app  # noqa: E402
from core.control.commands import StartDiscussion  # noqa: E402
from core.llm import AnthropicLLM, LLMConfig  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tests.fakes.chat import RecordingChat  # noqa: E402

TARGET = 1.3


async def run(rounds: int, context_rounds: int, workdir: Path) -> dict[int, tuple[int, float, int]]:
    """Per round: (largest prompt in input tokens, billed-equivalent input, calls)."""
    async with FakeAnthropic(latency_s=0, min_cacheable_tokens=1024, reply=reply) as fake:
        llm = Recorder(AnthropicLLM(LLMConfig(api_key="sk-ant-bench", base_url=fake.base_url)))
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{workdir / 'council.db'}",  # type: ignore[call-arg]
                            council_budget_usd=100000.0, council_context_rounds=context_rounds)
        app = await build_app(settings, {"console": RecordingChat()}, llm=llm, owner="bench")
        try:
            r = await app.service.handle(StartDiscussion(topic=TOPIC, rounds=rounds, experts=EXPERTS, user_id="u1"))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(r.discussion_id)
        finally:
            await app.close()
            await llm.inner.aclose()
    if d is None or d.status.value != "done":
        raise SystemExit(f"the discussion did not finish: {d and d.status} {d and d.blocked_reason}")
    per: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for phase, round_, u in llm.calls:
        if phase in ("roster", "final_synthesis"):
            continue
        size = u.input_tokens + u.cache_write_tokens + u.cache_read_tokens
        per[round_].append((size, billed({"input": u.input_tokens, "write": u.cache_write_tokens,
                                          "read": u.cache_read_tokens})))
    return {r: (max(s for s, _ in calls), sum(b for _, b in calls), len(calls)) for r, calls in sorted(per.items())}


async def main(rounds: int, context_rounds: int, targets: dict[str, float]) -> int:
    with tempfile.TemporaryDirectory(prefix="council-long-") as tmp:
        per = await run(rounds, context_rounds, Path(tmp))
    print(f"{EXPERTS} experts + 4 fixed roles; {rounds} rounds; COUNCIL_CONTEXT_ROUNDS={context_rounds}")
    for r, (largest, cost, calls) in per.items():
        print(f"  round {r:>2}: calls {calls:>2}  largest prompt {largest:>6} tokens  billed-equivalent input "
              f"{cost:>8.0f}")
    first, last = per[min(3, rounds)], per[rounds]
    size_ratio, cost_ratio = last[0] / first[0], last[1] / first[1]
    print(f"largest prompt, round {rounds} / round 3: {size_ratio:.2f}")
    print(f"billed-equivalent input, round {rounds} / round 3: {cost_ratio:.2f}")
    return report([Figure("prompt_ratio", size_ratio, TARGET), Figure("input_ratio", cost_ratio, TARGET)], targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--context-rounds", type=int, default=2)
    add_target_flag(parser)
    args = parser.parse_args()
    raise SystemExit(asyncio.run(main(args.rounds, args.context_rounds, overrides(args.target))))
