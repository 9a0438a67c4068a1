"""Prompt assembly (pure): shared rules and transcript first, the persona's own instruction last."""

from __future__ import annotations

from itertools import groupby

from core.deliberation import context, flows, memory, question, review, routes, stances
from core.deliberation.flows.base import State, Transition, TurnPlan
from core.deliberation.holders import credited
from core.deliberation.quoting import inline, quote
from core.models import Author, Persona, Phase, Status, Turn
from core.ports import Block, Prompt, Purpose, Tier

# Bookkeeping turns nobody reads as discussion.
OFF_TRANSCRIPT = {Phase.ROSTER, Phase.PERSONA, Phase.BID, Phase.PEER_REVIEW}
SHARED_TIER: Tier = "medium"  # the tier of the turns that share one cached prefix


def label(state: State, phase: Phase) -> str:
    return flows.get(state.discussion.flow).labels.get(phase, phase.value.replace("_", " ").capitalize())


def describe(p: Persona) -> str:
    """A roster entry. Names and titles may be typed by people (or written by the model from their topic),
    so every field is quoted data."""
    lines = []
    if p.expertise:
        lines.append(f"expertise: {', '.join(p.expertise)}")
    if p.thinking_style:
        lines.append(f"thinking style: {p.thinking_style}; bias: {p.bias}; tends to: {p.reply_tendency}")
    return quote("persona", "\n".join(lines), name=p.name, role=p.role.value.replace("_", "-"), title=p.title)


def system_blocks(state: State) -> list[Block]:
    """The flow's rules alone: nothing a person typed (roster names and titles included) reaches the system."""
    return [Block(text=flows.get(state.discussion.flow).rules, cache=True)]


def _turn_text(t: Turn, state: State) -> str:
    p = state.persona(t.persona_key)
    who = inline(credited(p, t) if p else t.persona_key, 80)  # a stand-in's words are never read as the person's
    # A person in a seat typed this turn: their words are data, as any message of theirs in the thread, whether
    # or not their name was recorded with it.
    said = (quote("human", t.text, name=str((t.data or {}).get("written_by_name") or ""))
            if t.author == Author.PERSON else t.text)
    return f"[Round {t.round} · {label(state, t.phase)}] {who}:\n{said}"


def within_budget(turns: list[Turn], budget: int | None) -> list[Turn]:
    """The turns, the oldest condensed to their stance line (or their first words) until their text fits the
    budget (None: no budget), so a prompt that reads a whole transcript stays bounded and still sees every turn."""
    if budget is None:
        return turns
    out = sorted(turns, key=lambda t: (t.round, t.step))
    total = sum(len(t.text) for t in out)
    for i, t in enumerate(out):
        if total <= budget:
            break
        data = t.data or {}
        stance = data.get("stance")
        short = f"(condensed) {data.get('label', '')}: {stance}" if stance else f"(condensed) {inline(t.text, 200)}"
        if len(short) < len(t.text):  # a turn already shorter than its condensed form stays whole
            total -= len(t.text) - len(short)
            out[i] = t.model_copy(update={"text": short})
    return out


def transcript_blocks(state: State, *, final: bool = False) -> list[Block]:
    """The condensed history first (earlier rounds' syntheses), then one block per step and per human message
    of the recent rounds, in time order, so each prefix stays stable within a round."""
    d = state.discussion
    roster = "\n".join(describe(p) for p in state.personas) or "(the roster is being assembled)"
    head = f"The topic the team gave:\n{quote('topic', d.topic)}\n\nThe council\n{roster}"
    if d.mode == "debate":
        head += "\n\nFormat: a debate. Experts should take clear pro or con positions."
    if d.context:
        head += f"\n\nContext the team gave (a chat thread):\n{quote('context', d.context, limit=6000)}"
    if d.options.recalled:
        head += f"\n\n{memory.block(d.options.recalled)}"
    items: list[tuple[object, str]] = []
    # A flow with few, capped rounds (council, meeting) reads them all: its closing notes how positions evolved.
    rounds = flows.get(d.flow).verbatim_rounds or state.context_rounds
    seen = context.window(state, rounds, final=final)
    done = within_budget([t for t in seen.turns if t.phase not in OFF_TRANSCRIPT],
                         flows.get(d.flow).transcript_chars)
    for _, group in groupby(sorted(done, key=lambda t: (t.round, t.step)), key=lambda t: (t.round, t.step)):
        group_turns = list(group)
        when = max(t.finished_at or t.created_at for t in group_turns)
        items.append((when, "\n\n".join(_turn_text(t, state) for t in group_turns)))
    items += context.heard(seen.humans).blocks  # within a size budget, however many replies people write
    items.sort(key=lambda item: item[0])  # type: ignore[arg-type,return-value]
    blocks = [Block(text=head)]
    if seen.outline:
        blocks.append(Block(text="The oldest rounds, one line each (their summaries):\n" + "\n".join(
            f"[Round {t.round}] {inline(str((t.data or {}).get('summary', '')), 400)}" for t in seen.outline)))
    if seen.condensed:
        blocks.append(Block(text="Earlier rounds, as their syntheses (the most recent last):\n\n"
                                 + "\n\n".join(_turn_text(t, state) for t in seen.condensed)))
    blocks += [Block(text=text) for _, text in items]
    blocks[-1].cache = True
    return blocks


def brief(p: Persona) -> str:
    return f"You speak as this member of the council, and only as them:\n{describe(p)}"


def language(state: State) -> str:
    """Everyone speaks the language asked for, or else the one the topic is written in."""
    lang = state.discussion.options.lang
    if lang:
        return f"Write in {inline(lang, 30)} (the team asked for it), whatever language the topic or replies use."
    return "Write in the language the topic is written in."


def options_note(state: State) -> str:
    """The current question's options with their ids, which a stance names (none listed: for, against,
    undecided)."""
    listed = question.on_table(state)
    if not listed:
        return "\nNo options are on the table yet: your stance label is for, against or undecided (or `new: …`)."
    return "\nThe options on the table (name the one you support by its id):\n" + "\n".join(
        f"- {o.id}: {quote('option', o.label)}" for o in listed)


def _humans(state: State, plan: TurnPlan) -> list[str]:
    """The people in the discussion; for an answer, the person answered comes last."""
    names = sorted({h.author_name for h in state.humans})
    asker = next((h.author_name for h in state.humans if h.id == plan.reply_to), None)
    return [*(n for n in names if n != asker), asker] if asker else names


def last_round(state: State) -> bool:
    """Whether no round follows the current one: the closing is asked for or done, or the flow ends after it
    (what its `after_round` would decide now); a round that ends with people choosing may still be followed."""
    d = state.discussion
    if d.pending == "final" or d.status in (Status.DONE, Status.STOPPED):
        return True
    after = flows.get(d.flow).after_round(state)
    return isinstance(after, Transition) and after.pending == "final"


def build(state: State, plan: TurnPlan, transcripts: dict[bool, list[Block]] | None = None) -> Prompt:
    """`transcripts`: the transcript blocks already built from this same state (by whether they are the closing's),
    shared by the turns of one step; the ones built here are added to it."""
    p = state.persona(plan.persona_key)
    assert p is not None, plan.persona_key
    flow = flows.get(state.discussion.flow)
    instruction = (f"{brief(p)}\n\nYour turn ({label(state, plan.phase)}). {flow.task(state, plan, p)}\n"
                   f"{language(state)}")
    last = plan.phase == Phase.ANSWER and last_round(state)
    if last:  # an answer never promises a round that will not come
        instruction += "\nThis is the discussion's last round: no further round follows, so promise none."
    if flow.stance(plan.phase, p):
        instruction += f"\n{stances.LINE_INSTRUCTION}"
    schema = flow.schema(plan.phase, p)
    if flow.stance(plan.phase, p) or (schema is not None and "label" in schema.model_fields):
        instruction += options_note(state)
    if plan.phase in (Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS):  # the peer review's aggregate, if any
        instruction += review.note(state, plan.round if plan.phase == Phase.ROUND_SYNTHESIS else None)
    max_tokens = 4096 if flow.schema(plan.phase, p) is not None else 1500
    tier = flow.tier(state, plan, p)
    final = plan.phase == Phase.FINAL_SYNTHESIS
    transcript = transcripts.get(final) if transcripts is not None else None
    if transcript is None:
        transcript = transcript_blocks(state, final=final)
        if transcripts is not None:
            transcripts[final] = transcript
    # Each prompt has blocks of its own: a breakpoint is taken off below for one prompt, not for its siblings.
    system, shared = system_blocks(state), [b.model_copy() for b in transcript]
    if tier != SHARED_TIER:
        # The cache is per model: a one-off call on another tier would pay 1.25x to write what nothing reads.
        for block in (*system, *shared):
            block.cache = False
    return Prompt(
        tier=tier,
        model=routes.model_for(state.discussion.options.models, state.personas, p, tier),
        system=system,
        shared=shared,
        instruction=instruction,
        max_tokens=max_tokens,
        purpose=Purpose(
            phase=plan.phase,
            persona=p.name,
            role=p.role.value,
            topic=state.discussion.round_topic or state.discussion.topic,
            round=plan.round,
            others=[x.name for x in state.personas if x.key != p.key],
            humans=_humans(state, plan),
            last_round=last,
        ),
    )
