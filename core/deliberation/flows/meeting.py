"""The council meeting: domain owners propose, deliberate with direct exchanges, and rank; a moderator tallies
the ranking and recommends (never executes) (pure)."""

from __future__ import annotations

from pydantic import BaseModel

from core.deliberation import choices, holders, question, stances, tally
from core.deliberation.choices import Option
from core.deliberation.flows.base import QuestionFrom, State, Step, StepSpec, Tier, Transition, TurnPlan
from core.deliberation.flows.common import HUMANS_RULE, SHARED_LABELS, STANCE_RULE, quoted_labels, shared_task
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


LABEL_RULE = ("Your stance label is the id of the option you support (such as O2), or `new: <your option in at most "
              "five words>` to put one on the table that is not there yet.")
PROPOSAL_RULE = "Your stance label puts your proposal on the table: `new: <your proposal in at most five words>`."
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
    """Most owners (a strict majority of those seated, at least two) chose the same option id in their latest
    stance; an owner without a stance, or with a position that names no option, does not add to anyone's count."""
    owners = state.by_role(Role.OWNER)
    latest = stances.latest(state, round_)
    known = question.on_table(state)
    picked = [stances.choice_of(latest[o.key], known) for o in owners if o.key in latest]
    counts: dict[str, int] = {}
    for choice in picked:
        if choices.ID.match(choice):
            counts[choice] = counts.get(choice, 0) + 1
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


def options_on_table(state: State) -> list[Option]:
    """The options the owners have been arguing for: those their latest stances chose, in the order they were
    put on the table."""
    known = question.on_table(state)
    chosen = {stances.choice_of(t, known) for t in stances.latest(state, state.discussion.round).values()}
    return [o for o in known if o.id in chosen]


def fixed_options(state: State) -> list[Option]:
    """The options the moderator fixed before the final vote, each with its id (empty before they are fixed)."""
    for t in reversed(state.done_turns(Phase.OPTIONS)):
        if t.data and t.data.get("listed"):
            return [Option(id=str(o["id"]), label=str(o["label"])) for o in t.data["listed"]]
    return []


def _position_lines(state: State, round_: int) -> list[str]:
    """Each owner's recorded choice at the end of a round (an id, shown with its label) and its reason."""
    shown = stances.names(state)
    rows = [r for r in stances.table(state, round_) if r.counted or r.choice]
    return [f"- {r.persona}: {choices.show(r.choice, shown)} — {r.stance}" for r in rows]


def _position_prompt_lines(state: State, round_: int) -> list[str]:
    """The positions as another owner's instruction carries them: a seat may be held by a person, so each name,
    label and reason is data (the label and the reason quoted), never a line that reads as the moderator's."""
    shown = quoted_labels(stances.names(state))
    rows = [r for r in stances.table(state, round_) if r.counted or r.choice]
    return [f"- {named(r.persona)}: {choices.show(r.choice, shown)}"
            + (f"\n{quote('stance', r.stance, name=r.persona)}" if r.stance else "") for r in rows]


def positions(state: State, round_: int) -> str:
    """Each owner's position at the end of a round, as the moderator states it when the next round opens."""
    lines = _position_prompt_lines(state, round_)
    return f"The moderator states the positions from round {round_}:\n" + "\n".join(lines) if lines else ""


def positions_post(state: State) -> str:
    """The post that opens the next round (seed 004): the positions the round just ended recorded."""
    d = state.discussion
    lines = _position_lines(state, d.round) or ["- (no owner recorded a position)"]
    return (f"**Round {d.round + 1} of {rounds(d)}** — the moderator states the positions from round {d.round}:\n"
            + "\n".join(lines))


def owner_ballots(state: State) -> tuple[dict[str, list[str]], dict[str, str], dict[str, list[str]]]:
    """Each owner's final ranking as written (name -> option id per place, "" where an item names no option or
    repeats one placed higher), the reason for each id from the owners who ranked it highest, and each owner's
    items that name no option exactly (shown as unmatched; they keep their places)."""
    ballots: dict[str, list[str]] = {}
    best: dict[str, tuple[int, list[str]]] = {}
    unmatched: dict[str, list[str]] = {}
    options = fixed_options(state)
    for t in state.done_turns(Phase.RANKED_VOTE):
        persona = state.persona(t.persona_key)
        if persona is None or not t.data:
            continue
        vote = RankedVote.model_validate(t.data)
        name = holders.credited(persona, t)  # a ranking an AI stand-in cast is credited to the stand-in
        ids = as_written(vote, options)
        for place, (r, chosen) in enumerate(zip(vote.ranking, ids, strict=True), 1):
            if not chosen:
                if choices.named(r.item, options) is None:
                    unmatched.setdefault(name, []).append(r.item.strip())
                continue
            why = f"{r.why} ({name})" if r.why else f"({name})"
            at, whys = best.get(chosen, (99, []))
            if place < at:
                best[chosen] = (place, [why])
            elif place == at:
                whys.append(why)
        ballots[name] = ids
    return ballots, {k: "; ".join(whys) for k, (_, whys) in best.items()}, unmatched


def as_written(vote: RankedVote, options: list[Option]) -> list[str]:
    """A ranking as written: the option id each item names per place, "" for one that names none or repeats an
    option placed higher."""
    out: list[str] = []
    for r in vote.ranking:
        named = choices.named(r.item, options)
        out.append(named if named is not None and named not in out else "")
    return out


def tally_summary(state: State) -> str:
    """The owners' tally as the moderator reads it before writing the dissents: each option's average rank and
    first places, and each owner's ranking."""
    ballots, _, unmatched = owner_ballots(state)
    shown = quoted_labels({o.id: o.label for o in fixed_options(state)})
    lines = [f"{i}. {choices.show(t.item, shown)}: average rank {t.average:.1f}, {t.firsts}× #1"
             for i, t in enumerate(tally.tally(ballots), 1)]
    lines += [f"- {named(name)} ranked: " + ", ".join(
        f"#{i} " + (choices.show(x, shown) if x else "unmatched") for i, x in enumerate(ids, 1))
        for name, ids in ballots.items()]
    # A person's ranking items that name no option are their words: quoted, as any message of theirs.
    lines += [f"- {named(name)} also named, matching no option:\n" + "\n".join(quote("item", x) for x in items)
              for name, items in unmatched.items()]
    return "\n".join(lines)


def options_text(options: list[Option]) -> str:
    return "**Options for the final vote**\n" + "\n".join(f"{i}. {o.label} [{o.id}]" for i, o in enumerate(options, 1))


def on_table(options: list[Option]) -> str:
    """The options as a prompt lists them: id, then the label in quotes (owners' words are material)."""
    return "\n".join(f"{o.id}: {quote('option', o.label)}" for o in options)


class Meeting:
    name = "meeting"
    summary = "domain owners propose, challenge and rank; a moderator tallies the ranking"
    outline = "council meeting (proposals → deliberation with direct exchanges → ranked vote → recommendation)"
    rules = RULES
    verbatim_rounds: int | None = 5
    transcript_chars: int | None = None
    keeps_stances = False  # everyone speaks every round: a missing stance is undecided
    question_from: QuestionFrom = "owners"  # the owners' proposals are the options, and the moderator fixes the list
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
        if d.round < rounds(d):  # the next round opens with the positions this one recorded, posted as data
            return Transition(round=d.round + 1, notice="positions")
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
                    f"evidence. {PROPOSAL_RULE}")
        if plan.phase in (Phase.DELIBERATION, Phase.STEELMAN):
            head = f"Round {plan.round} of {n}: deliberation. "
            if plan.phase == Phase.STEELMAN:
                head = (f"Round {plan.round} of {n}: steelman. The owners converged quickly, so argue the strongest "
                        "case AGAINST the emerging choice, then say whether it changes your position. ")
            stated = positions(state, plan.round - 1)
            head += f"{stated}\n" if stated else ""
            return (head + "Challenge proposals you disagree with and say why from your domain; defend yours if "
                    "challenged, with evidence; revise your position if an argument is compelling. To ask another "
                    f"owner ({others}) directly, address them by name: they answer you this round. 120-200 words. "
                    f"{LABEL_RULE}")
        if plan.phase == Phase.EXCHANGE:
            return (f"Another owner addressed you by name in round {plan.round}. Answer them directly and by name in "
                    f"60-120 words: concede, counter, or propose a middle way. {LABEL_RULE}")
        if plan.phase == Phase.OPTIONS:
            table = options_on_table(state)
            listed = f"\nThe options the owners chose last:\n{on_table(table)}" if table else ""
            return (f"Round {plan.round} of {n}: before the final vote, fix the list of options the owners will rank: "
                    "three to six distinct options from what was proposed and argued, each in a few words, merging "
                    f"wordings that mean the same thing. Add nothing nobody argued for.{listed}")
        if plan.phase == Phase.RANKED_VOTE:
            fixed = fixed_options(state) or options_on_table(state)
            listed = ("\nRank from these options only, each by its id (such as O2), each at most once:\n"
                      + on_table(fixed)) if fixed else ""
            return (f"Round {plan.round} of {n}: final vote. {positions(state, plan.round - 1)}\nSubmit your final "
                    "priority ordering, top three to five, most important first, each with one line on why it sits "
                    f"there and which domain it affects most. This is your last word.{listed}")
        if plan.phase == Phase.FINAL_SYNTHESIS:
            return ("Write the council's recommendation. The ranking itself is tallied from the owners' votes and "
                    "added for you; give the two or three strongest arguments made (attributed), the notable "
                    "dissents (naming who holds them; leave the list empty if there were none), and two or three "
                    "actionable next steps for people to take. Recommend only: nothing is executed automatically. "
                    "Do not call it a consensus: the tally decides that. The owners' tally, which your dissents "
                    f"must agree with:\n{tally_summary(state)}")
        return "Speak from your domain. 100-150 words."
