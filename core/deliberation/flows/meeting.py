"""The council meeting: domain owners propose, deliberate with direct exchanges, and rank; a moderator tallies
the ranking and recommends (never executes) (pure)."""

from __future__ import annotations

from pydantic import BaseModel

from core.deliberation import holders, stances, tally
from core.deliberation.flows.base import State, Step, StepSpec, Tier, Transition, TurnPlan
from core.deliberation.flows.common import HUMANS_RULE, SHARED_LABELS, STANCE_RULE, shared_task
from core.deliberation.quoting import named, quote
from core.deliberation.roster import mentioned, seats_from_lines
from core.deliberation.schemas import MeetingOptions, MeetingRecommendation, RankedVote, RosterSpec
from core.models import Discussion, Persona, Phase, Role, TurnStatus

MODERATOR = Persona(key="moderator", name="Moderator", role=Role.MODERATOR, title="Runs the rounds, tallies the vote",
                    thinking_style="neutral, procedural", bias="Wants every owner heard equally",
                    reply_tendency="Summarises positions, names who must answer", icon=":classical_building:")
OWNER_ICONS = [":package:", ":credit_card:", ":busts_in_silhouette:", ":gear:", ":shield:",
               ":chart_with_upwards_trend:", ":wrench:", ":books:"]

RULES = """\
You are taking part in a council meeting run by Council, a bot that hosts structured deliberation among AI \
personas inside a team's chat. The people who started it read every post and may reply; they rank too.

How the meeting works
- Each domain owner speaks for one domain and its users; all owners have an equal voice.
- Round 1: each owner writes a proposal of three to five sentences from their domain's point of view.
- Middle rounds: challenge proposals you disagree with and say why from your domain; defend yours with \
what you can point to (user impact, dependencies, what was said here) or plain reasoning; revise when an \
argument earns it. Address another \
owner by name for a direct exchange: they answer you in the same round.
- If the owners agree too early, a steelman round asks each to argue the strongest case against the \
emerging choice.
- Final round: each owner submits a ranked top three to five, one line each.
- The Moderator tallies the ranking (lowest average rank first), names the dissents and recommends next \
steps. The meeting recommends; it never executes anything.

Rules for every persona
1. Speak only as yourself. Never write lines for another persona or for a human.
2. Proposals without support deserve a challenge. Be direct; disagreement is valuable.
3. Respect the length you are given. No preamble, no sign-off.

""" + STANCE_RULE + "\n" + HUMANS_RULE


LABEL_RULE = "Your stance label names the option you support (reuse the wording already on the table)."
# Seed-true models: owners think on the strongest model, the moderator runs the meeting on the default one.
# `--tier` overrides: light runs everyone on the default, medium gives the moderator the strong one, heavy everyone.
TIERS: dict[str, tuple[Tier, Tier]] = {"": ("heavy", "medium"), "light": ("medium", "medium"),
                                       "medium": ("medium", "heavy"), "heavy": ("heavy", "heavy")}


def owners_from_config(lines: list[str]) -> list[Persona]:
    """Channel configuration `Name: domain` per owner → owners (the domain is the title)."""
    return seats_from_lines(lines, role=Role.OWNER, icons=OWNER_ICONS, reserved=MODERATOR.key, limit=8)


def rounds(d: Discussion) -> int:
    return d.auto_rounds or 3


def converged(state: State, round_: int) -> bool:
    """Most owners (a strict majority of those seated, at least two) name the same option in their latest stance,
    matched by meaning ("stabilise core" is "Stabilise the core"), an owner without a stance counting as
    undecided."""
    owners = state.by_role(Role.OWNER)
    latest = stances.latest(state, round_)
    labels = [stances.label_of(latest[o.key]) if o.key in latest else "" for o in owners]
    terms: list[str] = []
    counts: dict[str, int] = {}
    for label in labels:
        if tally.key(label) in stances.UNDECIDED:
            continue
        named = tally.match(label, terms) or label
        if named not in terms:
            terms.append(named)
        counts[tally.key(named)] = counts.get(tally.key(named), 0) + 1
    top = max(counts.values(), default=0)
    return top >= 2 and top * 2 > len(owners)


def steelman_round(state: State, round_: int) -> bool:
    """A middle round becomes a steelman round when the owners already agreed at the end of the previous one."""
    return 1 < round_ < rounds(state.discussion) and converged(state, round_ - 1) and not any(
        t.phase == Phase.STEELMAN for t in state.turns if t.round < round_)


def addressed(state: State, round_: int) -> list[Persona]:
    """Owners another owner named in this round's deliberation: they answer in the same round."""
    owners = state.by_role(Role.OWNER)
    keys: set[str] = set()
    for t in state.done_turns(round_=round_):
        if t.phase in (Phase.DELIBERATION, Phase.STEELMAN) and t.step == 0:
            keys.update(mentioned(t.text, owners, exclude=t.persona_key))
    return [p for p in owners if p.key in keys]


def options_on_table(state: State) -> list[str]:
    """What the owners have been arguing for: their latest stance labels, first wording kept."""
    seen: dict[str, str] = {}
    for t in stances.latest(state, state.discussion.round).values():
        label = stances.label_of(t)
        if label and label not in stances.UNDECIDED:
            seen.setdefault(label, label)
    return list(seen.values())


def fixed_options(state: State) -> list[str]:
    """The options the moderator fixed before the final vote, each meaning once (empty before they are fixed)."""
    for t in reversed(state.done_turns(Phase.OPTIONS)):
        if t.data:
            return tally.dedupe([str(o) for o in t.data.get("options", [])])
    return []


def options_text(options: list[str]) -> str:
    return "**Options for the final vote**\n" + "\n".join(f"{i}. {o}" for i, o in enumerate(options, 1))


class Meeting:
    name = "meeting"
    summary = "domain owners propose, challenge and rank; a moderator tallies the ranking"
    outline = "council meeting (proposals → deliberation with direct exchanges → ranked vote → recommendation)"
    rules = RULES
    verbatim_rounds: int | None = 5
    transcript_chars: int | None = None
    keeps_stances = False  # everyone speaks every round: a missing stance is undecided
    nudges = 1
    essential = frozenset({Phase.ROSTER, Phase.FINAL_SYNTHESIS, Phase.RESUME_SUMMARY})
    labels = SHARED_LABELS | {
        Phase.PROPOSAL: "Proposal",
        Phase.DELIBERATION: "Deliberation",
        Phase.STEELMAN: "Steelman",
        Phase.EXCHANGE: "Direct answer",
        Phase.OPTIONS: "Options for the vote",
        Phase.RANKED_VOTE: "Final vote",
        Phase.FINAL_SYNTHESIS: "Council recommendation",
    }

    def seats(self, d: Discussion) -> list[Persona]:
        lines = d.options.owners  # a line may name the person who holds the seat (`Dana <@U123>: Billing`)
        return [MODERATOR, *holders.seated(lines, owners_from_config(holders.clean_lines(lines)))]

    def needs_roster(self, state: State) -> bool:
        return not state.by_role(Role.OWNER)

    def writer(self, state: State, phase: Phase) -> Persona | None:
        moderators = state.by_role(Role.MODERATOR)
        return moderators[0] if moderators else None

    def steps(self, state: State) -> list[StepSpec]:
        d = state.discussion
        owners = state.by_role(Role.OWNER)
        if d.round == 1:
            return [StepSpec(0, Phase.PROPOSAL, owners)]
        if d.round >= rounds(d):  # the moderator fixes the options, then every owner ranks from them
            return [StepSpec(0, Phase.OPTIONS, state.by_role(Role.MODERATOR)), StepSpec(1, Phase.RANKED_VOTE, owners)]
        phase = Phase.STEELMAN if steelman_round(state, d.round) else Phase.DELIBERATION
        return [StepSpec(0, phase, owners), StepSpec(1, Phase.EXCHANGE, addressed(state, d.round))]

    def after_round(self, state: State) -> Step:
        d = state.discussion
        if d.round < rounds(d):
            return Transition(round=d.round + 1)
        return Transition(pending="final")

    def schema(self, phase: Phase, persona: Persona) -> type[BaseModel] | None:
        schemas: dict[Phase, type[BaseModel]] = {Phase.ROSTER: RosterSpec, Phase.OPTIONS: MeetingOptions,
                                                 Phase.RANKED_VOTE: RankedVote,
                                                 Phase.FINAL_SYNTHESIS: MeetingRecommendation}
        return schemas.get(phase)

    def stance(self, phase: Phase, persona: Persona) -> bool:
        return phase in (Phase.PROPOSAL, Phase.DELIBERATION, Phase.STEELMAN, Phase.EXCHANGE)

    def tier(self, state: State, plan: TurnPlan, persona: Persona) -> Tier:
        if plan.phase == Phase.ROSTER:
            return "light"
        owners, moderator = TIERS.get(state.discussion.options.tier, TIERS[""])
        return owners if persona.role == Role.OWNER else moderator

    def task(self, state: State, plan: TurnPlan, persona: Persona) -> str:
        d = state.discussion
        shared = shared_task(state, plan)
        if shared is not None:
            return shared
        others = ", ".join(named(o.name) for o in state.by_role(Role.OWNER) if o.key != persona.key)
        n = rounds(d)
        earlier = state.turn(plan.key)
        if earlier is not None and earlier.status == TurnStatus.FAILED:  # nudged: the others are waiting
            return "The moderator nudges you: the other owners have answered and are waiting for you. " + \
                self._task(state, plan, persona, others, n)
        return self._task(state, plan, persona, others, n)

    def _task(self, state: State, plan: TurnPlan, persona: Persona, others: str, n: int) -> str:
        d = state.discussion
        if plan.phase == Phase.ROSTER:
            return (f"Name {d.experts} domain owners for this meeting: the product or system areas this decision "
                    "touches, each owned by one person. Give each a realistic full name (different name cultures), "
                    "the domain as the title, 2-4 areas of expertise, a thinking style, a natural bias and a reply "
                    "tendency. Make sure their domains pull in different directions.")
        if plan.phase == Phase.PROPOSAL:
            return (f"Round 1 of {n}: your opening proposal. Assess the topic from your domain's point of view and "
                    "write a proposal of three to five sentences: what the team should prioritise and why, with "
                    f"evidence. {LABEL_RULE}")
        if plan.phase in (Phase.DELIBERATION, Phase.STEELMAN):
            head = f"Round {plan.round} of {n}: deliberation. "
            if plan.phase == Phase.STEELMAN:
                head = (f"Round {plan.round} of {n}: steelman. The owners converged quickly, so argue the strongest "
                        "case AGAINST the emerging choice, then say whether it changes your position. ")
            return (head + "Challenge proposals you disagree with and say why from your domain; defend yours if "
                    "challenged, with evidence; revise your position if an argument is compelling. To ask another "
                    f"owner ({others}) directly, address them by name: they answer you this round. 120-200 words. "
                    f"{LABEL_RULE}")
        if plan.phase == Phase.EXCHANGE:
            return (f"Another owner addressed you by name in round {plan.round}. Answer them directly and by name in "
                    f"60-120 words: concede, counter, or propose a middle way. {LABEL_RULE}")
        if plan.phase == Phase.OPTIONS:
            table = options_on_table(state)
            listed = ("\nThe owners' latest positions:\n" + "\n".join(quote("option", o) for o in table)
                      if table else "")
            return (f"Round {plan.round} of {n}: before the final vote, fix the list of options the owners will rank: "
                    "three to six distinct options from what was proposed and argued, each in a few words, merging "
                    f"wordings that mean the same thing. Add nothing nobody argued for.{listed}")
        if plan.phase == Phase.RANKED_VOTE:
            fixed = fixed_options(state) or options_on_table(state)
            listed = ("\nRank from these options only, in their exact wording, each at most once:\n"
                      + "\n".join(quote("option", o) for o in fixed)) if fixed else ""
            return (f"Round {plan.round} of {n}: final vote. Submit your final priority ordering, top three to five, "
                    "most important first, each with one line on why it sits there and which domain it affects "
                    f"most. This is your last word.{listed}")
        if plan.phase == Phase.FINAL_SYNTHESIS:
            return ("Write the council's recommendation. The ranking itself is tallied from the owners' votes and "
                    "added for you; give the two or three strongest arguments made (attributed), the notable "
                    "dissents (naming who holds them; leave the list empty if there were none), and two or three "
                    "actionable next steps for people to take. Recommend only: nothing is executed automatically. "
                    "Do not call it a consensus: the tally decides that.")
        return "Speak from your domain. 100-150 words."
