"""Prompt assembly (pure): shared rules and transcript first, the persona's own instruction last."""

from __future__ import annotations

from itertools import groupby

from core import flows
from core.flows.base import State, TurnPlan
from core.models import FINISHED_TURN, HumanMessage, Persona, Phase, Turn
from core.ports import Block, Prompt, Purpose, Tier

SHARED_TIER: Tier = "medium"  # the tier of the turns that share one cached prefix


def label(state: State, phase: Phase) -> str:
    return flows.get(state.discussion.flow).labels.get(phase, phase.value.replace("_", " ").capitalize())


def describe(p: Persona) -> str:
    parts = [f"- {p.name} ({p.role.value.replace('_', '-')}): {p.title}"]
    if p.expertise:
        parts.append(f"  expertise: {', '.join(p.expertise)}")
    if p.thinking_style:
        parts.append(f"  thinking style: {p.thinking_style}; bias: {p.bias}; tends to: {p.reply_tendency}")
    return "\n".join(parts)


def system_blocks(state: State) -> list[Block]:
    roster = "\n".join(describe(p) for p in state.personas) or "(the roster is being assembled)"
    rules = flows.get(state.discussion.flow).rules
    return [Block(text=f"{rules}\nThe council\n{roster}", cache=True)]


def human_block(m: HumanMessage) -> str:
    return f'<human name="{m.author_name}">\n{m.text}\n</human>'


def _turn_text(t: Turn, state: State) -> str:
    p = state.persona(t.persona_key)
    who = p.name if p else t.persona_key
    return f"[Round {t.round} · {label(state, t.phase)}] {who}:\n{t.text}"


def transcript_blocks(state: State) -> list[Block]:
    """One block per step and per human message, in time order, so each prefix stays stable."""
    d = state.discussion
    head = f"Topic: {d.topic}"
    if d.mode == "debate":
        head += "\nFormat: a debate. Experts should take clear pro or con positions."
    if d.context:
        head += f"\n\nContext the team gave (a chat thread):\n<context>\n{d.context[:6000]}\n</context>"
    items: list[tuple[object, str]] = []
    done = [t for t in state.turns if t.status in FINISHED_TURN and t.text and t.phase != Phase.ROSTER]
    for _, group in groupby(sorted(done, key=lambda t: (t.round, t.step)), key=lambda t: (t.round, t.step)):
        group_turns = list(group)
        when = max(t.finished_at or t.created_at for t in group_turns)
        items.append((when, "\n\n".join(_turn_text(t, state) for t in group_turns)))
    items += [(m.created_at, human_block(m)) for m in state.humans]
    items.sort(key=lambda item: item[0])  # type: ignore[arg-type,return-value]
    blocks = [Block(text=head)] + [Block(text=text) for _, text in items]
    blocks[-1].cache = True
    return blocks


def brief(p: Persona) -> str:
    lines = [f"You are {p.name}, {p.title}."]
    if p.expertise:
        lines.append(f"Your expertise: {', '.join(p.expertise)}.")
    if p.thinking_style:
        lines.append(f"Your thinking style is {p.thinking_style}; your natural bias: {p.bias}.")
    if p.reply_tendency:
        lines.append(f"You tend to: {p.reply_tendency}.")
    return " ".join(lines)


def language(state: State) -> str:
    """Everyone speaks the language asked for, or else the one the topic is written in."""
    lang = state.discussion.options.lang
    if lang:
        return f"Write in {lang} (the team asked for it), whatever language the topic or replies use."
    return "Write in the language the topic is written in."


def build(state: State, plan: TurnPlan) -> Prompt:
    p = state.persona(plan.persona_key)
    assert p is not None, plan.persona_key
    flow = flows.get(state.discussion.flow)
    instruction = (f"{brief(p)}\n\nYour turn ({label(state, plan.phase)}). {flow.task(state, plan, p)}\n"
                   f"{language(state)}")
    max_tokens = 4096 if flow.schema(plan.phase, p) is not None else 1500
    tier = flow.tier(state, plan, p)
    system, shared = system_blocks(state), transcript_blocks(state)
    if tier != SHARED_TIER:
        # The cache is per model: a one-off call on another tier would pay 1.25x to write what nothing reads.
        for block in (*system, *shared):
            block.cache = False
    return Prompt(
        tier=tier,
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
            humans=sorted({h.author_name for h in state.humans}),
        ),
    )
