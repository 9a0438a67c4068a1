"""OpenAICompatLLM through the real openai SDK against the loopback fake Chat Completions API."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from core.deliberation.schemas import RosterSpec, RoundSynthesis
from core.llm import ModelPrice, cost
from core.llm_openai import OpenAICompatLLM, OpenAIConfig
from core.models import Phase, Usage
from core.ports import Block, LLMRefused, LLMUnavailable, Prompt, Purpose
from tests.fakes.openai_server import REFUSAL, FakeOpenAI

SECRET = "sk-proj-test-SECRET-0123456789-do-not-leak"
RULES = "You are taking part in a moderated council deliberation. Be concise and concrete. " * 6
TRANSCRIPT = "Moderator: we weigh trunk-based development against long-lived branches. " * 70  # > 1024 tok
PRICES = {"gpt-5.1": ModelPrice(input_per_mtok=1.25, output_per_mtok=10.0, cache_write_mult=1.0),
          "llama3.3": ModelPrice(input_per_mtok=0.0, output_per_mtok=0.0)}
MakeLLM = Callable[..., OpenAICompatLLM]


def prompt(instruction: str = "Give your opening statement as Ada.", **kw: Any) -> Prompt:
    fields: dict[str, Any] = {
        "model": "gpt-5.1",
        "system": [Block(text=RULES, cache=True)],
        "shared": [Block(text=TRANSCRIPT, cache=True)],
        "instruction": instruction,
        "purpose": Purpose(phase=Phase.STATEMENT, persona="Ada", topic="trunk-based development"),
    }
    return Prompt(**{**fields, **kw})


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI(models=["gpt-5.1"], api_key=SECRET) as server:
        yield server


@pytest.fixture
async def make_llm(fake: FakeOpenAI) -> AsyncIterator[MakeLLM]:
    made: list[OpenAICompatLLM] = []

    def make(**overrides: Any) -> OpenAICompatLLM:
        fields: dict[str, Any] = {"api_key": SECRET, "base_url": fake.base_url, "prices": PRICES,
                                  "turn_retry_delay_s": 0.0, "reasoning_room": 0}
        made.append(OpenAICompatLLM(OpenAIConfig(**{**fields, **overrides})))
        return made[-1]

    yield make
    for llm in made:
        await llm.aclose()


def dollars(input_tokens: int, cached: int, output: int) -> float:
    """OpenAI's rates for gpt-5.1 in this table: $1.25 in, a tenth of it for a cached token, $10 out."""
    return (input_tokens * 1.25 + cached * 1.25 * 0.1 + output * 10.0) / 1_000_000


async def test_complete_streams_text_with_usage_and_cost(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    seen: list[str] = []
    completion = await make_llm().complete(prompt("State your view on release trains, briefly."),
                                           on_text=lambda parts: seen.append("".join(parts)))

    assert "State your view on release trains, briefly." in completion.text
    assert len(seen) > 2 and seen[-1] == completion.text  # the text arrived piece by piece
    body = fake.requests[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "gpt-5.1" and body["max_completion_tokens"] == 1024
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"].startswith(TRANSCRIPT.strip()[:50])
    assert "temperature" not in body
    billed = fake.ledger[0]
    usage = completion.usage
    assert usage.model == "gpt-5.1"
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (
        billed["prompt_tokens"], 0, billed["completion_tokens"])
    assert usage.cost_usd == pytest.approx(dollars(billed["prompt_tokens"], 0, billed["completion_tokens"]))


async def test_the_server_s_prefix_cache_is_billed_as_cache_reads(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    llm = make_llm()
    await llm.complete(prompt("Ada, your statement."))
    second = await llm.complete(prompt("Grace, your statement."))

    cached = fake.ledger[1]["prompt_tokens_details"]["cached_tokens"]
    assert cached >= 1024  # the shared rules and transcript
    u = second.usage
    assert (u.input_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
        fake.ledger[1]["prompt_tokens"] - cached, cached, 0)
    assert u.cost_usd == pytest.approx(dollars(u.input_tokens, cached, u.output_tokens))


async def test_a_server_without_a_prompt_cache_bills_every_prompt_token_as_input() -> None:
    async with FakeOpenAI(models=["llama3.3"], caching=False) as ollama:
        llm = OpenAICompatLLM(OpenAIConfig(provider="ollama", api_key="unused", base_url=ollama.base_url,
                                           prices={"llama3.3": ModelPrice(input_per_mtok=0.2, output_per_mtok=0.6)}))
        try:
            await llm.complete(prompt(model="llama3.3"))
            second = await llm.complete(prompt("Grace, your statement.", model="llama3.3"))
        finally:
            await llm.aclose()
    assert "prompt_tokens_details" not in ollama.ledger[1]
    assert second.usage.input_tokens == ollama.ledger[1]["prompt_tokens"]
    assert second.usage.cache_read_tokens == 0
    assert second.usage.cost_usd == pytest.approx(
        (ollama.ledger[1]["prompt_tokens"] * 0.2 + ollama.ledger[1]["completion_tokens"] * 0.6) / 1_000_000)


async def test_a_tier_without_a_named_model_takes_the_configured_one(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    await make_llm(models={"heavy": "gpt-5.1"}).complete(prompt(model="", tier="heavy"))
    assert fake.requests[0]["model"] == "gpt-5.1"
    with pytest.raises(LLMUnavailable, match="no light model is configured on openai"):
        await make_llm().complete(prompt(model="", tier="light"))


async def test_structured_answer_by_json_schema(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    synthesis, usage = await make_llm().structured(prompt(), RoundSynthesis)

    assert isinstance(synthesis, RoundSynthesis)
    fmt = fake.requests[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "RoundSynthesis"
    assert fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    assert "tools" not in fake.requests[0]
    assert usage.output_tokens == fake.ledger[0]["completion_tokens"] > 0


async def test_structured_answer_by_a_forced_tool_call_where_the_server_has_no_json_schema(
        make_llm: MakeLLM) -> None:
    async with FakeOpenAI(models=["gpt-5.1"], json_schema=False) as vllm:
        roster, _ = await make_llm(base_url=vllm.base_url, json_schema=False).structured(prompt(), RosterSpec)
        assert isinstance(roster, RosterSpec) and roster.experts
        body = vllm.requests[0]
        assert "response_format" not in body
        assert body["tool_choice"] == {"type": "function", "function": {"name": "RosterSpec"}}
        # The same request with a json_schema format is the 400 such a server answers.
        with pytest.raises(LLMUnavailable, match=r"rejected the request \(400\)"):
            await make_llm(base_url=vllm.base_url).structured(prompt(), RosterSpec)


async def test_a_structured_refusal_is_refused_with_its_cost(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    fake.refuse_next = 1
    with pytest.raises(LLMRefused, match="declined") as raised:
        await make_llm().structured(prompt(), RoundSynthesis)
    assert raised.value.usage is not None
    assert raised.value.usage.output_tokens == fake.ledger[0]["completion_tokens"] > 0
    assert REFUSAL not in str(raised.value)


async def test_content_filter_is_a_refusal_with_its_cost(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    fake.filter_next = 1
    with pytest.raises(LLMRefused) as raised:
        await make_llm().complete(prompt())
    assert len(fake.requests) == 1  # asking again the same way will not help
    assert raised.value.usage is not None and raised.value.usage.cost_usd > 0


async def test_a_stop_for_length_is_asked_again_with_twice_the_room_and_both_are_paid(
        fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    long = "A considered answer with reasons. " * 40  # about 340 tokens
    fake.reply = lambda body: long
    completion = await make_llm().complete(prompt(max_tokens=200))

    assert [r["max_completion_tokens"] for r in fake.requests] == [200, 400]
    assert completion.text == long  # never a cut answer
    first, second = fake.ledger
    assert completion.usage.output_tokens == first["completion_tokens"] + second["completion_tokens"]
    assert completion.usage.cost_usd == pytest.approx(
        cost(Usage(input_tokens=first["prompt_tokens"] - first["prompt_tokens_details"]["cached_tokens"],
                   cache_read_tokens=first["prompt_tokens_details"]["cached_tokens"],
                   output_tokens=first["completion_tokens"]), PRICES["gpt-5.1"])
        + cost(Usage(input_tokens=second["prompt_tokens"] - second["prompt_tokens_details"]["cached_tokens"],
                     cache_read_tokens=second["prompt_tokens_details"]["cached_tokens"],
                     output_tokens=second["completion_tokens"]), PRICES["gpt-5.1"]))


async def test_an_answer_that_never_fits_is_unavailable_never_posted_cut(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    fake.reply = lambda body: "word " * 4000
    with pytest.raises(LLMUnavailable, match="did not fit") as raised:
        await make_llm(room_attempts=2).complete(prompt(max_tokens=100))
    assert [r["max_completion_tokens"] for r in fake.requests] == [100, 200]
    assert raised.value.usage is not None and raised.value.usage.output_tokens == 300


async def test_429_with_retry_after_is_retried_by_the_sdk(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    fake.fail_next(2, status=429, retry_after="0.01")
    completion = await make_llm(max_retries=2).complete(prompt())
    assert len(fake.requests) == 3 and completion.text


async def test_a_retry_after_longer_than_the_sdk_waits_is_not_retried(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    """The SDK reads Retry-After: an hour is past what it waits, so the call fails at once instead of hammering."""
    fake.fail_next(1, status=429, retry_after="3600")
    with pytest.raises(LLMUnavailable, match=r"rate limit reached \(429\)"):
        await make_llm(max_retries=3).complete(prompt())
    assert len(fake.requests) == 1


async def test_persistent_rate_limit_is_unavailable_and_leaks_no_secret(
        fake: FakeOpenAI, make_llm: MakeLLM, caplog: pytest.LogCaptureFixture) -> None:
    fake.fail_next(3, status=429, retry_after="0.01")
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMUnavailable) as raised:
        await make_llm(max_retries=2).complete(prompt())
    assert str(raised.value) == "the openai API rate limit reached (429)"
    assert len(fake.requests) == 3
    assert SECRET not in caplog.text and SECRET not in str(raised.value)


async def test_a_wrong_key_is_not_retried(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    with pytest.raises(LLMUnavailable, match=r"rejected the API key \(401\)"):
        await make_llm(api_key="sk-wrong").complete(prompt())
    assert fake.requests == []  # refused before the body was read


@pytest.mark.parametrize("how", ["drop", "error"])
async def test_a_broken_stream_is_asked_again_whole(fake: FakeOpenAI, make_llm: MakeLLM, how: str) -> None:
    fake.break_stream_next(how=how, after_chunks=2)
    seen: list[list[str]] = []
    completion = await make_llm().complete(prompt(), on_text=seen.append)
    assert len(fake.requests) == 2
    assert "Give your opening statement as Ada." in completion.text
    assert len({id(parts) for parts in seen}) == 2  # the second attempt wrote into a new list


async def test_a_stream_that_keeps_breaking_is_unavailable(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    fake.break_stream_next(2)
    with pytest.raises(LLMUnavailable, match="stream interrupted") as raised:
        await make_llm().complete(prompt())
    assert raised.value.usage is None  # no usage arrived: nothing known to charge


async def test_a_broken_stream_whose_usage_had_arrived_is_charged(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    fake.break_stream_next(2, with_usage=True)
    with pytest.raises(LLMUnavailable) as raised:
        await make_llm().complete(prompt())
    assert raised.value.usage is not None
    assert raised.value.usage.output_tokens == sum(b["completion_tokens"] for b in fake.ledger)
    assert raised.value.usage.cost_usd > 0


async def test_an_unknown_model_is_unavailable(fake: FakeOpenAI, make_llm: MakeLLM) -> None:
    with pytest.raises(LLMUnavailable, match=r"model not found \(404\)"):
        await make_llm(prices={**PRICES, "gpt-9": PRICES["gpt-5.1"]}).complete(prompt(model="gpt-9"))


async def test_unreachable_server_is_unavailable(make_llm: MakeLLM) -> None:
    async with FakeOpenAI() as gone:
        url = gone.base_url  # a port nothing listens on once it stopped
    with pytest.raises(LLMUnavailable, match="the openai API unreachable"):
        await make_llm(base_url=url, max_retries=0).complete(prompt())


async def test_no_search_tool_means_no_check() -> None:
    llm = OpenAICompatLLM(OpenAIConfig(api_key="x", prices=PRICES))
    searched = await llm.search(prompt())
    await llm.aclose()
    assert searched.refused and "web search" in searched.refused and searched.blocks == []


def test_worst_case_is_the_whole_cap_and_the_input() -> None:
    llm = OpenAICompatLLM(OpenAIConfig(api_key="x", prices=PRICES, reasoning_room=1000))
    p = prompt(max_tokens=500)
    chars = len(RULES) + len(TRANSCRIPT) + len(p.instruction)
    assert llm.worst_case_usd(p) == pytest.approx((-(-chars // 3) * 1.25 + 1500 * 10.0) / 1_000_000)


def test_the_key_is_never_in_the_config_s_repr() -> None:
    assert SECRET not in repr(OpenAIConfig(api_key=SECRET, prices=PRICES))
