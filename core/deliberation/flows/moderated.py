"""The moderated round: opening, statements, contrarian, rebuttals, cross-domain, synthesis (pure)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel

from core.deliberation import question
from core.deliberation.flows.base import QuestionFrom, State, Step, StepSpec, Tier, Transition, TurnPlan
from core.deliberation.flows.common import (
    HUMANS_RULE,
    SHARED_LABELS,
    STANCE_RULE,
    shared_task,
    shrink,
    verdict_note,
)
from core.deliberation.quoting import named, quote
from core.deliberation.roster import FIXED
from core.deliberation.schemas import FinalSynthesis, Question, RosterSpec, RoundSynthesis
from core.models import Discussion, Persona, Phase, Role, Status

Selector = Callable[[list[Persona]], list[Persona]]


def _role(role: Role) -> Selector:
    return lambda personas: [p for p in personas if p.role == role]


# One entry per step; the experts' steps run their turns in parallel.
ROUND_STEPS: list[tuple[Phase, Selector]] = [
    (Phase.OPENING, _role(Role.MODERATOR)),
    (Phase.STATEMENT, _role(Role.EXPERT)),
    (Phase.COUNTERPOINT, _role(Role.CONTRARIAN)),
    (Phase.REBUTTAL, _role(Role.EXPERT)),
    (Phase.ANALOGY, _role(Role.CROSS_DOMAIN)),
    (Phase.ROUND_SYNTHESIS, _role(Role.MODERATOR)),
]

# Which persona writes the turns outside the round.
ROLE_FOR: dict[Phase, Role] = {
    Phase.ROSTER: Role.MODERATOR,
    Phase.FINAL_SYNTHESIS: Role.HISTORIAN,
    Phase.RESUME_SUMMARY: Role.HISTORIAN,
    Phase.REOPENING: Role.MODERATOR,
    Phase.ANSWER: Role.MODERATOR,
}

RULES = """\
You are taking part in a moderated deliberation run by Council, a bot that hosts structured \
discussions among AI personas inside a team's chat. The people who started it read every post in \
the thread and may reply; their replies reach you in the transcript, marked as human messages.

How the discussion works
- The Moderator opens each round: states the question, proposes two or three angles and asks \
the experts pointed questions.
- The topic experts each give an initial statement from their own expertise, in parallel and \
without seeing each other's statements first.
- The Contrarian then questions the assumptions behind those statements, names overlooked risks \
and exceptions, and asks whether each claim is really true.
- The experts answer the Contrarian: they counter, concede, or refine. A changed position must be \
said plainly ("I now think...").
- The Cross-Domain Thinker brings analogies from other fields (biology, economics, physics, \
law, logistics, history of technology...) and turns them into a usable framework.
- The Moderator closes the round with a synthesis: agreements, disagreements, insights, open \
questions, proposals the group could vote on, and suggested next topics.
- The Historian keeps the record. When the team asks for a final synthesis, the Historian writes \
it; when the team pauses, the Historian writes the context needed to resume later.

Rules for every persona
1. Speak only as yourself. Never write lines for another persona or for a human.
2. Be concrete: name mechanisms, examples, costs, failure modes (figures only where the material \
gives them). Prefer one sharp \
argument to five vague ones.
3. Engage with what was said. Refer to others by name when you build on them or disagree.
4. Disagree openly when you disagree. Consensus for its own sake is worthless; so is contrarianism \
that ignores good answers.
5. Respect the word budget you are given. No preamble, no sign-off, no restating the question.
6. Write for a chat thread: short paragraphs, a few bullets when they help, **bold** for the one \
line a reader should not miss. No headings larger than bold text, no tables.
7. If you are unsure, say how unsure and what would change your mind.

""" + STANCE_RULE + "\n" + HUMANS_RULE

BUDGETS = {
    Phase.OPENING: 160,
    Phase.STATEMENT: 220,
    Phase.COUNTERPOINT: 240,
    Phase.REBUTTAL: 160,
    Phase.ANALOGY: 200,
}

TASKS = {
    Phase.STATEMENT: (
        "Give your initial statement from your own expertise: your position in one or two "
        "sentences, the reasoning behind it, one or two concrete proposals, and the question you "
        "most want the others to answer."
    ),
    Phase.COUNTERPOINT: (
        "Challenge this round's statements. For each expert, question the assumption their "
        "position rests on, name a risk or exception they overlooked, and ask whether it is "
        "really true. End with the one question the group must not dodge."
    ),
    Phase.REBUTTAL: (
        "Answer the Contrarian: counter with evidence, or concede and refine. Make your current "
        "position unmistakable and say plainly if it changed and why."
    ),
    Phase.ANALOGY: (
        "Bring one or two analogies from other fields where a similar problem was solved, show "
        "what carried over and what did not, and propose a framework the group can use."
    ),
}

NO_CONTRARIAN = (
    "Nobody challenged the statements this round (the Contrarian's turn was skipped). Test your own position "
    "against the other experts' statements: where they are right, where you disagree, and whether your position "
    "changed. Make it unmistakable."
)


def contrarian_spoke(state: State, round_: int) -> bool:
    return any(t.text for t in state.done_turns(Phase.COUNTERPOINT, round_))


SCHEMAS: dict[Phase, type[BaseModel]] = {
    Phase.ROSTER: RosterSpec,
    Phase.QUESTION: Question,
    Phase.ROUND_SYNTHESIS: RoundSynthesis,
    Phase.FINAL_SYNTHESIS: FinalSynthesis,
}
STANCE_PHASES = {Phase.STATEMENT, Phase.COUNTERPOINT, Phase.REBUTTAL, Phase.ANALOGY}
TIERS: dict[Phase, Tier] = {Phase.ROSTER: "light", Phase.QUESTION: "light", Phase.FINAL_SYNTHESIS: "heavy"}


def round_steps(personas: list[Persona]) -> list[tuple[int, Phase, list[Persona]]]:
    return [(i, phase, select(personas)) for i, (phase, select) in enumerate(ROUND_STEPS)]


def word_budget(phase: Phase, round_: int) -> int:
    return shrink(BUDGETS.get(phase, 200), round_)


class Moderated:
    name = "moderated"
    summary = ("a moderator, topic experts, a contrarian and a cross-domain thinker debate in rounds, "
               "each closed by a synthesis; you steer after each round")
    outline = "moderated rounds (opening → statements → contrarian → rebuttals → cross-domain → synthesis)"
    rules = RULES
    verbatim_rounds: int | None = None
    transcript_chars: int | None = None
    keeps_stances = False  # everyone speaks every round: a missing stance is undecided
    question_from: QuestionFrom = "roster"
    nudges = 1  # a failed turn is tried once more (with a note) before the step blocks or skips it
    essential = frozenset({Phase.ROSTER, Phase.OPENING, Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS,
                           Phase.RESUME_SUMMARY})
    labels = SHARED_LABELS | {
        Phase.OPENING: "Opening",
        Phase.STATEMENT: "Initial statement",
        Phase.COUNTERPOINT: "Counterpoint",
        Phase.REBUTTAL: "Rebuttal",
        Phase.ANALOGY: "Cross-domain perspective",
        Phase.ROUND_SYNTHESIS: "Round synthesis",
    }

    def seats(self, d: Discussion) -> list[Persona]:
        return list(FIXED)

    def needs_roster(self, state: State) -> bool:
        return not state.by_role(Role.EXPERT)

    def writer(self, state: State, phase: Phase) -> Persona | None:
        people = state.by_role(ROLE_FOR.get(phase, Role.MODERATOR))
        return people[0] if people else None

    def steps(self, state: State) -> list[StepSpec]:
        return [StepSpec(step, phase, people) for step, phase, people in round_steps(state.personas)]

    def after_round(self, state: State) -> Step:
        d = state.discussion
        if d.auto_rounds is not None:
            if d.round < d.auto_rounds:
                # Unattended, each round is "another round" on the same topic; a deep dive is people's choice.
                return Transition(round=d.round + 1)
            return Transition(pending="final")
        return Transition(status=Status.WAITING, notice="next_action")

    def schema(self, phase: Phase, persona: Persona) -> type[BaseModel] | None:
        return SCHEMAS.get(phase)

    def stance(self, phase: Phase, persona: Persona) -> bool:
        return phase in STANCE_PHASES

    def tier(self, state: State, plan: TurnPlan, persona: Persona) -> Tier:
        return TIERS.get(plan.phase, "medium")

    def task(self, state: State, plan: TurnPlan, persona: Persona) -> str:
        d = state.discussion
        shared = shared_task(state, plan)
        if shared is not None:
            return shared
        if plan.phase == Phase.OPENING:
            experts = ", ".join(named(x.name) for x in state.by_role(Role.EXPERT))
            text = (
                f"Open round {plan.round} on this topic:\n{quote('topic', d.round_topic or d.topic)}\n"
                "State the question crisply, propose "
                f"two or three angles, and ask each expert ({experts}) one pointed question by name. If humans "
                "have written since the last round, say how their points shape this round."
            )
            listed = question.on_table(state)
            if listed:  # the question's options, which every stance this round names
                text += "\nThe options on the table, each with its id:\n" + "\n".join(
                    f"- {o.id}: {quote('option', o.label)}" for o in listed)
            return f"{text}\nStay under {word_budget(plan.phase, plan.round)} words."
        if plan.phase == Phase.ROUND_SYNTHESIS:
            names = ", ".join(named(x.name) for x in state.personas if x.role != Role.HISTORIAN)
            return (
                f"Synthesize round {plan.round}. Summary in about 200 characters; the agreements, "
                "disagreements and insights (attribute them); open questions; two or three suggested "
                "next topics; and two to four concrete proposals the team could vote on, each in a few words "
                f"that the personas ({names}) can name as their stance. Do not declare a consensus, and do "
                "not say which proposal anyone supports: the tally of everyone's own recorded stances is "
                "added beside your synthesis." + verdict_note(state, plan.round)
            )
        if plan.phase == Phase.FINAL_SYNTHESIS:
            return (
                "Write the final synthesis of the whole discussion: an executive summary of about 500 "
                "characters; insights with confidence, supporting evidence and dissenting views; "
                "agreements with their supporters; unresolved debates with each position, its advocates "
                "and arguments; open questions; and three to five recommended actions. Attribute by persona "
                "name. Do not declare a consensus, and do not vote for anyone: the tally of everyone's own "
                "recorded stances is added beside your synthesis." + verdict_note(state, plan.round)
            )
        if plan.phase == Phase.ROSTER:
            return (
                f"Define {d.experts} topic experts for this discussion. Make them genuinely different: "
                "different disciplines and career paths, different thinking styles and biases, at least "
                "one who is likely to disagree with the others. Give each a realistic full name, each "
                "from a different name culture, a short title, 2-4 areas of expertise, a thinking style, "
                "a natural bias and a reply tendency. List the answers the topic asks to choose between as its "
                "options, each worded as an action (for a yes/no question both answers: what to do, and what to "
                "do instead): every stance and every vote will name one of them."
                + (" Include these perspectives the team asked for:\n" + "\n".join(quote("role", r) for r in d.roles)
                   if d.roles else "")
                + (" It is a debate: balance the experts between pro and con." if d.mode == "debate" else "")
            )
        task = TASKS[plan.phase]
        if plan.phase == Phase.REBUTTAL and not contrarian_spoke(state, plan.round):
            task = NO_CONTRARIAN
        return f"{task}\nStay under {word_budget(plan.phase, plan.round)} words."

