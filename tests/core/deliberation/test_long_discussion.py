"""A discussion that runs for 30 rounds: what each model call reads stays bounded, and what it drops is only
what a synthesis already carries."""

from __future__ import annotations

from collections import defaultdict

import pytest

from bot.wiring import App
from core.deliberation import context
from core.models import Phase, Status
from core.ports import Prompt
from tests.core.conftest import discussion, settle, start
from tests.fakes.llm import ScriptedLLM

ROUNDS = 30


def size(p: Prompt) -> int:
    return sum(len(b.text) for b in (*p.system, *p.shared)) + len(p.instruction)


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_thirty_rounds_keep_every_prompt_within_bounds(app: App, llm: ScriptedLLM) -> None:
    reply = await app.service.handle(start(rounds=ROUNDS, experts=2))  # fewer turns per round: a faster test
    await settle(app)
    assert (await discussion(app, reply.discussion_id)).status == Status.DONE
    largest: dict[int, int] = defaultdict(int)
    for p in llm.prompts:
        if p.purpose.phase not in (Phase.ROSTER, Phase.FINAL_SYNTHESIS):
            largest[p.purpose.round] = max(largest[p.purpose.round], size(p))
    assert sorted(largest) == list(range(1, ROUNDS + 1))
    assert max(largest.values()) <= 1.3 * largest[3], "round 30 reads no more than round 3, give or take"
    final = next(p for p in llm.prompts if p.purpose.phase == Phase.FINAL_SYNTHESIS)
    shown = "\n".join(b.text for b in final.shared)
    # It reads further back, still a fixed number of rounds: the twelve syntheses before its two verbatim rounds.
    first_kept = ROUNDS - 2 - context.FINAL_SYNTHESES + 1
    assert f"[Round {first_kept} · Round synthesis]" in shown and f"[Round {first_kept - 1} ·" not in shown

    late = next(p for p in llm.prompts if p.purpose.round == ROUNDS and p.purpose.phase == Phase.OPENING)
    shared = "\n".join(b.text for b in late.shared)
    assert "[Round 1 ·" not in shared and f"[Round {ROUNDS - 1} ·" in shared, "old rounds condensed, recent verbatim"
    assert f"[Round {ROUNDS - 2} · Round synthesis]" in shared, "the latest condensed round by its synthesis"

