"""Who a finished roster turn seats, per flow (pure): experts, domain owners, or open-floor slots."""

from __future__ import annotations

from typing import Any

from core.deliberation.flows.open_floor import NAME_CULTURES
from core.deliberation.roster import EXPERT_ICONS, as_role, clean_name, clean_title, experts_from_spec, full_roster
from core.deliberation.schemas import ExpertSpec, FloorPlan, RosterSpec, Slot
from core.models import Discussion, Persona, Role


def roster(d: Discussion, seats: list[Persona], data: dict[str, Any] | None) -> list[Persona]:
    """The roster a ROSTER turn's structured output seats, beside the flow's fixed seats."""
    if d.flow == "meeting":
        owners = as_role(experts_from_spec(RosterSpec.model_validate(data).experts, d.experts), Role.OWNER)
        return [*[p for p in seats if p.role == Role.MODERATOR], *owners]
    if d.flow == "open":
        return [*[p for p in seats if p.role == Role.MODERATOR], *slots(FloorPlan.model_validate(data), d.experts)]
    return full_roster(experts_from_spec(RosterSpec.model_validate(data).experts, d.experts))


def outliers(count: int) -> set[int]:
    """About one participant in five is an outlier: the last slot of every five, and one at least from three up."""
    picked = {i for i in range(count) if i % 5 == 4}
    if not picked and count >= 3:
        picked = {count - 1}
    return picked


def slots(plan: FloorPlan, count: int) -> list[Persona]:
    """Placeholders for the open floor's participants, one per slot, each with its own name culture."""
    used: set[str] = set()
    out = []
    given = list(plan.slots[:count])
    while len(given) < count:  # a short plan is filled with open briefs rather than running short-handed
        given.append(Slot(brief="A practitioner with a view of their own", name_culture="", position="undecided",
                          tone="plain"))
    for i, slot in enumerate(given):
        culture = slot.name_culture.strip()
        if not culture or culture.lower() in used:
            culture = next(c for c in [*NAME_CULTURES, f"culture {i}"] if c.lower() not in used)
        used.add(culture.lower())
        note = f"name culture: {culture}" + ("; outlier" if i in outliers(count) else "")
        out.append(Persona(key=f"slot{i + 1}", name=f"Participant {i + 1}", role=Role.EXPERT,
                           title=clean_title(slot.brief, 200), thinking_style=slot.tone.strip()[:80],
                           bias=slot.position.strip()[:200], reply_tendency=note,
                           icon=EXPERT_ICONS[i % len(EXPERT_ICONS)]))
    return out


def seat(slot: Persona, spec: ExpertSpec) -> Persona:
    """The participant a slot's persona turn created; the key stays, so earlier references still hold."""
    return slot.model_copy(update={
        "name": clean_name(spec.name) or slot.name, "title": clean_title(spec.title, 120) or slot.title[:120],
        "expertise": (spec.expertise or ["their own experience"])[:6], "thinking_style": spec.thinking_style,
        "bias": spec.bias, "reply_tendency": f"{spec.reply_tendency} ({slot.reply_tendency})".strip(),
    })
