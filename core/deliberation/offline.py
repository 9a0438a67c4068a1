"""The offline model: a deterministic stand-in used when no API key is set; every post says so."""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from core.deliberation import offline_flows
from core.deliberation.schemas import (
    AdvisorPerspective,
    Agreement,
    CouncilVerdict,
    Debate,
    DigestItem,
    DigestSummary,
    ExpertSpec,
    FinalSynthesis,
    Insight,
    Question,
    RosterSpec,
    RoundSynthesis,
    Speech,
    Stance,
)
from core.models import Phase, Usage
from core.ports import Completion, Prompt, Searched, T, TextSink

NAMES = [
    ("Amara Okafor", "Distributed systems architect", ["consensus protocols", "failure analysis"]),
    ("Kenji Watanabe", "Site reliability lead", ["incident response", "capacity planning"]),
    ("Lucía Fernández", "Product strategist", ["user research", "pricing"]),
    ("Priya Raghunathan", "Security engineer", ["threat modelling", "compliance"]),
    ("Jonas Becker", "Engineering economist", ["cost models", "team productivity"]),
    ("Fatima Al-Sayed", "Organisational psychologist", ["team dynamics", "change management"]),
    ("Tiago Costa", "Data platform engineer", ["pipelines", "data quality"]),
    ("Seo-yeon Park", "Developer-experience researcher", ["tooling", "onboarding"]),
]
STYLES = ["pragmatic", "systems-level", "empirical", "risk-averse", "first-principles", "user-centred"]
BIASES = [
    "Prioritises what can ship this quarter",
    "Distrusts anything without measurements",
    "Optimises for the long term over quick wins",
    "Sees people problems behind technical ones",
]


# A persona's own stance: often the proposal it backs, in the words the syntheses' proposals use, so its ballot is
# its own (nobody fills it in for it).
LABELS = ["for", "for", "against", "undecided"]
PROPOSALS = ["Run a four-week reversible trial", "Gather evidence first, decide next month"]


def _tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


class OfflineLLM:
    """Writes short, topic-aware, clearly artificial turns without calling any API."""

    offline = True

    def __init__(self, delay: float = 0.0, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        """`delay`: a pretend latency, waited out with `sleep` (tests give virtual time)."""
        self.delay, self.sleep = delay, sleep

    def _pick(self, prompt: Prompt, options: list[str]) -> str:
        digest = hashlib.sha256(f"{prompt.purpose.persona}|{prompt.purpose.round}|{prompt.purpose.phase}".encode())
        return options[digest.digest()[0] % len(options)]

    def _labels(self, prompt: Prompt) -> list[str]:
        """The stance labels a persona picks from: a new proposal when asked for one, else the ids on the table
        (the first one more often, so the council can agree), else for / against / undecided."""
        if "`new: <your proposal" in prompt.instruction:
            return [f"new: {o}" for o in offline_flows.OPTIONS]
        ids = offline_flows.ids_offered(prompt.instruction)
        return [ids[0], ids[0], ids[-1], ids[min(1, len(ids) - 1)], "undecided"] if ids else LABELS

    def _usage(self, prompt: Prompt, out: str) -> Usage:
        text = "".join(b.text for b in prompt.system + prompt.shared) + prompt.instruction
        return Usage(model="offline", input_tokens=_tokens(text), output_tokens=_tokens(out))

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        text = self._text(prompt)
        if "Stance: <label>" in prompt.instruction:  # asked to end with a stance line
            label = self._pick(prompt, self._labels(prompt))
            basis = self._pick(prompt, ["cost", "risk", "evidence"])
            text += f"\n\nStance: {label} — a small, reversible trial first, judged on {basis}"
        if on_text is not None and self.delay:  # with a pretend latency, pretend to write, too
            await self.sleep(self.delay / 2)
            words = text.split(" ")
            parts: list[str] = []
            chunks = max(1, min(8, len(words)))
            for i in range(1, chunks + 1):
                piece = " ".join(words[len(words) * (i - 1) // chunks: len(words) * i // chunks])
                parts.append(f" {piece}" if parts else piece)
                on_text(parts)
                await self.sleep(self.delay / 2 / chunks)
        elif self.delay:
            await self.sleep(self.delay)
        return Completion(text=text, usage=self._usage(prompt, text))

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        if self.delay:
            await self.sleep(self.delay)
        value = schema.model_validate(self._structure(prompt, schema))
        return value, self._usage(prompt, value.model_dump_json())

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return 0.0  # it charges nothing

    async def search(self, prompt: Prompt) -> Searched:
        """The offline model has no web search: it says so rather than inventing a check."""
        return Searched(usage=self._usage(prompt, ""), refused="the offline model cannot search the web")

    def _text(self, prompt: Prompt) -> str:
        p = prompt.purpose
        topic = p.topic
        other = self._pick(prompt, p.others) if p.others else "everyone"
        angle = self._pick(prompt, ["cost", "risk", "speed of learning", "reversibility", "who carries the load"])
        texts = {
            Phase.OPENING: (
                f"Round {p.round}: **{topic}**{'' if topic.rstrip().endswith(('.', '?', '!')) else '.'} "
                f"Let's look at it through three angles: {angle}, the "
                f"evidence we actually have, and what would make us change course. {other}, where "
                "would you start?"
            ),
            Phase.STATEMENT: (
                f"**My position:** on {topic}, {angle} should decide it. From my side, about 1 in 3 changes "
                f"like this is rolled back within its first month (unverified), so the deciding factor is what we "
                f"can measure. I propose a small, reversible trial "
                f"with an explicit exit criterion. {other}, what would you measure?"
            ),
            Phase.COUNTERPOINT: (
                f"Is that really true? Every statement so far assumes the trial is cheap to undo. "
                f"What if {angle} dominates only because we are looking at the easy cases? "
                "The overlooked risk: the people who carry the cost are not in this discussion."
            ),
            Phase.REBUTTAL: (
                f"Fair challenge. I concede the point about {angle}, but a trial with a written exit "
                f"criterion answers most of it. **My position now:** keep the trial, add the "
                "missing voices to the review."
            ),
            Phase.ANALOGY: (
                f"Aviation checklists are a useful parallel: after the Boeing Model 299 crash of 1935 they made "
                f"{angle} explicit instead of heroic. The framework: name the failure, make it cheap to report, "
                "review it on a fixed cadence."
            ),
            Phase.ANSWER: (
                f"Thanks{', ' + p.humans[-1] if p.humans else ''}: that changes the picture on {angle}. "
                + ("We will weigh it in the closing synthesis, against the proposals on the table." if p.last_round
                   else "We will take it into the next round and test it against the proposals on the table.")
            ),
            Phase.REOPENING: (
                f"Welcome back. We paused with the question of {topic} open; the proposals on the table "
                f"still stand. I suggest we start from {angle} and check what changed since."
            ),
            Phase.RESUME_SUMMARY: self._resume_summary(topic, p.others),
        }
        if p.phase in (Phase.DELIBERATION, Phase.STEELMAN):
            return (f"{other}, your proposal skips {angle}; from my domain that is the deciding factor. I hold my "
                    "position unless someone shows me the numbers.")
        return texts.get(p.phase, f"{p.persona} on {topic}: {angle} matters most here.")

    @staticmethod
    def _resume_summary(topic: str, people: list[str]) -> str:
        positions = "\n".join(f"- **{n}**: favours a reversible trial, with reservations." for n in people[:6])
        return (
            f"## Resume context: {topic}\n\n"
            f"The council is deliberating **{topic}** to reach a recommendation the team can act on. "
            "It weighs cost, risk, reversibility and who carries the load, and it keeps the humans "
            "in the thread informed and heard.\n\n"
            "**Key progress**\n- The experts agree a small, reversible trial is the safest first move.\n"
            "- The Contrarian showed the trial may look cheap only because easy cases were chosen.\n"
            "- The Cross-Domain Thinker proposed a checklist-style review cadence.\n\n"
            "**Current state**\nThe latest round closed with proposals on the table and a vote open.\n\n"
            f"**Positions**\n{positions}\n\n"
            "**Next time**\n- Agree on exit criteria for the trial.\n- Hear from the people who carry "
            "the cost.\n- Decide whether a second round is needed before recommending."
        )

    def _structure(self, prompt: Prompt, schema: type[BaseModel]) -> dict[str, Any]:
        p = prompt.purpose
        other_flows = offline_flows.structure(prompt, schema)
        if other_flows is not None:
            return other_flows
        if schema is RosterSpec:
            count = next((int(w) for w in prompt.instruction.split() if w.isdigit()), 4)
            return RosterSpec(
                experts=[
                    ExpertSpec(
                        name=name, title=title, expertise=skills, thinking_style=STYLES[i % len(STYLES)],
                        bias=BIASES[i % len(BIASES)], reply_tendency="Grounds claims in an example",
                    )
                    for i, (name, title, skills) in enumerate(NAMES[:count])
                ],
                # A roster asked for the topic's answers gives them (a meeting's owners propose their own).
                options=offline_flows.answers(p.topic) if "List the answers" in prompt.instruction else [],
            ).model_dump()
        if schema is Question:
            return Question(question=p.topic, options=offline_flows.answers(p.topic)).model_dump()
        people = [n for n in p.others if n]
        if schema is Speech:
            label = self._pick(prompt, self._labels(prompt))
            return Speech(text=self._text(prompt), label=label,
                          stance=f"{label.capitalize()}: a small, reversible trial first, judged on "
                                 f"{self._pick(prompt, ['cost', 'risk', 'evidence'])}").model_dump()
        if schema is CouncilVerdict:
            advisors = [n for n in people if n not in ("Referee",)]
            given = re.search(r"Computed verdict: (CONSENSUS|LEANING|SPLIT|NO VERDICT) (\S+)", prompt.instruction)
            kind: Any = given.group(1) if given else "NO VERDICT"
            chosen = given.group(2) if given else "none"
            return CouncilVerdict(
                verdict=f"On {p.topic}, the council favours a reversible first step over a full commitment.",
                perspectives=[AdvisorPerspective(advisor=n, position="Start with a bounded trial.",
                                                 evolution="Held from the opening, with exit criteria added.")
                              for n in advisors],
                agreements=["A reversible first step"], tensions=["How far to commit after the trial"],
                recommendation="Run a four-week trial with written exit criteria, then decide.",
                next_steps=["Write the exit criteria", "Pick the team for the trial"],
                reads=kind, recommends=chosen,  # the verdict it was given: an offline referee agrees with it
            ).model_dump()
        if schema is RoundSynthesis:
            given = re.search(r"Computed verdict: (CONSENSUS|LEANING|SPLIT|NO VERDICT) ", prompt.instruction)
            return RoundSynthesis(
                reads=given.group(1) if given else "NO VERDICT",  # type: ignore[arg-type]  # the verdict it was given
                summary=f"The council leans toward a reversible trial on {p.topic}, with open doubts on cost.",
                agreements=["Start small and reversible"],
                disagreements=["How much evidence is enough before scaling"],
                insights=["Checklists turn heroics into routine"],
                open_questions=["Who carries the cost of the trial?"],
                # Suggested from the discussion's subject, not stacked on the last suggestion round after round.
                next_topic_suggestions=[f"Exit criteria for {p.topic.removeprefix('Exit criteria for ')}",
                                        "Who carries the cost"],
                proposals=PROPOSALS,
            ).model_dump()
        if schema is FinalSynthesis:
            dissenter = "Contrarian" if "Contrarian" in people else people[-1] if people else "One voice"
            given = re.search(r"Computed verdict: (CONSENSUS|LEANING|SPLIT|NO VERDICT) ", prompt.instruction)
            reads: Any = given.group(1) if given else "NO VERDICT"  # the verdict it was given: it agrees
            return FinalSynthesis(
                reads=reads,
                executive_summary=f"After deliberating {p.topic}, the council recommends a reversible trial.",
                insights=[
                    Insight(title="Reversibility first", description="Cheap exits lower the stakes.",
                            confidence="medium", supporting_evidence=["What was said in this discussion"],
                            # Someone on this roster: an open floor has no Contrarian to name.
                            dissenting_views=[f"{dissenter}: easy cases bias the trial"])
                ],
                agreements=[Agreement(point="Start small", supporters=people[:3])],
                unresolved_debates=[
                    Debate(topic="Evidence threshold", positions=[
                        Stance(stance="Decide now", advocates=people[:1], arguments=["Delay costs"]),
                        Stance(stance="Wait a month", advocates=people[1:2], arguments=["Data first"]),
                    ])
                ],
                open_questions=["Who carries the cost?"],
                recommendations=[*PROPOSALS, "Review with affected teams"],
            ).model_dump()
        if schema is DigestSummary:
            # Every discussion it was given (each a quoted block, numbered from 1) gets the same three lines.
            numbers = range(1, len(prompt.shared) + 1)
            return DigestSummary(decided=[DigestItem(discussion=n, text="A reversible trial") for n in numbers],
                                 dissent=[DigestItem(discussion=n, text="Evidence threshold") for n in numbers],
                                 open_questions=[DigestItem(discussion=n, text="Who carries the cost?")
                                                 for n in numbers]).model_dump()
        raise ValueError(f"the offline model cannot fill {schema.__name__}")
