"""The moderated round of seed 000: opening, statements, contrarian, rebuttals, cross-domain, synthesis."""

from __future__ import annotations

from collections.abc import Callable

from core.models import Persona, Phase, Role

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


def round_steps(personas: list[Persona]) -> list[tuple[int, Phase, list[Persona]]]:
    return [(i, phase, select(personas)) for i, (phase, select) in enumerate(ROUND_STEPS)]


def word_budget(phase: Phase, round_: int) -> int:
    """Budgets shrink in later rounds (seed 002): the group should converge, not repeat itself."""
    base = {
        Phase.OPENING: 160,
        Phase.STATEMENT: 220,
        Phase.COUNTERPOINT: 240,
        Phase.REBUTTAL: 160,
        Phase.ANALOGY: 200,
        Phase.ANSWER: 120,
        Phase.REOPENING: 180,
    }.get(phase, 200)
    factor = {1: 1.0, 2: 0.75}.get(round_, 0.6)
    return max(60, int(base * factor))
