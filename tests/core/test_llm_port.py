"""The LLM port's outcomes, the same for every provider: each client through its real SDK against its loopback
fake (the Anthropic Messages API, an OpenAI-compatible Chat Completions API)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from core.deliberation.schemas import RoundSynthesis
from core.llm import AnthropicLLM, LLMConfig, ModelPrice, cost
from core.llm_openai import OpenAICompatLLM, OpenAIConfig
from core.models import Phase
from core.ports import LLM, Block, LLMRefused, LLMUnavailable, Prompt, Purpose
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI

SECRET = "sk-port-test-SECRET-0123456789-do-not-leak"
GPT = ModelPrice(input_per_mtok=1.25, output_per_mtok=10.0, cache_write_mult=1.0)


@dataclass
class Provider:
    """One client and the knobs of its fake, named alike."""

    llm: LLM
    price: ModelPrice
    requests: Callable[[], int]
    fail: Callable[[int], None]  # the next n requests answer 429 (with a wait the SDK honours) before any output
    break_stream: Callable[[int], None]  # the next n streams break after a few pieces of text
    refuse: Callable[[], None]  # the next answer stops as a refusal (or a content filter) after a few words
    reply: Callable[[str], None]  # every answer says this


@pytest.fixture(params=["anthropic", "openai"])
async def provider(request: pytest.FixtureRequest) -> AsyncIterator[Provider]:
    if request.param == "anthropic":
        async with FakeAnthropic() as a:
            llm = AnthropicLLM(LLMConfig(api_key=SECRET, base_url=a.base_url, turn_retry_delay_s=0.0,
                                         thinking_room={"low": 0}))
            yield Provider(llm, LLMConfig(api_key="x").prices["claude-sonnet-5-5"], lambda: a.request_count,
                           lambda n: a.fail_next(n, status=429, retry_after_ms=10),
                           lambda n: a.break_stream_next(n), lambda: setattr(a, "refuse_next", 1),
                           lambda text: setattr(a, "reply", lambda body: text))
            await llm.aclose()
    else:
        async with FakeOpenAI(models=["gpt-5.1"], api_key=SECRET) as o:
            oai = OpenAICompatLLM(OpenAIConfig(api_key=SECRET, base_url=o.base_url, prices={"gpt-5.1": GPT},
                                               models={"medium": "gpt-5.1"}, turn_retry_delay_s=0.0,
                                               reasoning_room=0))
            yield Provider(oai, GPT, lambda: len(o.requests), lambda n: o.fail_next(n, retry_after="0.01"),
                           lambda n: o.break_stream_next(n), lambda: setattr(o, "filter_next", 1),
                           lambda text: setattr(o, "reply", lambda body: text))
            await oai.aclose()


def prompt(instruction: str = "Give your opening statement as Ada.", **kw: Any) -> Prompt:
    return Prompt(system=[Block(text="You are taking part in a council. " * 10, cache=True)],
                  shared=[Block(text="Moderator: we weigh release trains. " * 20, cache=True)],
                  instruction=instruction, purpose=Purpose(phase=Phase.STATEMENT, persona="Ada"), **kw)


async def test_a_turn_streams_its_text_and_is_priced_by_the_table(provider: Provider) -> None:
    seen: list[str] = []
    completion = await provider.llm.complete(prompt("Say something about trains."),
                                             on_text=lambda parts: seen.append("".join(parts)))
    assert "Say something about trains." in completion.text
    assert len(seen) > 1 and seen[-1] == completion.text
    usage = completion.usage
    assert usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens > 0 and usage.output_tokens > 0
    assert usage.cost_usd == pytest.approx(cost(usage, provider.price)) and usage.cost_usd > 0


async def test_a_structured_answer_is_parsed_into_its_schema(provider: Provider) -> None:
    synthesis, usage = await provider.llm.structured(prompt(), RoundSynthesis)
    assert isinstance(synthesis, RoundSynthesis) and usage.output_tokens > 0


async def test_a_rate_limit_is_waited_out_by_the_sdk(provider: Provider) -> None:
    provider.fail(2)
    assert (await provider.llm.complete(prompt())).text
    assert provider.requests() == 3


async def test_a_persistent_rate_limit_is_unavailable_and_says_no_secret(
        provider: Provider, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    provider.fail(10)
    with pytest.raises(LLMUnavailable, match=r"rate limit reached \(429\)") as raised:
        await provider.llm.complete(prompt())
    assert SECRET not in caplog.text and SECRET not in str(raised.value)


async def test_a_broken_stream_is_asked_again_whole(provider: Provider) -> None:
    provider.break_stream(1)
    completion = await provider.llm.complete(prompt())
    assert "Give your opening statement as Ada." in completion.text
    assert provider.requests() == 2


async def test_a_refusal_is_refused_with_its_cost_and_not_asked_again(provider: Provider) -> None:
    provider.refuse()
    with pytest.raises(LLMRefused, match="declined") as raised:
        await provider.llm.complete(prompt())
    assert provider.requests() == 1
    assert raised.value.usage is not None and raised.value.usage.cost_usd > 0


async def test_a_stop_for_length_gets_more_room_and_never_posts_a_cut_answer(provider: Provider) -> None:
    long = "A considered answer with reasons and a plan to try it. " * 30
    provider.reply(long)
    completion = await provider.llm.complete(prompt(max_tokens=300))
    assert completion.text == long
    assert provider.requests() == 2
