"""Wall time of each flow's work divided by its critical path (its sequential LLM steps × a fixed latency).

moderated: one round, 6 steps (opening, statements ∥, counterpoint, rebuttals ∥, analogy, synthesis);
council: 2 parallel rounds and the verdict, 3 steps (each round one model call deep); meeting: proposals, the
moderator fixing the options, votes and the recommendation, 4 steps; open floor: four speeches each after a
parallel round of bids, and the synthesis,
9 steps."""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.wiring import build_app  # noqa: E402
from core.control.commands import StartDiscussion  # noqa: E402
from core.deliberation.flows import moderated  # noqa: E402
from core.deliberation.offline import OfflineLLM  # noqa: E402
from core.models import Phase, Usage  # noqa: E402
from core.ports import Completion, Prompt, Searched, T, TextSink  # noqa: E402
from tests.fakes.chat import RecordingChat  # noqa: E402

LATENCY_S = 0.2
REPEATS = 3
TARGET = 1.15


@dataclass
class Case:
    start: dict[str, Any]  # StartDiscussion fields
    steps: int  # sequential model calls on the critical path
    first: Phase  # the phase whose first call starts the clock
    last: Callable[[str], str]  # the key of the post that stops it, from the discussion id


CASES = {
    "moderated": Case({"rounds": 1}, len(moderated.ROUND_STEPS), Phase.OPENING,
                      lambda d: f"{d}:r1:s{len(moderated.ROUND_STEPS) - 1}:moderator"),
    "council": Case({"flow": "council", "rounds": 2}, 3, Phase.ADVISOR_OPENING, lambda d: f"{d}:final:r2"),
    # proposals ∥, ranked votes ∥, the recommendation
    "meeting": Case({"flow": "meeting", "rounds": 2}, 4, Phase.PROPOSAL, lambda d: f"{d}:final:r2"),
    # one epoch: 4 x (bids ∥, the winner's speech), then the synthesis
    "open": Case({"flow": "open", "rounds": 1}, 2 * 4 + 1, Phase.BID, lambda d: f"{d}:final:r1"),
}


class FixedLatencyLLM:
    """core.ports.LLM: the offline model's replies after exactly `latency` seconds; notes when calls start."""

    offline = True

    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.inner = OfflineLLM()
        self.started: list[tuple[float, Phase, int, str]] = []  # (monotonic, phase, round, persona)

    def _note(self, prompt: Prompt) -> None:
        p = prompt.purpose
        self.started.append((time.monotonic(), p.phase, p.round, p.persona))

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        self._note(prompt)
        await asyncio.sleep(self.latency)
        return await self.inner.complete(prompt, on_text)

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        self._note(prompt)
        await asyncio.sleep(self.latency)
        return await self.inner.structured(prompt, schema)

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return self.inner.worst_case_usd(prompt, search=search)

    async def search(self, prompt: Prompt) -> Searched:
        self._note(prompt)
        await asyncio.sleep(self.latency)
        return await self.inner.search(prompt)

    def first_start(self, phase: Phase, round_: int) -> float:
        return next(at for at, ph, r, _ in self.started if ph == phase and r == round_)


async def one_run(workdir: Path, latency: float, case: Case) -> tuple[float, float, int]:
    """(wall seconds of the measured stretch, seconds for the whole discussion, LLM calls)."""
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{workdir / 'council.db'}")  # type: ignore[call-arg]
    chat = RecordingChat()
    llm = FixedLatencyLLM(latency)
    app = await build_app(settings, {"console": chat}, llm=llm, owner="bench")
    try:
        began = time.monotonic()
        reply = await app.service.handle(
            StartDiscussion(topic="Should we adopt trunk-based development?", experts=4, user_id="u1",
                            user_name="Bench", **case.start)
        )
        await app.driver.idle()
        total = time.monotonic() - began
        d_id = reply.discussion_id
        start = llm.first_start(case.first, 1)
        last_key = case.last(d_id)
        end = chat.published_at(last_key)
        if end is None:
            raise SystemExit(f"{last_key} was never published; posts: {chat.keys()}")
        return end - start, total, len(llm.started)
    finally:
        await app.close()


async def main(targets: dict[str, float]) -> int:
    medians: dict[str, float] = {}
    for name, case in CASES.items():
        critical = case.steps * LATENCY_S
        ratios: list[float] = []
        print(f"{name}: critical path {case.steps} sequential LLM steps × {LATENCY_S:.3f} s")
        for i in range(REPEATS):
            with tempfile.TemporaryDirectory(prefix="council-bench-") as tmp:
                wall, total, calls = await one_run(Path(tmp), LATENCY_S, case)
            ratio = wall / critical
            ratios.append(ratio)
            print(f"  run {i + 1}: wall_s {wall:.3f}  critical_path_s {critical:.3f}  ratio {ratio:.3f}  "
                  f"(whole discussion {total:.3f} s, {calls} LLM calls)")
        medians[name] = statistics.median(ratios)
        print(f"{name}: median ratio {medians[name]:.3f}")
    return report([Figure(f"{name}_ratio", ratio, TARGET) for name, ratio in medians.items()], targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_target_flag(parser)
    sys.exit(asyncio.run(main(overrides(parser.parse_args().target))))
