"""Billed-equivalent input tokens ÷ naive full resend for a 3-round council through the real SDK and a fake API."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.verdict import Figure, add_target_flag, overrides, report  # noqa: E402
from bot.settings import Settings  # noqa: E402
from bot.wiring import build_app  # noqa: E402
from core.control.commands import StartDiscussion  # noqa: E402
from core.deliberation.schemas import (  # noqa: E402
    Agreement,
    Debate,
    ExpertSpec,
    FinalSynthesis,
    Insight,
    Question,
    RosterSpec,
    RoundSynthesis,
    Stance,
)
from core.llm import AnthropicLLM, LLMConfig  # noqa: E402
from core.models import Usage  # noqa: E402
from core.ports import Completion, Prompt, Searched, T, TextSink  # noqa: E402
from tests.fakes.anthropic_server import FakeAnthropic  # noqa: E402
from tests.fakes.chat import RecordingChat  # noqa: E402

TARGET = 0.30
REPEATS = 3
ROUNDS, EXPERTS = 3, 4
TOPIC = "Should our 40-person engineering org move from long-lived release branches to trunk-based development?"
ANSWERS = ["Adopt trunk-based development", "Keep release branches"]  # the topic's two answers, as a model frames them
WRITE, READ = 1.25, 0.1  # cache write and read prices relative to uncached input

EXPERT_POOL = [
    ("Amara Okafor", "Release engineering lead", ["CI/CD pipelines", "build systems"]),
    ("Kenji Watanabe", "Site reliability manager", ["incident response", "progressive delivery"]),
    ("Lucía Fernández", "Engineering productivity researcher", ["DORA metrics", "developer surveys"]),
    ("Priya Raghunathan", "Security and compliance architect", ["SOX change control", "audit trails"]),
    ("Jonas Becker", "Engineering economist", ["cost of delay", "team topology"]),
]
SENTENCES = [
    "The deciding factor is how long a change waits between commit and production, not how many branches exist.",
    "In our last two releases the merge week alone consumed roughly nine engineer-days and produced four regressions.",
    "Feature flags move the risk from merge time to configuration time, and configuration needs its own review.",
    "I would measure lead time for changes and change failure rate for six weeks before and after any switch.",
    "A trunk without a fast, trustworthy test suite is just a shared branch that everyone is afraid of.",
    "The audit requirement is traceable approval, and a protected main branch with required reviews satisfies it.",
    "Teams that release weekly already behave as if they were on trunk; the branches are ceremony for them.",
    "The overlooked cost is flag debt: every toggle left in place doubles the states somebody has to test.",
    "Short-lived branches of under a day give most of the benefit while keeping the review tooling unchanged.",
    "If the main build stays red for two hours, trunk-based development fails socially before it fails technically.",
    "I concede that the payments team is a special case because of its regulatory freeze windows.",
    "A pilot with two volunteer teams and an explicit rollback criterion is cheap to undo.",
    "Aviation learned that checklists work when they are short and owned by the people who use them.",
    "The queueing analogy holds: big batches raise both the waiting time and the variance of every release.",
    "What would change my mind is evidence that our flaky-test rate is above five percent on the main pipeline.",
    "We should separate deployment from release so that product managers control exposure, not engineers.",
    "My position now is firmer: start with the services that already have contract tests and on-call ownership.",
    "The migration cost is front-loaded: build caching, merge queues and flag tooling all land in the first quarter.",
    "Nobody in this thread has asked the QA contractors, who carry most of the regression load today.",
    "Biology offers a parallel: small frequent mutations survive selection better than rare large ones.",
]


def _words(instruction: str) -> int:
    """What a model writes when told 'Stay under N words': close to N, kept in the 150-250 words range."""
    m = re.search(r"(?:under|at most) (\d+) words", instruction)
    budget = int(m.group(1)) if m else 200
    return max(150, min(250, int(budget * 0.9)))


def _prose(seed: str, words: int) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    out: list[str] = []
    i = 0
    while sum(len(s.split()) for s in out) < words:
        out.append(SENTENCES[(digest[i % len(digest)] + i) % len(SENTENCES)])
        i += 1
    text = " ".join(out)
    return "\n\n".join(text[j : j + 400] for j in range(0, len(text), 400))


def _names(instruction: str) -> list[str]:
    m = re.search(r"supports most: (.+)\.\s*$", instruction, re.S)
    return [n.strip() for n in m.group(1).split(",")] if m else []


PROSE_WORDS: list[int] = []  # words of each prose reply, to show the transcript grows like a real one


def reply(body: dict[str, Any]) -> str:
    """Realistic replies: 150-250 words of prose for turns, fully filled-in JSON for structured outputs."""
    content = body["messages"][-1]["content"]
    instruction = content if isinstance(content, str) else content[-1]["text"]
    seed = f"{len(json.dumps(body))}|{instruction}"
    fmt = (body.get("output_config") or {}).get("format") or {}
    props = (fmt.get("schema") or {}).get("properties") or {}
    if "experts" in props:
        m = re.search(r"Define (\d+)", instruction)
        count = int(m.group(1)) if m else EXPERTS
        return RosterSpec(experts=[
            ExpertSpec(name=n, title=t, expertise=e, thinking_style="empirical", bias="Trusts measurements",
                       reply_tendency="Grounds claims in an example") for n, t, e in EXPERT_POOL[:count]
        ], options=ANSWERS).model_dump_json()  # a roster gives the topic's answers: the question's first options
    if "question" in props and "options" in props:  # a question turn (a council's, or a new topic's)
        return Question(question=TOPIC, options=ANSWERS).model_dump_json()
    if "executive_summary" in props:
        people = _names(instruction) or [n for n, _, _ in EXPERT_POOL[:EXPERTS]]
        return FinalSynthesis(
            executive_summary=_prose(seed + "x", 80),
            insights=[Insight(title=f"Insight {i}", description=_prose(seed + str(i), 40), confidence="medium",
                              supporting_evidence=[SENTENCES[i]], dissenting_views=[SENTENCES[i + 5]])
                      for i in range(3)],
            agreements=[Agreement(point=SENTENCES[i + 2], supporters=people[:3]) for i in range(2)],
            unresolved_debates=[Debate(topic="Evidence threshold", positions=[
                Stance(stance="Pilot now", advocates=people[:1], arguments=[SENTENCES[11]]),
                Stance(stance="Measure first", advocates=people[1:2], arguments=[SENTENCES[3]]),
            ])],
            open_questions=[SENTENCES[9], SENTENCES[14]],
            recommendations=[SENTENCES[11], SENTENCES[3], SENTENCES[15]],
        ).model_dump_json()
    if "proposals" in props:
        people = _names(instruction)
        return RoundSynthesis(
            summary="The council leans toward a trunk-based pilot, split on how much evidence must come first.",
            agreements=[SENTENCES[4], SENTENCES[15]],
            disagreements=[SENTENCES[8], SENTENCES[5]],
            insights=[SENTENCES[7], SENTENCES[13]],
            open_questions=[SENTENCES[9], SENTENCES[18]],
            next_topic_suggestions=["Exit criteria for a trunk-based pilot", "Flag debt and who pays it"],
            proposals=[SENTENCES[11], SENTENCES[3], SENTENCES[16]],
        ).model_dump_json()
    text = _prose(seed, _words(instruction))
    PROSE_WORDS.append(len(text.split()))
    return text


class Recorder:
    """core.ports.LLM around AnthropicLLM that keeps each call's usage with its phase and round."""

    offline = False

    def __init__(self, inner: AnthropicLLM) -> None:
        self.inner = inner
        self.calls: list[tuple[str, int, Usage]] = []

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        done = await self.inner.complete(prompt, on_text)
        self.calls.append((prompt.purpose.phase.value, prompt.purpose.round, done.usage))
        return done

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        value, usage = await self.inner.structured(prompt, schema)
        self.calls.append((prompt.purpose.phase.value, prompt.purpose.round, usage))
        return value, usage

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return self.inner.worst_case_usd(prompt, search=search)

    async def search(self, prompt: Prompt) -> Searched:
        return await self.inner.search(prompt)


def billed(u: dict[str, int]) -> float:
    return u["input"] + WRITE * u["write"] + READ * u["read"]


def naive(u: dict[str, int]) -> int:
    return u["input"] + u["write"] + u["read"]


async def one_run(workdir: Path, verbose: bool) -> float:
    PROSE_WORDS.clear()
    async with FakeAnthropic(latency_s=0, min_cacheable_tokens=1024, reply=reply) as fake:
        llm = Recorder(AnthropicLLM(LLMConfig(api_key="sk-ant-bench", base_url=fake.base_url)))
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{workdir / 'council.db'}",  # type: ignore[call-arg]
                            council_budget_usd=1000.0)
        app = await build_app(settings, {"console": RecordingChat()}, llm=llm, owner="bench")
        try:
            r = await app.service.handle(StartDiscussion(topic=TOPIC, rounds=ROUNDS, experts=EXPERTS, user_id="u1"))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(r.discussion_id)
        finally:
            await app.close()
            await llm.inner.aclose()
        stats = fake.stats()
    if d is None or d.status.value != "done":
        raise SystemExit(f"the discussion did not finish: {d and d.status} {d and d.blocked_reason}")
    total = {"input": stats["input_tokens"], "write": stats["cache_write_tokens"], "read": stats["cache_read_tokens"]}
    mine = {"input": 0, "write": 0, "read": 0}
    groups: dict[str, dict[str, int]] = defaultdict(lambda: {"input": 0, "write": 0, "read": 0, "calls": 0})
    for phase, round_, u in llm.calls:
        label = f"round {round_}" if phase not in ("roster", "final_synthesis") else phase
        for g in (groups[label], mine):
            g["input"] += u.input_tokens
            g["write"] += u.cache_write_tokens
            g["read"] += u.cache_read_tokens
        groups[label]["calls"] += 1
    if mine != total:
        raise SystemExit(f"the client's usage {mine} disagrees with the fake's {total}")
    if verbose:
        for label, g in groups.items():
            print(f"  {label:<16} calls {g['calls']:>2}  uncached {g['input']:>6}  cache_write {g['write']:>6}  "
                  f"cache_read {g['read']:>7}  billed/naive {billed(g) / naive(g):.3f}")
        print(f"  requests {stats['request_count']}, output tokens {stats['output_tokens']}, prose replies "
              f"{len(PROSE_WORDS)} of {min(PROSE_WORDS)}-{max(PROSE_WORDS)} words "
              f"(mean {sum(PROSE_WORDS) / len(PROSE_WORDS):.0f})")
    ratio = billed(total) / naive(total)
    print(f"run: uncached {total['input']}  cache_write {total['write']}  cache_read {total['read']}  "
          f"billed_equiv {billed(total):.0f}  naive_resend {naive(total)}  ratio {ratio:.3f}")
    return ratio


async def main(targets: dict[str, float]) -> int:
    print(f"{EXPERTS} experts + moderator, contrarian, cross-domain, historian; {ROUNDS} rounds; min cacheable 1024")
    ratios = []
    for i in range(REPEATS):
        with tempfile.TemporaryDirectory(prefix="council-bench-") as tmp:
            ratios.append(await one_run(Path(tmp), verbose=i == 0))
    worst = max(ratios)
    print(f"worst of {REPEATS}: ratio {worst:.3f}x")
    return report([Figure("ratio", worst, TARGET)], targets)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    add_target_flag(parser)
    sys.exit(asyncio.run(main(overrides(parser.parse_args().target))))
