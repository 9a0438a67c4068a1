"""Routes (pure): a models spec read, layered and dealt to the seats; and the router that follows them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.deliberation import prompts, routes
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.flows.council import DEFAULT_ADVISORS as ADVISORS
from core.deliberation.flows.council import REFEREE
from core.llm_router import RoutedLLM
from core.models import Discussion, FlowOptions, ModelRoutes, Phase, Usage
from core.ports import LLM, Block, Completion, LLMUnavailable, Prompt, Purpose, Searched, T, TextSink

NOW = datetime(2026, 12, 7, tzinfo=UTC)


def test_a_spec_reads_tiers_seats_and_personas() -> None:
    got, problems = routes.parse("heavy=anthropic:claude-opus-5-5, openai:gpt-5.1 ollama:llama3.1:8b "
                                 "'Floor Lead=openrouter:meta/llama-4' skeptic=openai:o5")
    assert problems == []
    assert got == ModelRoutes(tiers={"heavy": "anthropic:claude-opus-5-5"},
                              seats=["openai:gpt-5.1", "ollama:llama3.1:8b"],
                              personas={"floor lead": "openrouter:meta/llama-4", "skeptic": "openai:o5"})


@pytest.mark.parametrize("word", ["gpt-5.1", ":gpt", "openai:", "OpenAI:gpt", "=openai:gpt-5.1"])
def test_what_is_not_a_reference_is_named(word: str) -> None:
    got, problems = routes.parse(f"openai:gpt-5.1 {word}")
    assert got.seats == ["openai:gpt-5.1"] and len(problems) == 1 and word.split("=")[-1] in problems[0]


_provider = st.from_regex(r"[a-z][a-z0-9_-]{0,8}", fullmatch=True)
_model = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:/-]{0,20}", fullmatch=True)
_ref = st.builds(lambda p, m: f"{p}:{m}", _provider, _model)


@given(st.builds(ModelRoutes, tiers=st.dictionaries(st.sampled_from(routes.TIERS), _ref),
                 seats=st.lists(_ref, max_size=4),
                 personas=st.dictionaries(st.from_regex(r"[a-z][a-z ]{0,10}[a-z]", fullmatch=True), _ref,
                                          max_size=3)))
@example(ModelRoutes())  # nothing routed
@example(ModelRoutes(tiers={"light": "a:b"}, seats=["a:b", "a:b"], personas={"ada lovelace": "x-y:m.1/2:3"}))
def test_a_described_spec_reads_back_the_same(r: ModelRoutes) -> None:
    assert routes.parse(routes.describe(r)) == (r, [])


def test_a_start_s_routes_sit_over_the_deployment_s() -> None:
    deployment = ModelRoutes(tiers={"light": "anthropic:h", "heavy": "anthropic:o"}, seats=["a:x", "b:y"])
    start = ModelRoutes(tiers={"heavy": "openai:o5"}, seats=["c:z"])
    assert routes.layered(start, deployment) == ModelRoutes(
        tiers={"light": "anthropic:h", "heavy": "openai:o5"}, seats=["c:z"])
    assert routes.layered(ModelRoutes(), deployment).seats == ["a:x", "b:y"]


def council(models: ModelRoutes) -> State:
    d = Discussion(id="d1", topic="Four-day week?", flow="council", options=FlowOptions(models=models),
                   created_at=NOW, updated_at=NOW)
    return State(discussion=d, personas=[*ADVISORS, REFEREE], turns=[])


def test_the_seats_list_is_dealt_to_the_speakers_in_turn_and_the_writers_keep_their_tier() -> None:
    state = council(ModelRoutes(tiers={"medium": "anthropic:claude-sonnet-5-5"}, seats=["openai:a", "ollama:b"]))
    shown = {p.key: p.model for p in routes.annotate(state)}
    assert [shown[p.key] for p in ADVISORS] == ["openai:a", "ollama:b", "openai:a"]
    assert shown[REFEREE.key] == "anthropic:claude-sonnet-5-5"


def test_a_persona_named_takes_its_own_model_over_the_seats() -> None:
    state = council(ModelRoutes(seats=["openai:a"], personas={"skeptic": "ollama:b", "referee": "openai:c"}))
    shown = {p.name: p.model for p in routes.annotate(state)}
    assert shown == {"Pragmatist": "openai:a", "Visionary": "openai:a", "Skeptic": "ollama:b", "Referee": "openai:c"}


def test_a_seat_held_by_a_person_runs_on_no_model_and_is_not_dealt_one() -> None:
    held = ADVISORS[0].model_copy(update={"held_by": "U7"})
    personas = [held, *ADVISORS[1:]]
    r = ModelRoutes(seats=["openai:a", "ollama:b"])
    assert routes.seat_model(r, personas, held) == ""
    assert [routes.seat_model(r, personas, p) for p in ADVISORS[1:]] == ["openai:a", "ollama:b"]


def test_a_turn_s_prompt_names_the_model_its_persona_was_dealt() -> None:
    state = council(ModelRoutes(seats=["openai:a", "ollama:b"]))
    skeptic = ADVISORS[2]
    prompt = prompts.build(state, TurnPlan(key="k", round=1, step=1, phase=Phase.ADVISOR_OPENING,
                                           persona_key=skeptic.key))
    assert prompt.model == "openai:a"
    assert council(ModelRoutes()).discussion.options.models == ModelRoutes()
    bare = prompts.build(council(ModelRoutes()), TurnPlan(key="k", round=1, step=1, phase=Phase.ADVISOR_OPENING,
                                                         persona_key=skeptic.key))
    assert bare.model == ""  # the deployment's tier model


def test_problems_name_an_unknown_provider_and_an_unpriced_model() -> None:
    r = ModelRoutes(seats=["openai:gpt-5.1", "mistral:large", "openai:gpt-9"])
    assert routes.problems(r, {"openai", "anthropic"}, {"gpt-5.1"}) == [
        "`mistral` is not a configured provider (configured: `anthropic`, `openai`)",
        "`gpt-9` has no price: add it to COUNCIL_PRICES (a self-hosted model can cost [0, 0])"]


class Echo:
    """A provider that says which model it was asked for."""

    offline = False

    def __init__(self) -> None:
        self.asked: list[Prompt] = []

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        self.asked.append(prompt)
        return Completion(text=prompt.model, usage=Usage(model=prompt.model))

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        raise AssertionError("not asked")

    async def search(self, prompt: Prompt) -> Searched:
        return Searched(refused=f"no search on {prompt.model}")

    def worst_case_usd(self, prompt: Prompt, *, search: bool = False) -> float:
        return {"m-light": 1.0, "m-big": 2.0}.get(prompt.model, 0.5)


def bare(model: str = "", tier: str = "light") -> Prompt:
    return Prompt(tier=tier, model=model, system=[Block(text="rules")], shared=[], instruction="go",  # type: ignore[arg-type]
                  purpose=Purpose(phase=Phase.STATEMENT))


async def test_the_router_sends_each_prompt_to_its_provider_with_the_bare_model() -> None:
    a, b = Echo(), Echo()
    providers: dict[str, LLM] = {"a": a, "b": b}
    router = RoutedLLM(providers, {"light": "a:m-light", "medium": "a:m-light", "heavy": "b:m-big"},
                       priced={"m-light", "m-big", "m-other"})
    assert (await router.complete(bare())).text == "m-light"
    assert (await router.complete(bare(tier="heavy"))).text == "m-big"
    assert (await router.complete(bare("b:m-other"))).text == "m-other"
    assert [p.model for p in a.asked] == ["m-light"] and [p.model for p in b.asked] == ["m-big", "m-other"]
    assert router.worst_case_usd(bare(tier="heavy")) == 2.0
    with pytest.raises(LLMUnavailable, match="`gone` is not configured"):
        await router.complete(bare("gone:m-light"))
    with pytest.raises(LLMUnavailable, match="`m-free` has no price"):
        await router.complete(bare("a:m-free"))
    assert router.worst_case_usd(bare("gone:m-light")) == 1.0  # reserved as its tier's model would be
    assert (await router.search(bare("gone:x"))).refused.startswith("the provider `gone`")


def test_a_router_whose_tier_names_no_provider_is_refused() -> None:
    with pytest.raises(ValueError, match="the heavy tier's model 'c:x' names no configured provider"):
        RoutedLLM({"a": Echo()}, {"heavy": "c:x"}, priced={"x"})
