"""The open floor: generated participants bid for the floor and the most urgent speaks, until the talk has
converged by the termination policy or the speech cap is reached; then a synthesis (pure)."""

from __future__ import annotations

from pydantic import BaseModel

from core.deliberation.flows.base import QuestionFrom, State, Step, StepSpec, Tier, Transition, TurnPlan, turn_key
from core.deliberation.flows.common import (
    HUMANS_RULE,
    SHARED_LABELS,
    STANCE_RULE,
    shared_task,
    shrink,
    verdict_note,
)
from core.deliberation.quoting import named, quote
from core.deliberation.roster import addressed
from core.deliberation.schemas import Bid, ExpertSpec, FinalSynthesis, FloorPlan, FloorSpeech, Question
from core.models import Discussion, Persona, Phase, Role, Status, Turn, TurnStatus

LEAD = Persona(key="moderator", name="Floor Lead", role=Role.MODERATOR, title="Opens the floor, closes it, sums up",
               thinking_style="even-handed", bias="Wants every voice heard at least twice",
               reply_tendency="Sums up who holds which position", icon=":microphone:")
NAME_CULTURES = ["Korean", "Nigerian", "Brazilian", "German", "Indian", "Japanese", "Egyptian", "Mexican",
                 "Swedish", "Vietnamese", "Turkish", "Ghanaian"]
WHOLE_FLOOR = 1_000_000  # rounds read verbatim: all of them
FLOOR_CHARS = 48_000  # about 12,000 tokens of speeches; past it the oldest are read as their stance lines
NOBODY_SPOKE = "nobody spoke this round: every speech failed or was skipped"
HUMAN_BOOST = 3  # a person's reply that names a participant raises its bid by this much
SLOTS_PER_SPEAKER = 3  # bid-and-speech slots a round may use per participant before it gives up
FLOOR_PHASES = (Phase.BID, Phase.SPEECH)  # the floor's own steps; an answer or a check is an aside in its round

RULES = """\
You are taking part in an open floor run by Council, a bot that hosts discussions among AI personas inside a \
team's chat. The people who started it read every post and may reply.

How the open floor works
- There are no fixed turns. Before each speech every participant bids for the floor: how urgently they \
need to speak, and the point they would make. The most urgent bid speaks alone; ties go to whoever has \
spoken least. Someone a person names in a reply bids higher.
- Speak when you have something new: answer the last speaker, build on earlier positions, or propose a \
synthesis when you see one. A second speech should build on what was said, not open a new topic.
- The floor closes when everyone has spoken at least twice, later speeches build on earlier ones, \
someone has proposed a synthesis and no question is left hanging; then the Floor Lead sums up.

Rules for every persona
1. Speak only as yourself, in your own voice and tone. Never write lines for anyone else.
2. Be concrete, stay in character, and disagree when you disagree.
3. Respect the word budget. No preamble, no sign-off.

""" + STANCE_RULE + "\n" + HUMANS_RULE


def participants(state: State) -> list[Persona]:
    """The participants; a slot whose persona could not be written (skipped) leaves the floor to the others."""
    return [p for p in state.by_role(Role.EXPERT) if seated(p) or not _slot_skipped(state, p)]


def _slot_skipped(state: State, p: Persona) -> bool:
    turn = state.turn(turn_key(state.discussion, 1, 0, p.key))
    return turn is not None and turn.status == TurnStatus.SKIPPED


def seated(p: Persona) -> bool:
    """A slot's placeholder becomes a participant once its persona turn has named them."""
    return not p.key.startswith("slot") or bool(p.expertise)


def speeches(state: State) -> list[Turn]:
    return state.done_turns(Phase.SPEECH)


def spoken(state: State) -> dict[str, int]:
    counts = {p.key: 0 for p in participants(state)}
    for t in speeches(state):
        if t.text:
            counts[t.persona_key] = counts.get(t.persona_key, 0) + 1
    return counts


def policy_met(state: State) -> bool:
    """Everyone spoke twice, later speeches build on earlier ones, someone proposed a synthesis, and the last
    speech leaves no question hanging."""
    said = [t for t in speeches(state) if t.data]
    if not said or any(n < 2 for n in spoken(state).values()):
        return False
    later: dict[str, Turn] = {}
    for t in said:
        later[t.persona_key] = t
    builds = all(bool((t.data or {}).get("builds_on_earlier")) for t in later.values())
    synthesis = any(bool((t.data or {}).get("proposes_synthesis")) for t in said)
    return builds and synthesis and not str((said[-1].data or {}).get("open_question", "")).strip()


def closed(state: State) -> bool:
    return policy_met(state) or len(speeches(state)) >= state.discussion.options.max_speeches


def winner(state: State, round_: int, step: int) -> Persona | None:
    """The highest bid of this bidding step; a person's reply naming a participant since the last speech raises its
    bid; ties go to who has spoken least; the last speaker sits out while another has spoken fewer than two times.
    Decided once: a speech already planned for the step keeps its speaker."""
    people = participants(state)
    planned = next((t for t in state.turns if t.phase == Phase.SPEECH and (t.round, t.step) == (round_, step + 1)),
                   None)
    if planned is not None:
        return state.persona(planned.persona_key)
    before = [t for t in speeches(state) if (t.round, t.step) < (round_, step)]
    bids = {p.key: state.turn(turn_key(state.discussion, round_, step, p.key)) for p in people}
    since = before[-1].finished_at if before else None
    until = max((b.finished_at for b in bids.values() if b is not None and b.finished_at), default=None)
    named_by_people = {addressed(h.text, people) for h in state.humans
                       if (since is None or h.created_at > since) and (until is None or h.created_at <= until)}
    counts = {p.key: sum(1 for t in before if t.persona_key == p.key and t.text) for p in people}
    last = next((t.persona_key for t in reversed(before) if t.text), None)
    # Nobody speaks twice in a row while another has not yet had their two speeches: everyone is heard twice.
    waiting = any(n < 2 for key, n in counts.items() if key != last)
    people = [p for p in people if not (waiting and p.key == last)] or people
    best: tuple[float, int, int] | None = None
    chosen = None
    for i, p in enumerate(people):
        bid = bids.get(p.key)
        if bid is None or not bid.data:
            continue
        score = float(bid.data.get("urgency", 0)) + (HUMAN_BOOST if p.key in named_by_people else 0)
        rank = (score, -counts.get(p.key, 0), -i)
        if best is None or rank > best:
            best, chosen = rank, p
    if chosen is None and people:  # every bid failed: whoever has spoken least
        chosen = min(people, key=lambda p: (counts.get(p.key, 0), people.index(p)))
    return chosen


class OpenFloor:
    name = "open"
    summary = "generated personas bid for the floor; the most urgent speaks, until the talk converges"
    outline = "open floor (participants bid for the floor; the most urgent speaks; a synthesis when it converges)"
    rules = RULES
    # The floor reads its whole transcript: COUNCIL_OPEN_MAX_SPEECHES caps the speeches, so the prompt stays
    # within a fixed budget, and a later speech (and the synthesis) sees round 1.
    verbatim_rounds: int | None = WHOLE_FLOOR
    transcript_chars: int | None = FLOOR_CHARS
    keeps_stances = True  # not everyone speaks every round: one who did not keeps their latest stance
    question_from: QuestionFrom = "roster"
    nudges = 1  # a failed speech is tried once more (with a note) before it is skipped
    essential = frozenset({Phase.ROSTER, Phase.FINAL_SYNTHESIS, Phase.RESUME_SUMMARY})
    labels = SHARED_LABELS | {Phase.PERSONA: "Persona", Phase.BID: "Bid", Phase.SPEECH: "Speech",
                              Phase.FINAL_SYNTHESIS: "Synthesis"}

    def seats(self, d: Discussion) -> list[Persona]:
        return [LEAD]

    def needs_roster(self, state: State) -> bool:
        return not participants(state)

    def writer(self, state: State, phase: Phase) -> Persona | None:
        lead = state.by_role(Role.MODERATOR)
        return lead[0] if lead else None

    def steps(self, state: State) -> list[StepSpec]:
        d = state.discussion
        people = participants(state)
        out: list[StepSpec] = []
        if d.round == 1:
            out.append(StepSpec(0, Phase.PERSONA, [p for p in people if p.key.startswith("slot")]))
            if not all(seated(p) for p in people):
                return out
        given, k = 0, 0
        # One epoch: as many speeches given as there are participants; a speech that failed and was skipped
        # gives the floor to another bid, so a round never ends empty (within a cap; the failure rules block first).
        while given < len(people) and k < SLOTS_PER_SPEAKER * len(people):
            bid_step, speech_step = 2 * k + 1, 2 * k + 2
            k += 1
            if closed(state) and not any(t.round == d.round and t.step >= bid_step and t.phase in FLOOR_PHASES
                                         for t in state.turns):
                break  # the floor closed: no new bidding (a step of bids or a speech already begun is finished)
            out.append(StepSpec(bid_step, Phase.BID, people))
            if not all(state.finished(turn_key(d, d.round, bid_step, p.key)) for p in people):
                break  # the speaker is known once the bids are in
            speaker = winner(state, d.round, bid_step)
            out.append(StepSpec(speech_step, Phase.SPEECH, [speaker] if speaker else []))
            speech = state.turn(turn_key(d, d.round, speech_step, speaker.key if speaker else ""))
            if speech is None or not state.finished(speech.key):
                break
            given += 1 if speech.text else 0
        return out

    def after_round(self, state: State) -> Step:
        d = state.discussion
        if not any(t.text for t in speeches(state) if t.round == d.round):  # a round never ends empty
            return Transition(status=Status.BLOCKED, blocked_reason=NOBODY_SPOKE)
        if closed(state) or (d.auto_rounds is not None and d.round >= d.auto_rounds):
            return Transition(pending="final")
        return Transition(round=d.round + 1)

    def schema(self, phase: Phase, persona: Persona) -> type[BaseModel] | None:
        schemas: dict[Phase, type[BaseModel]] = {
            Phase.ROSTER: FloorPlan, Phase.QUESTION: Question, Phase.PERSONA: ExpertSpec, Phase.BID: Bid,
            Phase.SPEECH: FloorSpeech, Phase.FINAL_SYNTHESIS: FinalSynthesis}
        return schemas.get(phase)

    def stance(self, phase: Phase, persona: Persona) -> bool:
        return False  # speeches are structured and carry their stance themselves

    def tier(self, state: State, plan: TurnPlan, persona: Persona) -> Tier:
        return {Phase.ROSTER: "light", Phase.QUESTION: "light", Phase.PERSONA: "light", Phase.BID: "light",
                Phase.FINAL_SYNTHESIS: "heavy"}.get(plan.phase, "medium")  # type: ignore[return-value]

    def task(self, state: State, plan: TurnPlan, persona: Persona) -> str:
        d = state.discussion
        shared = shared_task(state, plan)
        if shared is not None:
            return shared
        if plan.phase == Phase.ROSTER:
            hints = ("\nControversy axes the team asked to include:\n" + "\n".join(quote("hint", h) for h in
                     d.options.hints)) if d.options.hints else ""
            roles = ("\nPerspectives the team asked for:\n" + "\n".join(quote("role", r) for r in d.roles)
                     if d.roles else "")
            debate = " It is a pro/con debate: split the positions between for and against." if d.mode == "debate" \
                else ""
            return (f"Plan {d.experts} participants for an open discussion of the topic. Find the professional "
                    "domain and the axes people really disagree on. For each slot write a 1-2 sentence brief that "
                    "sets them apart (career path, seniority, background), a name culture (all different, from "
                    "different regions), the position they start from, and their tone. Spread the positions across "
                    "the axes. List the answers the topic asks to choose between as its options, each worded as an "
                    "action (for a yes/no question both answers: what to do, and what to do instead): every stance "
                    f"names one.{debate}{hints}{roles}")
        if plan.phase == Phase.PERSONA:
            outlier = (" This participant is an outlier: an unusual background for this domain; give them a "
                       "compelling career path.") if "outlier" in persona.reply_tendency else ""
            return ("Create the participant this slot describes: a realistic full name from the name culture given, "
                    "a short title, 2-4 areas of expertise, a thinking style, a natural bias and a reply tendency "
                    "that fit the brief, position and tone:\n"
                    + quote("slot", f"brief: {persona.title}\nposition: {persona.bias}\ntone: "
                            f"{persona.thinking_style}\n{persona.reply_tendency}") + outlier)
        if plan.phase == Phase.BID:
            return ("Bid for the floor. How urgently do you need to speak next (1 = nothing new to add, 10 = "
                    "crucial: you were asked something, someone misstated your view, or you see the synthesis)? "
                    "Give the point you would make in one line and whom you would answer.")
        if plan.phase == Phase.SPEECH:
            n = spoken(state).get(persona.key, 0)
            later = (" This is not your first speech: build on what you and the others said; do not open a new "
                     "topic. If you see where the group can converge, propose it.") if n else ""
            others = ", ".join(named(p.name) for p in participants(state) if p.key != persona.key)
            return (f"You have the floor. Make your point, answering others ({others}) by name where you engage "
                    f"them.{later} Stay under {shrink(180, 1 + n)} words. Record whether you build on earlier "
                    "positions, whether you propose a synthesis, and any question you leave open for someone.")
        if plan.phase == Phase.FINAL_SYNTHESIS:
            return ("The floor is closed. Write the synthesis of the whole discussion: an executive summary of about "
                    "500 characters; insights with confidence, supporting evidence and dissenting views; agreements "
                    "with their supporters; unresolved debates with each position and its advocates; open questions; "
                    "and three to five recommended actions. Do not declare a consensus and do not vote for anyone: "
                    "the tally of the participants' own recorded stances is added."
                    + verdict_note(state, plan.round, carry=True))
        return "Speak briefly, in character."
