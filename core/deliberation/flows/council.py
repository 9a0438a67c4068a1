"""The council: advisors with fixed lenses deliberate in rounds, then a referee gives the verdict (pure)."""

from __future__ import annotations

from pydantic import BaseModel

from core.deliberation import choices, question
from core.deliberation.choices import Option
from core.deliberation.flows.base import QuestionFrom, State, Step, StepSpec, Tier, Transition, TurnPlan
from core.deliberation.flows.common import HUMANS_RULE, SHARED_LABELS, STANCE_RULE, shared_task, verdict_note
from core.deliberation.quoting import inline, named
from core.deliberation.roster import seats_from_lines
from core.deliberation.schemas import CouncilVerdict, Question
from core.models import Discussion, Persona, Phase, Role

DEFAULT_ADVISORS = [
    Persona(key="pragmatist", name="Pragmatist", role=Role.ADVISOR, title="Feasibility, cost, effort",
            thinking_style="practical", bias="Can we actually do this?",
            reply_tendency="Counts the people, money and weeks it takes", icon=":hammer_and_wrench:"),
    Persona(key="visionary", name="Visionary", role=Role.ADVISOR, title="Long-term potential, innovation",
            thinking_style="expansive", bias="What if we went bigger?",
            reply_tendency="Describes where this leads in three years", icon=":telescope:"),
    Persona(key="skeptic", name="Skeptic", role=Role.ADVISOR, title="Risks, failure modes, edge cases",
            thinking_style="adversarial", bias="What could go wrong?",
            reply_tendency="Names the failure and how likely it is", icon=":mag:"),
]
REFEREE = Persona(key="referee", name="Referee", role=Role.REFEREE, title="Weighs the advisors, gives the verdict",
                  thinking_style="balanced, fair", bias="Wants the decision the evidence supports",
                  reply_tendency="Collapses perspectives into one recommendation", icon=":scales:")
ICONS = [":hammer_and_wrench:", ":telescope:", ":mag:", ":bulb:", ":shield:", ":chart_with_upwards_trend:"]

RULES = """\
You are taking part in a council run by Council, a bot that hosts structured deliberation among AI \
personas inside a team's chat. The people who started it read every post in the thread and may reply.

How the council works
- Each advisor looks at the question through one lens and keeps to it: that is their value.
- Round 1: each advisor gives an opening position. In later rounds each advisor reads the others' \
latest positions and says where they agree, where they push back and where they changed their mind. \
The last round is each advisor's final position.
- The Referee then weighs all advisors, notes how each position evolved across the rounds, and gives \
a verdict with a recommendation.

Rules for every persona
1. Speak only as yourself. Never write lines for another persona or for a human.
2. Be concrete: mechanisms, examples, costs, failure modes (figures only where the material gives them).
3. Engage with the others by name. Change your mind when an argument earns it, and say so.
4. Respect the word budget. No preamble, no sign-off, no restating the question.
5. Write for a chat thread: short paragraphs, a few bullets, **bold** for the one line that matters.

""" + STANCE_RULE + "\n" + HUMANS_RULE

BUDGETS = {Phase.ADVISOR_OPENING: "250-350", Phase.ADVISOR_REBUTTAL: "200-300", Phase.ADVISOR_FINAL: "150-250"}

# (advisors, referee) per tier: light runs everyone on the default turn model, medium gives the referee the
# strong model, heavy gives it to everyone.
TIERS: dict[str, tuple[Tier, Tier]] = {"light": ("medium", "medium"), "medium": ("medium", "heavy"),
                                       "heavy": ("heavy", "heavy")}


def advisors_from_roles(roles: list[str]) -> list[Persona]:
    """`--roles "Security: threat models, Finance"` → one advisor per role, the part after a colon its lens."""
    return seats_from_lines(roles, role=Role.ADVISOR, icons=ICONS, reserved=REFEREE.key, limit=6,
                            default_title="The {lower} perspective")


def rounds(d: Discussion) -> int:
    return d.auto_rounds or 1


def choosable(state: State) -> list[Option]:
    """What advisors, the referee and people choose from: the question's options, else (no question could be
    framed) for / against."""
    on_table = question.on_table(state)
    return on_table[:5] if len(on_table) >= 2 else choices.SIDES


def phase_of(d: Discussion, round_: int) -> Phase:
    if round_ == 1:
        return Phase.ADVISOR_OPENING
    return Phase.ADVISOR_FINAL if round_ >= rounds(d) else Phase.ADVISOR_REBUTTAL


class Council:
    name = "council"
    summary = ("three advisors (Pragmatist, Visionary, Skeptic) give positions and rebut each other, then a "
               "referee gives the verdict; `--style parallel|sequential|debate`, `--tier light|medium|heavy`")
    outline = "council (advisors' positions → rebuttals → final positions → the referee's verdict)"
    rules = RULES
    verbatim_rounds: int | None = 5
    transcript_chars: int | None = None
    keeps_stances = False  # everyone speaks every round: a missing stance is undecided
    question_from: QuestionFrom = "turn"  # no roster: the referee frames the question before the advisors speak
    nudges = 1  # a failed turn is tried once more (with a note) before the step blocks or skips it
    essential = frozenset({Phase.FINAL_SYNTHESIS, Phase.RESUME_SUMMARY})
    labels = SHARED_LABELS | {
        Phase.ADVISOR_OPENING: "Opening position",
        Phase.ADVISOR_REBUTTAL: "Rebuttal",
        Phase.ADVISOR_FINAL: "Final position",
        Phase.FINAL_SYNTHESIS: "Referee's verdict",
    }

    def seats(self, d: Discussion) -> list[Persona]:
        return [*(advisors_from_roles(d.roles) or DEFAULT_ADVISORS), REFEREE]

    def needs_roster(self, state: State) -> bool:
        return False

    def writer(self, state: State, phase: Phase) -> Persona | None:
        referee = state.by_role(Role.REFEREE)
        return referee[0] if referee else None

    def steps(self, state: State) -> list[StepSpec]:
        d = state.discussion
        advisors, phase = state.by_role(Role.ADVISOR), phase_of(d, d.round)
        if d.options.style == "sequential":  # each advisor sees the ones before them in the same round
            return [StepSpec(i, phase, [a]) for i, a in enumerate(advisors)]
        return [StepSpec(0, phase, advisors)]

    def after_round(self, state: State) -> Step:
        d = state.discussion
        if d.round < rounds(d):
            return Transition(round=d.round + 1)
        return Transition(pending="final")

    def schema(self, phase: Phase, persona: Persona) -> type[BaseModel] | None:
        schemas: dict[Phase, type[BaseModel]] = {Phase.FINAL_SYNTHESIS: CouncilVerdict, Phase.QUESTION: Question}
        return schemas.get(phase)

    def stance(self, phase: Phase, persona: Persona) -> bool:
        return persona.role == Role.ADVISOR and phase in BUDGETS

    def tier(self, state: State, plan: TurnPlan, persona: Persona) -> Tier:
        if plan.phase == Phase.QUESTION:
            return "light"
        advisors, referee = TIERS.get(state.discussion.options.tier, TIERS["light"])
        return referee if persona.role == Role.REFEREE else advisors

    def task(self, state: State, plan: TurnPlan, persona: Persona) -> str:
        d = state.discussion
        shared = shared_task(state, plan)
        if shared is not None:
            return shared
        others = ", ".join(named(a.name) for a in state.by_role(Role.ADVISOR) if a.key != persona.key)
        lens = inline(persona.title, 120)
        words = BUDGETS.get(plan.phase, "200-300")
        if plan.phase == Phase.ADVISOR_OPENING:
            first = d.options.style == "sequential" and plan.step > 0
            seen = " Build on or push against the advisors who spoke before you this round." if first else ""
            return (f"Give your opening position on the topic through your lens ({lens}): what you "
                    f"recommend, the two or three reasons that decide it for you, and the question the others "
                    f"must answer.{seen} {words} words.")
        if plan.phase == Phase.ADVISOR_REBUTTAL:
            cross = (f" Answer each of {others} by name." if d.options.style == "debate" else "")
            return (f"Rebuttal, round {plan.round} of {rounds(d)}. Read the other advisors' latest positions "
                    f"above. Where do you agree, where do you push back, and where did you change your mind?{cross} "
                    f"{words} words.")
        if plan.phase == Phase.ADVISOR_FINAL:
            return ("Final position. Say what changed for you during the council, what held firm, and give your "
                    f"final recommendation in two or three sentences. {words} words.")
        if plan.phase == Phase.FINAL_SYNTHESIS:
            names = ", ".join(named(a.name) for a in state.by_role(Role.ADVISOR))
            return ("Give the referee's verdict on the whole council, read round by round. For each advisor "
                    f"({names}) state their final position and how it evolved across the rounds (what moved "
                    "them, or that it held). Then the agreements, the tensions that remain (naming who holds "
                    "which side), your verdict in two to four sentences, the recommendation in two or three, "
                    "and two or three next steps. The tally of the advisors' recorded stances is the verdict "
                    "and is shown below yours; your reading must agree with it in kind (never call a split or a "
                    "leaning a consensus). Set `recommends` to the id of the option you recommend, one of:\n"
                    + choices.listing(choosable(state)) + "\nor none; where the verdict names an option, "
                    "recommend that one or none; a recommendation of another option is withheld from the thread "
                    "too." + verdict_note(state, plan.round))
        return f"Speak to the topic through your lens ({lens}). 150-250 words."
