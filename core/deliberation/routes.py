"""Which provider and model each call runs on (pure): a models spec read into routes, layered, checked against
the providers a deployment has, and a turn's or a seat's model picked from them."""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection

from core.deliberation import flows
from core.deliberation.flows.base import State, TurnPlan
from core.models import ModelRoutes, Persona, Phase, Role

TIERS = ("light", "medium", "heavy")
EXAMPLE = "`openai:gpt-5.1 anthropic:claude-sonnet-5-5 ollama:llama3.3` or `heavy=anthropic:claude-opus-5-5`"
_PROVIDER = re.compile(r"[a-z][a-z0-9_-]{0,31}")
# Seats that write for the whole council rather than speak in it: a models list is dealt to the others.
_WRITERS = (Role.MODERATOR, Role.REFEREE, Role.FACT_CHECKER)


def valid_provider(name: str) -> bool:
    return bool(_PROVIDER.fullmatch(name))


def split(ref: str) -> tuple[str, str]:
    """"provider:model" into its two parts (a model id may hold colons itself, as Ollama's tags do)."""
    provider, _, model = ref.partition(":")
    return provider, model


def parse(text: str) -> tuple[ModelRoutes, list[str]]:
    """`[tier=|persona=]provider:model` entries, separated by spaces or commas: a tier's model, a persona's (by
    name), or, bare, one dealt to the speaking seats in turn; with a sentence for each entry that is not one."""
    routes = ModelRoutes()
    problems: list[str] = []
    try:
        words = shlex.split(text.replace(",", " "))
    except ValueError:
        words = text.replace(",", " ").split()
    for word in words:
        key, sep, ref = word.rpartition("=") if "=" in word else ("", "", word)
        provider, model = split(ref.strip())
        if not _PROVIDER.fullmatch(provider) or not model.strip() or any(c.isspace() for c in model):
            problems.append(f"`{word}` is not `provider:model` (for example {EXAMPLE})")
            continue
        ref = f"{provider}:{model}"
        key = key.strip().lower()
        if sep and not key:
            problems.append(f"`{word}` names nothing before `=` (a tier: {', '.join(TIERS)}, or a persona's name)")
        elif key in TIERS:
            routes.tiers[key] = ref
        elif key:
            routes.personas[key] = ref
        else:
            routes.seats.append(ref)
    return routes, problems


def describe(routes: ModelRoutes) -> str:
    """The routes as a spec that `parse` reads back."""
    words = [f"{t}={routes.tiers[t]}" for t in TIERS if t in routes.tiers]
    words += [shlex.quote(f"{name}={ref}") for name, ref in routes.personas.items()]
    return " ".join([*words, *routes.seats])


def layered(over: ModelRoutes, under: ModelRoutes) -> ModelRoutes:
    """`over`'s routes, and `under`'s where `over` says nothing (a seats list is taken whole, never mixed)."""
    return ModelRoutes(tiers={**under.tiers, **over.tiers}, seats=list(over.seats or under.seats),
                       personas={**under.personas, **over.personas})


def problems(routes: ModelRoutes, providers: Collection[str], priced: Collection[str]) -> list[str]:
    """What a deployment cannot run of these routes: a provider it has not configured, a model without a price
    (budgets need one for every model)."""
    out: list[str] = []
    refs = [*routes.tiers.values(), *routes.seats, *routes.personas.values()]
    for ref in dict.fromkeys(refs):
        provider, model = split(ref)
        if provider not in providers:
            have = ", ".join(f"`{p}`" for p in sorted(providers)) or "none"
            out.append(f"`{provider}` is not a configured provider (configured: {have})")
        elif model not in priced:
            out.append(f"`{model}` has no price: add it to COUNCIL_PRICES (a self-hosted model can cost [0, 0])")
    return list(dict.fromkeys(out))


def _speakers(personas: list[Persona]) -> list[Persona]:
    return [p for p in personas if p.role not in _WRITERS and not p.held_by]


def seat_model(routes: ModelRoutes, personas: list[Persona], persona: Persona) -> str:
    """The model a persona is given by name or by its place among the speaking seats ("" when neither)."""
    named = routes.personas.get(persona.name.lower()) or routes.personas.get(persona.key.lower())
    if named:
        return named
    speakers = [p.key for p in _speakers(personas)]
    if routes.seats and persona.key in speakers:
        return routes.seats[speakers.index(persona.key) % len(routes.seats)]
    return ""


def model_for(routes: ModelRoutes, personas: list[Persona], persona: Persona, tier: str) -> str:
    """A turn's model: the persona's own, else its tier's ("" leaves it to the deployment's tier model)."""
    return seat_model(routes, personas, persona) or routes.tiers.get(tier, "")


def annotate(state: State) -> list[Persona]:
    """The personas, each with the model its usual turns run on (a statement; the writers' syntheses), as the
    header and the page show it. Seats held by people run on none."""
    flow = flows.get(state.discussion.flow)
    routes = state.discussion.options.models
    out = []
    for p in state.personas:
        if p.held_by:
            out.append(p)
            continue
        phase = {Role.REFEREE: Phase.FINAL_SYNTHESIS, Role.MODERATOR: Phase.ROUND_SYNTHESIS}.get(p.role,
                                                                                                  Phase.STATEMENT)
        plan = TurnPlan(key="", round=state.discussion.round, step=0, phase=phase, persona_key=p.key)
        out.append(p.model_copy(update={"model": model_for(routes, state.personas, p,
                                                           flow.tier(state, plan, p))}))
    return out
