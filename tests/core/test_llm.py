"""AnthropicLLM through the real anthropic SDK against the loopback fake Messages API."""

from __future__ import annotations

import asyncio
import itertools
import logging
import math
import sys
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pydantic import ValidationError

from bot.settings import Settings
from bot.wiring import STREAM_STRETCHES_A_PASS, build_llm
from core.deliberation.schemas import RosterSpec, RoundSynthesis
from core.llm import AnthropicLLM, LLMConfig, ModelPrice, SearchConfig, cost
from core.llm_router import RoutedLLM
from core.models import Phase, Usage
from core.ports import Block, LLMRefused, LLMUnavailable, Prompt, Purpose
from tests.fakes.anthropic_server import FakeAnthropic, default_reply

SECRET = "sk-ant-test-SECRET-0123456789-do-not-leak"
ROOT = Path(__file__).resolve().parents[2]
RULES = "You are taking part in a moderated council deliberation. Be concise and concrete. " * 6
TRANSCRIPT = "Moderator: we weigh trunk-based development against long-lived branches. " * 70  # > 1024 tok

STANCE_ASK = "End with one last line: Stance: <label>"
MakeLLM = Callable[..., AnthropicLLM]


def prompt(instruction: str = "Give your opening statement as Ada.", **kw: Any) -> Prompt:
    fields: dict[str, Any] = {
        "system": [Block(text=RULES, cache=True)],
        "shared": [Block(text=TRANSCRIPT, cache=True)],
        "instruction": instruction,
        "purpose": Purpose(phase=Phase.STATEMENT, persona="Ada", topic="trunk-based development"),
    }
    return Prompt(**{**fields, **kw})


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


@pytest.fixture
async def make_llm(fake: FakeAnthropic) -> AsyncIterator[MakeLLM]:
    made: list[AnthropicLLM] = []

    def make(**overrides: Any) -> AnthropicLLM:
        fields: dict[str, Any] = {"api_key": SECRET, "base_url": fake.base_url, "turn_retry_delay_s": 0.0}
        made.append(AnthropicLLM(LLMConfig(**{**fields, **overrides})))
        return made[-1]

    yield make
    for llm in made:
        await llm.aclose()


def expected_cost(usage: Usage, price_in: float, price_out: float) -> float:
    dollars = usage.input_tokens * price_in + usage.cache_write_tokens * price_in * 1.25
    dollars += usage.cache_read_tokens * price_in * 0.1 + usage.output_tokens * price_out
    return dollars / 1_000_000


async def test_complete_streams_text_with_usage_and_cost(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    completion = await make_llm().complete(prompt("State your view on release trains, briefly."))

    assert "State your view on release trains, briefly." in completion.text
    body = fake.requests[0]
    assert body["stream"] is True
    assert body["model"] == "claude-sonnet-5-5"
    assert body["max_tokens"] == 1024 + LLMConfig(api_key=SECRET).thinking_room["low"]
    usage = completion.usage
    assert usage.model == "claude-sonnet-5-5"
    assert usage.output_tokens == fake.output_tokens == math.ceil(len(completion.text) / 4)
    assert usage.input_tokens == fake.input_tokens > 0
    assert usage.cache_write_tokens == fake.cache_write_tokens > 1024
    assert usage.cost_usd == pytest.approx(expected_cost(usage, 2.0, 10.0))
    assert usage.cost_usd > 0


async def test_tier_maps_to_the_configured_model_and_price(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.serve("m-light", "m-medium", "m-heavy")
    llm = make_llm(
        models={"light": "m-light", "medium": "m-medium", "heavy": "m-heavy"},
        prices={m: ModelPrice(input_per_mtok=1, output_per_mtok=3) for m in ("m-light", "m-medium", "m-heavy")},
    )
    completion = await llm.complete(prompt(tier="heavy"))

    assert fake.requests[0]["model"] == completion.usage.model == "m-heavy"
    assert completion.usage.cost_usd == pytest.approx(expected_cost(completion.usage, 1, 3))


async def test_cache_breakpoints_go_on_the_marked_blocks_only(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    shaped = prompt(
        "Your turn, Ada.",
        system=[Block(text="rules one"), Block(text="rules two", cache=True)],
        shared=[Block(text="topic"), Block(text="transcript", cache=True), Block(text="", cache=False)],
    )
    await make_llm().complete(shaped)

    ephemeral = {"type": "ephemeral"}
    body = fake.requests[0]
    assert body["system"] == [
        {"type": "text", "text": "rules one"},
        {"type": "text", "text": "rules two", "cache_control": ephemeral},
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "topic"},
                {"type": "text", "text": "transcript", "cache_control": ephemeral},
                {"type": "text", "text": "Your turn, Ada."},
            ],
        }
    ]


async def test_second_persona_reads_the_shared_prefix_from_cache(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm()
    first = await llm.complete(prompt("Opening statement as Ada."))
    second = await llm.complete(prompt("Opening statement as Bram, the contrarian."))

    assert first.usage.cache_read_tokens == 0
    assert first.usage.cache_write_tokens > 1024
    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == 0
    assert second.usage.cost_usd < first.usage.cost_usd
    assert fake.cache_read_tokens == second.usage.cache_read_tokens


async def test_growing_transcript_reads_the_old_prefix_and_writes_the_new_part(
    fake: FakeAnthropic, make_llm: MakeLLM
) -> None:
    llm = make_llm()
    first = await llm.complete(prompt())
    grown = [Block(text=TRANSCRIPT), Block(text="Ada: ship behind flags. " * 20, cache=True)]
    second = await llm.complete(prompt("Counterpoint as Bram.", shared=grown))

    assert second.usage.cache_read_tokens == first.usage.cache_write_tokens
    assert second.usage.cache_write_tokens == math.ceil(len("Ada: ship behind flags. " * 20) / 4)


async def test_a_cache_entry_lapses_five_minutes_after_its_last_use(make_llm: MakeLLM) -> None:
    now = [1000.0]
    async with FakeAnthropic(clock=lambda: now[0]) as fake:
        llm = make_llm(base_url=fake.base_url)
        first = await llm.complete(prompt())
        now[0] += 299  # read within the 5 minutes: a hit, which starts the 5 minutes again
        kept = await llm.complete(prompt("Opening statement as Bram."))
        now[0] += 299
        again = await llm.complete(prompt("Opening statement as Cleo."))
        now[0] += 301  # unused for more than 5 minutes: gone, written again at the write price
        lapsed = await llm.complete(prompt("Opening statement as Dov."))

    assert kept.usage.cache_read_tokens == again.usage.cache_read_tokens == first.usage.cache_write_tokens > 0
    assert lapsed.usage.cache_read_tokens == 0
    assert lapsed.usage.cache_write_tokens == first.usage.cache_write_tokens


async def test_an_unknown_model_id_is_refused_as_the_api_does(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm(models={"light": "claude-haiku-5-5", "medium": "claude-sonnet-9-9", "heavy": "claude-opus-5-5"},
                   prices={"claude-haiku-5-5": ModelPrice(input_per_mtok=1, output_per_mtok=1),
                           "claude-sonnet-9-9": ModelPrice(input_per_mtok=1, output_per_mtok=1),
                           "claude-opus-5-5": ModelPrice(input_per_mtok=1, output_per_mtok=1)})
    with pytest.raises(LLMUnavailable, match=r"^Anthropic API model not found \(404\)$"):
        await llm.complete(prompt())
    assert fake.completed_count == 0


async def test_short_prefixes_are_not_cached(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm()
    short = prompt(shared=[Block(text="A short transcript.", cache=True)])
    await llm.complete(short)
    again = await llm.complete(short)

    assert again.usage.cache_write_tokens == again.usage.cache_read_tokens == 0


async def test_parallel_identical_requests_each_write_the_cache(make_llm: MakeLLM) -> None:
    async with FakeAnthropic() as slow:
        slow.answer_together = 2  # the two requests overlap: neither is answered before both arrived
        llm = make_llm(base_url=slow.base_url)
        a, b = await asyncio.gather(llm.complete(prompt()), llm.complete(prompt()))
        after = await llm.complete(prompt())

    assert a.usage.cache_write_tokens == b.usage.cache_write_tokens > 0
    assert a.usage.cache_read_tokens == b.usage.cache_read_tokens == 0
    assert after.usage.cache_read_tokens == a.usage.cache_write_tokens


async def test_structured_round_synthesis(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    synthesis, usage = await make_llm().structured(prompt("Synthesize the round."), RoundSynthesis)

    assert isinstance(synthesis, RoundSynthesis)
    assert synthesis.summary and synthesis.proposals
    body = fake.requests[0]
    assert body["stream"] is True
    fmt = body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert set(fmt["schema"]["properties"]) == set(RoundSynthesis.model_fields)
    assert usage.output_tokens > 0 and usage.cache_write_tokens > 0
    assert usage.cost_usd == pytest.approx(expected_cost(usage, 2.0, 10.0))


async def test_a_structured_answer_whose_stream_breaks_is_asked_again_whole(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.break_stream_next(1, after_deltas=1)
    synthesis, usage = await make_llm(turn_attempts=2).structured(synthesis_prompt(), RoundSynthesis)

    assert synthesis.summary
    assert fake.request_count == 2 and fake.requests[0] == fake.requests[1]
    [broken] = fake.broken  # the broken stream is charged for what it used, beside the finished one
    assert usage.input_tokens == fake.input_tokens + broken["input_tokens"]
    assert usage.output_tokens > fake.output_tokens


async def test_structured_roster(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    roster, usage = await make_llm().structured(prompt("Propose four experts.", tier="light"), RosterSpec)

    assert roster.experts and roster.experts[0].expertise
    assert fake.requests[0]["model"] == usage.model == "claude-haiku-5-5"
    assert usage.cost_usd == pytest.approx(expected_cost(usage, 0.10, 0.50))


async def test_structured_output_cut_off_by_max_tokens_is_unavailable(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm(thinking_room={"low": 0}, room_attempts=1)
    with pytest.raises(LLMUnavailable, match="did not fit in 8 tokens") as raised:
        await llm.structured(prompt(max_tokens=8), RoundSynthesis)
    assert raised.value.usage is not None and raised.value.usage.output_tokens == 8


async def test_no_temperature_is_ever_sent(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm()
    await llm.complete(prompt())
    await llm.structured(prompt(), RosterSpec)

    assert len(fake.requests) == 2
    assert all("temperature" not in body and "top_p" not in body for body in fake.requests)


async def test_529_with_retry_after_ms_is_retried_by_the_sdk(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.fail_next(2, status=529, retry_after_ms=40)
    loop = asyncio.get_running_loop()
    started = loop.time()
    completion = await make_llm(max_retries=3).complete(prompt())

    assert completion.text
    assert loop.time() - started >= 0.08  # both waits honoured
    assert [h["x-stainless-retry-count"] for h in fake.headers] == ["0", "1", "2"]
    assert fake.completed_count == 1


@pytest.mark.parametrize("status", [429, 500])
async def test_rate_limits_and_server_errors_are_retried_by_the_sdk(
    fake: FakeAnthropic, make_llm: MakeLLM, status: int
) -> None:
    fake.fail_next(1, status=status, retry_after_ms=5)
    synthesis, _ = await make_llm().structured(prompt(), RoundSynthesis)

    assert synthesis.summary
    assert fake.request_count == 2


async def test_error_inside_a_stream_retries_the_whole_turn(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.break_stream_next(1, after_deltas=2)
    completion = await make_llm(turn_attempts=2).complete(prompt("Rebut Bram."))

    assert "Rebut Bram." in completion.text
    assert fake.request_count == 2
    assert fake.requests[0] == fake.requests[1]
    # A fresh turn, not an SDK retry of the same request.
    assert [h["x-stainless-retry-count"] for h in fake.headers] == ["0", "0"]
    [broken] = fake.broken  # what the broken stream used is charged with the finished one
    assert completion.usage.input_tokens == fake.input_tokens + broken["input_tokens"]
    assert completion.usage.output_tokens >= fake.output_tokens + broken["chars"] // 4


async def test_persistent_overload_is_unavailable_and_leaks_no_secret(
    fake: FakeAnthropic, make_llm: MakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fail_next(10, status=529, retry_after_ms=1)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LLMUnavailable) as raised:
        await make_llm(max_retries=2).complete(prompt())

    assert str(raised.value) == "Anthropic API overloaded (529)"
    assert fake.request_count == 3  # one try and two SDK retries; no turn retry before a stream opened
    assert SECRET not in repr(raised.value)
    assert SECRET not in caplog.text
    assert any(r.levelno == logging.WARNING and r.name == "core.llm" for r in caplog.records)


async def test_stream_that_keeps_breaking_is_unavailable(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.break_stream_next(5, after_deltas=1)
    with pytest.raises(LLMUnavailable, match=r"^Anthropic API overloaded \(529\)$") as raised:
        await make_llm(turn_attempts=3).complete(prompt())

    assert fake.request_count == 3
    assert fake.completed_count == 0
    # Never charged $0: each of the three broken streams is paid for the input its message_start counted (the
    # cache it wrote and read included) and the words it sent.
    usage = raised.value.usage
    assert len(fake.broken) == 3 and usage is not None
    assert usage.input_tokens == sum(b["input_tokens"] for b in fake.broken) > 0
    assert usage.cache_write_tokens == sum(b["cache_creation_input_tokens"] for b in fake.broken)
    assert usage.cache_read_tokens == sum(b["cache_read_input_tokens"] for b in fake.broken)
    assert usage.output_tokens >= sum(b["chars"] for b in fake.broken) // 4 > 0
    assert usage.cost_usd == pytest.approx(expected_cost(usage, 2.0, 10.0)) and usage.cost_usd > 0


@pytest.mark.parametrize(("status", "words"), [(400, "rejected the request"), (401, "rejected the API key")])
async def test_client_errors_are_not_retried(fake: FakeAnthropic, make_llm: MakeLLM, status: int, words: str) -> None:
    fake.fail_next(3, status=status, retry_after_ms=None)
    for call in (lambda llm: llm.complete(prompt()), lambda llm: llm.structured(prompt(), RosterSpec)):
        with pytest.raises(LLMUnavailable) as raised:
            await call(make_llm())
        assert str(raised.value) == f"Anthropic API {words} ({status})"
        assert SECRET not in str(raised.value)
    assert fake.request_count == 2


async def test_unreachable_api_is_unavailable(make_llm: MakeLLM) -> None:
    async with FakeAnthropic() as gone:
        url = gone.base_url
    with pytest.raises(LLMUnavailable, match="unreachable"):
        await make_llm(base_url=url, max_retries=0).complete(prompt())


def test_cost_per_million_tokens() -> None:
    usage = Usage(input_tokens=1_000, cache_write_tokens=10_000, cache_read_tokens=100_000, output_tokens=2_000)
    price = ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0)

    assert cost(usage, price) == pytest.approx((2_000 + 25_000 + 20_000 + 20_000) / 1_000_000)


def test_config_needs_a_price_for_every_model_and_hides_the_key() -> None:
    with pytest.raises(ValidationError, match="no price for model"):
        LLMConfig(api_key=SECRET, models={"light": "a", "medium": "b", "heavy": "claude-opus-5-5"})
    config = LLMConfig(api_key=SECRET)
    assert config.models["medium"] == "claude-sonnet-5-5"
    assert config.prices["claude-haiku-5-5"].output_per_mtok == 0.50
    assert SECRET not in repr(config)


async def test_fake_runs_as_a_process(make_llm: MakeLLM) -> None:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "tests.fakes.anthropic_server", "--port", "0",
        cwd=ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        url = line.rsplit(" ", 1)[-1].strip()
        assert url.startswith("http://127.0.0.1:")
        llm = make_llm(base_url=url)
        first = await llm.complete(prompt())
        second = await llm.complete(prompt("Another persona."))
        assert second.usage.cache_read_tokens == first.usage.cache_write_tokens > 0
        stats = await _get_json(url + "/_fake/stats")
        assert stats["request_count"] == 2
        assert stats["cache_read_tokens"] == second.usage.cache_read_tokens
    finally:
        proc.terminate()
        await proc.wait()


async def _get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return await response.json()


# -- thinking, effort and stop reasons (today's models think by default; thinking counts against max_tokens) -------

@pytest.fixture
async def thinking() -> AsyncIterator[FakeAnthropic]:
    """A model that thinks as today's do: 300 tokens at low effort, 1200 at the API's default (high) on Sonnet,
    before a turn of realistic length (~1,500 characters)."""
    async with FakeAnthropic(thinking_tokens=300, reply_chars=1500, chunk_chars=12) as server:
        yield server


def synthesis_prompt(**kw: Any) -> Prompt:
    purpose = Purpose(phase=Phase.ROUND_SYNTHESIS, persona="Moderator", topic="trunk-based development")
    return prompt("Synthesize the round.", purpose=purpose, **kw)


async def test_every_call_states_its_thinking_and_effort_and_room_for_both(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm()
    await llm.complete(prompt(max_tokens=1500))
    await llm.structured(prompt(max_tokens=4096), RosterSpec)
    await llm.structured(synthesis_prompt(max_tokens=4096), RoundSynthesis)
    await llm.search(prompt(max_tokens=2048))

    # The check runs on Sonnet 5.5, which returns text written between searches in thinking blocks: it asks for
    # the display that shows those notes, with the beta that display needs.
    assert [b.get("thinking") for b in fake.requests] == [{"type": "adaptive"}] * 3 + [
        {"type": "adaptive", "display": "updates"}]
    assert "thinking-display-updates-2026-08-18" in fake.headers[3]["anthropic-beta"]
    assert all("anthropic-beta" not in h for h in fake.headers[:3])
    assert [(b.get("output_config") or {}).get("effort") for b in fake.requests] == ["low", "low", "medium", "low"]
    # The visible answer's cap plus room for the thinking its effort allows.
    config = LLMConfig(api_key=SECRET)
    room = config.thinking_room
    assert [b["max_tokens"] for b in fake.requests] == [1500 + room["low"], 4096 + room["low"],
                                                        4096 + room["medium"], 2048 + room["low"]]


async def test_a_thinking_model_writes_the_whole_turn(thinking: FakeAnthropic, make_llm: MakeLLM) -> None:
    completion = await make_llm(base_url=thinking.base_url).complete(
        prompt(f"Opening statement.\n{STANCE_ASK}", max_tokens=1500))

    assert len(completion.text) >= 1500
    assert completion.text.endswith("Stance: undecided — it depends on what the trial shows")
    assert thinking.requests[-1]["output_config"]["effort"] == "low"


async def test_a_turn_cut_by_max_tokens_is_retried_with_room_and_both_attempts_are_paid(
        thinking: FakeAnthropic, make_llm: MakeLLM) -> None:
    shown: list[str] = []

    def show(parts: list[str]) -> None:
        shown.append("".join(parts))

    llm = make_llm(base_url=thinking.base_url, thinking_room={"low": 0, "medium": 0, "high": 0})
    completion = await llm.complete(prompt(f"Opening statement.\n{STANCE_ASK}", max_tokens=400), on_text=show)

    assert completion.text.endswith("Stance: undecided — it depends on what the trial shows")
    assert [b["max_tokens"] for b in thinking.requests] == [400, 800]
    assert completion.usage.output_tokens == thinking.output_tokens  # the cut attempt is paid for too
    assert shown[-1] == completion.text


async def test_a_turn_that_never_fits_is_unavailable_never_posted_cut(
        thinking: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm(base_url=thinking.base_url, thinking_room={"low": 0, "medium": 0, "high": 0}, room_attempts=2)
    with pytest.raises(LLMUnavailable, match="did not fit") as raised:
        await llm.complete(prompt(max_tokens=100))

    assert [b["max_tokens"] for b in thinking.requests] == [100, 200]
    assert raised.value.usage is not None and raised.value.usage.output_tokens == thinking.output_tokens > 0


async def test_structured_output_cut_by_thinking_is_retried_with_room(
        thinking: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm(base_url=thinking.base_url, thinking_room={"low": 0, "medium": 0, "high": 0})
    synthesis, usage = await llm.structured(synthesis_prompt(max_tokens=500), RoundSynthesis)

    assert synthesis.summary
    assert [b["max_tokens"] for b in thinking.requests] == [500, 1000]
    assert usage.output_tokens == thinking.output_tokens


async def test_a_refusal_is_unavailable_with_its_cost_and_says_the_model_declined(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.refuse_next = 2
    llm = make_llm()
    for call in (lambda: llm.complete(prompt()), lambda: llm.structured(prompt(), RosterSpec)):
        with pytest.raises(LLMRefused, match="declined") as raised:
            await call()
        assert raised.value.usage is not None and raised.value.usage.cost_usd > 0
    assert fake.request_count == 2  # a refusal is not retried


async def test_a_paused_search_is_continued_and_its_searches_kept(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.web_search = "pause"
    searched = await make_llm().search(prompt("Check the claims."))

    assert not searched.refused
    assert any(s.url == "https://research.example.org/survey-2025" for b in searched.blocks for s in b.sources)
    first, again = fake.requests
    assert again["messages"][0] == first["messages"][0]
    assert again["messages"][1]["role"] == "assistant"  # the paused turn, sent back as it came
    assert [b["type"] for b in again["messages"][1]["content"]].count("web_search_tool_result") == 1
    assert searched.searches == fake.searches_run == 1  # paid once, not run again


async def test_a_search_that_keeps_pausing_stops_at_the_limit_and_is_charged(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.web_search = "pause_always"
    searched = await make_llm(search=SearchConfig(max_continuations=2, price_per_search_usd=1.0)).search(prompt())

    assert fake.request_count == 3  # the call and two continuations
    # A continuation sends the tool as it was: its thinking blocks are bound to the tools before them.
    assert all(b["tools"] == fake.requests[0]["tools"] for b in fake.requests)
    assert "paused it 3 times" in searched.refused
    assert searched.searches == fake.searches_run == 3
    assert searched.usage.cost_usd >= 3.0


async def test_the_search_call_is_streamed(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    searched = await make_llm().search(prompt())

    assert fake.requests[0]["stream"] is True
    assert searched.blocks and not searched.refused


async def test_a_search_broken_mid_stream_is_charged_for_its_searches_and_never_run_again(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.web_search = "break"
    searched = await make_llm(search=SearchConfig(price_per_search_usd=1.0)).search(prompt())

    assert fake.request_count == 1 and fake.searches_run == 1  # no retry re-runs (and re-bills) the searches
    assert searched.searches == 1 and searched.usage.cost_usd >= 1.0
    assert "1 search" in searched.refused


async def test_a_search_that_times_out_mid_stream_is_charged_for_its_searches_and_never_run_again(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.web_search = "stall"  # the searches arrive, then nothing: the read times out
    llm = make_llm(timeout_s=0.1, max_retries=2, search=SearchConfig(price_per_search_usd=1.0))
    searched = await llm.search(prompt())

    assert fake.request_count == 1 and fake.searches_run == 1  # the SDK's retries never re-ran the searches
    assert searched.searches == 1 and searched.usage.cost_usd >= 1.0
    assert "1 search" in searched.refused and "timed out" in searched.refused


@pytest.mark.parametrize(("stop", "why"), [("refusal", "declined"), ("max_tokens", "cut off")])
async def test_a_check_refused_or_cut_is_no_check_and_its_searches_are_charged(
        fake: FakeAnthropic, make_llm: MakeLLM, stop: str, why: str) -> None:
    if stop == "refusal":
        fake.refuse_next = 1
    llm = make_llm(thinking_room={"low": 0}, search=SearchConfig(price_per_search_usd=1.0))
    searched = await llm.search(prompt(max_tokens=2048 if stop == "refusal" else 12))

    assert why in searched.refused and not searched.blocks  # never a half-written verdict
    assert searched.searches == fake.searches_run == 1 and searched.usage.cost_usd >= 1.0
    assert fake.request_count == 1  # not asked again: the searches would run (and bill) again


async def test_web_search_off_for_the_organization_says_an_admin_must_turn_it_on(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.web_search = "off"
    searched = await make_llm().search(prompt())

    assert "admin" in searched.refused and "Anthropic Console" in searched.refused
    assert "(400)" not in searched.refused


async def test_a_calls_worst_case_is_its_whole_cap_and_input_and_a_checks_searches(fake: FakeAnthropic) -> None:
    llm = AnthropicLLM(LLMConfig(api_key="sk-test", base_url=fake.base_url,
                                 search=SearchConfig(max_uses=4, price_per_search_usd=0.01)))
    try:
        short, long = prompt(max_tokens=1000, tier="heavy"), prompt(max_tokens=3000, tier="heavy")
        opus = llm._config.prices["claude-opus-5-5"]
        # 2,000 more tokens of output room cost 2,000 tokens at the output price, whatever the thinking room adds.
        assert llm.worst_case_usd(long) - llm.worst_case_usd(short) == pytest.approx(2000 * opus.output_per_mtok / 1e6)
        # A request runs 4 searches at most, and a paused turn goes on only while fewer ran: 3 + 4 at worst.
        assert llm.worst_case_usd(short, search=True) - llm.worst_case_usd(short) == pytest.approx(0.07)
        # Never less than what the call is allowed to write, nor than its input at the input price.
        chars = len(RULES) + len(TRANSCRIPT) + len(short.instruction)
        assert llm.worst_case_usd(short) > (1000 * opus.output_per_mtok + chars / 4 * opus.input_per_mtok) / 1e6
        answer = await llm.complete(short)
        assert answer.usage.cost_usd <= llm.worst_case_usd(short)
    finally:
        await llm.aclose()


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_the_sdk_is_imported_only_when_the_real_client_is_built() -> None:
    # Importing anthropic takes seconds: the CLI, the offline model and every command that never calls the API
    # start without it. (That building the real client brings it in, every test of the client through the fake
    # Messages API shows; importing it here too would double this test's time.)
    code = "import sys, bot.__main__, bot.wiring, core.llm; assert 'anthropic' not in sys.modules"
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, cwd=ROOT,
                                                stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()


async def test_a_schema_is_turned_into_the_api_s_json_schema_once_however_many_answers_ask_for_it(
        fake: FakeAnthropic, make_llm: MakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK builds the JSON schema from the pydantic model (pydantic's slowest path, a millisecond or more);
    every structured answer of one kind asks for the same schema, so it is built once and the same JSON sent."""
    class Asked(RosterSpec):  # a kind no earlier test asked for
        pass

    built: list[type] = []
    pydantic_schema = RosterSpec.model_json_schema.__func__  # type: ignore[attr-defined]

    def counted(cls: type, *args: Any, **kw: Any) -> dict[str, Any]:
        built.append(cls)
        return pydantic_schema(cls, *args, **kw)  # type: ignore[no-any-return]

    monkeypatch.setattr(Asked, "model_json_schema", classmethod(counted))
    llm = make_llm()
    for _ in range(3):
        await llm.structured(prompt(), Asked)
    await make_llm().structured(prompt(), Asked)  # another client of the same process: the same schema

    assert built == [Asked]
    sent = [b["output_config"]["format"] for b in fake.requests]
    assert len(sent) == 4 and all(s == sent[0] for s in sent)
    assert sent[0]["schema"]["type"] == "object" and "experts" in sent[0]["schema"]["properties"]


async def test_a_stream_read_from_a_full_buffer_lets_the_loop_serve_others_as_it_goes(make_llm: MakeLLM) -> None:
    """Hundreds of discussions get their answers at once; by the time a turn reads its stream, the whole answer
    waits in the socket's buffer and reads without a single wait (as here: the fake writes it all at once). Read in
    one stretch, 130 deltas held the event loop for milliseconds a turn, and a pass of the loop over 69 such turns
    kept a health check (or Slack's acknowledgement) waiting 343 ms. Another task gets its turn at least every few
    deltas."""
    async with FakeAnthropic(reply_chars=1500, chunk_chars=12) as whole:
        llm = make_llm(base_url=whole.base_url)
        ticks = 0
        seen: list[int] = []  # the other task's count at each delta the turn read

        async def other() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0)
                ticks += 1

        def show(parts: list[str]) -> None:
            seen.append(ticks)

        ticker = asyncio.create_task(other())
        try:
            await llm.complete(prompt(), on_text=show)
        finally:
            ticker.cancel()
    assert len(seen) > 100, len(seen)
    runs = [len(list(group)) for _, group in itertools.groupby(seen[1:])]
    assert max(runs) <= 16, runs  # never more than 16 deltas read while the other task waited


async def test_streams_read_from_full_buffers_at_once_read_a_few_stretches_a_pass_of_the_loop_as_wired() -> None:
    """Yielding every 16 deltas bounds one stream, not a pass: with 300 discussions at once, a pass of the loop read
    a stretch of every stream whose answer had arrived, and /healthz's p99 stayed at 214-318 ms. As the app wires
    its model, a pass reads at most STREAM_STRETCHES_A_PASS stretches of all the streams together."""
    streams = 3 * STREAM_STRETCHES_A_PASS
    async with FakeAnthropic(reply_chars=1500, chunk_chars=12) as whole:
        settings = Settings(_env_file=None, anthropic_api_key=SECRET,  # type: ignore[call-arg]
                            anthropic_base_url=whole.base_url)
        routed = build_llm(settings)
        assert isinstance(routed, RoutedLLM)
        llm = routed.providers["anthropic"]
        assert isinstance(llm, AnthropicLLM)
        passes = 0
        loop = asyncio.get_running_loop()

        def tick() -> None:  # runs once a pass: a callback scheduled in a pass runs in the next one
            nonlocal passes
            passes += 1
            ticking.append(loop.call_soon(tick))

        ticking = [loop.call_soon(tick)]
        read: Counter[int] = Counter()  # deltas read in each pass, by every stream
        try:
            await asyncio.gather(*(llm.complete(prompt(), on_text=lambda parts: read.update([passes]))
                                   for _ in range(streams)))
        finally:
            ticking[-1].cancel()
            await llm.aclose()
    assert sum(read.values()) > 100 * streams
    assert max(read.values()) <= STREAM_STRETCHES_A_PASS * 16, read.most_common(3)


@pytest.mark.parametrize("kind", ["turn", "structured"])
async def test_a_call_that_fails_after_running_out_of_room_reports_what_the_cut_attempt_cost(
        kind: str, make_llm: MakeLLM) -> None:
    """The first attempt ran out of room (thinking took it) and was paid for; the second is refused outright. The
    error carries the first attempt's cost, so the discussion's spend counts it."""
    refused: list[bool] = []

    def reply(body: dict[str, Any]) -> str:
        if not refused:  # the next request, the attempt with more room, answers 400
            refused.append(True)
            model.fail_next(1, status=400)
        return default_reply(body)

    async with FakeAnthropic(thinking_tokens=300, reply=reply) as model:
        llm = make_llm(base_url=model.base_url, thinking_room={"low": 0, "medium": 0, "high": 0}, room_attempts=2)
        with pytest.raises(LLMUnavailable) as raised:
            if kind == "turn":
                await llm.complete(prompt(max_tokens=200))
            else:
                await llm.structured(synthesis_prompt(max_tokens=200), RoundSynthesis)
    assert [b["max_tokens"] for b in model.requests] == [200, 400]
    assert raised.value.usage is not None and raised.value.usage.output_tokens == model.output_tokens > 0


# -- a paused search on a model that thinks: the prefix of every thinking block is sent unchanged ----------------

TWO_CLAIMS = [("[supported] The survey claim — the survey says so.", [("https://a.example.org/s", "A")]),
              ("\n[false] The cost claim — the report says otherwise.", [("https://b.example.org/r", "B")])]
NOTE = "[unverifiable] The headcount claim — no source gives a figure.\n"


@pytest.fixture
async def thinker() -> AsyncIterator[FakeAnthropic]:
    """A model that thinks before each part of its answer, as the 5.5 models always do."""
    async with FakeAnthropic(thinking_tokens=50) as server:
        yield server


async def test_a_paused_search_on_a_thinking_model_is_continued_with_its_prefix_unchanged(
        thinker: FakeAnthropic, make_llm: MakeLLM) -> None:
    thinker.web_search = "pause"
    searched = await make_llm(base_url=thinker.base_url, search=SearchConfig(price_per_search_usd=1.0)).search(
        prompt("Check the claims."))

    assert not searched.refused, searched.refused
    assert any(s.url == "https://research.example.org/survey-2025" for b in searched.blocks for s in b.sources)
    first, again = thinker.requests
    assert again["system"] == first["system"] and again["tools"] == first["tools"]
    assert again["messages"][0] == first["messages"][0]
    thought = again["messages"][1]["content"][0]
    assert thought["type"] == "thinking" and thought["signature"] in thinker.thinking_made  # sent back as it came
    assert searched.searches == thinker.searches_run == 1 and searched.usage.cost_usd >= 1.0


async def test_the_fake_refuses_a_thinking_block_whose_prefix_or_text_changed(thinker: FakeAnthropic) -> None:
    """The API's rule, which the fake keeps: a thinking block is bound to the system prompt, tools and messages
    before it, and to its own text; a request that changed any of them is answered 400."""
    thinker.web_search = "pause"
    tool = {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
    body: dict[str, Any] = {"model": "claude-sonnet-5-5", "max_tokens": 4096, "tools": [tool],
                            "system": [{"type": "text", "text": RULES}],
                            "messages": [{"role": "user", "content": "Check the claims."}]}
    async with aiohttp.ClientSession() as session:
        async with session.post(thinker.base_url + "/v1/messages", json=body) as response:
            paused = await response.json()
        assert paused["stop_reason"] == "pause_turn" and paused["content"][0]["type"] == "thinking"
        turn = {"role": "assistant", "content": paused["content"]}
        same = body | {"messages": [*body["messages"], turn]}
        fewer_uses = same | {"tools": [tool | {"max_uses": 4}]}
        other_system = same | {"system": [{"type": "text", "text": RULES + " Be brief."}]}
        edited = same | {"messages": [*body["messages"], {"role": "assistant", "content": [
            {**paused["content"][0], "thinking": "I decided differently."}, *paused["content"][1:]]}]}
        answers = []
        for sent in (fewer_uses, other_system, edited, same):
            async with session.post(thinker.base_url + "/v1/messages", json=sent) as response:
                answers.append((response.status, (await response.json()).get("error", {}).get("message", "")))
    assert [status for status, _ in answers] == [400, 400, 400, 200]
    assert "messages.1.content.0" in answers[0][1] and "unchanged" in answers[0][1]
    assert "signature" in answers[2][1]


async def test_a_continuation_the_api_refuses_is_charged_for_its_searches_and_not_blamed_on_the_admin(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    fake.web_search = "pause"
    fake.fail_next(1, status=400, retry_after_ms=None, skip=1)  # the first request is answered; the next is not
    searched = await make_llm(search=SearchConfig(price_per_search_usd=1.0)).search(prompt())

    assert fake.request_count == 2
    assert "admin" not in searched.refused and "could not be continued" in searched.refused
    assert "1 search is charged" in searched.refused
    assert searched.searches == 1 and searched.usage.cost_usd >= 1.0 and not searched.blocks


async def test_a_paused_search_that_ran_all_its_searches_is_not_continued(fake: FakeAnthropic,
                                                                           make_llm: MakeLLM) -> None:
    fake.web_search = "pause_always"  # one search a request, paused every time
    searched = await make_llm(search=SearchConfig(max_uses=2, max_continuations=5)).search(prompt())

    assert fake.request_count == 2 and searched.searches == fake.searches_run == 2
    assert "all the searches a check may run" in searched.refused and not searched.blocks
    assert all(b["tools"][0]["max_uses"] == 2 for b in fake.requests)


# -- text the model writes between searches ------------------------------------------------------------------------

@pytest.mark.parametrize("tier", ["medium", "heavy"])
async def test_text_written_between_searches_is_read_from_the_thinking_blocks_it_comes_in(
        thinker: FakeAnthropic, make_llm: MakeLLM, tier: str) -> None:
    thinker.search_answer, thinker.between_searches = TWO_CLAIMS, NOTE
    searched = await make_llm(base_url=thinker.base_url).search(prompt("Check the claims.", tier=tier))

    assert not searched.refused
    written = "".join(b.text for b in searched.blocks)
    assert NOTE in written and "[false] The cost claim" in written
    assert "summary of the model's reasoning" not in written  # the reasoning itself stays out
    assert [b.text for b in searched.blocks if not b.sources] == [NOTE]  # the note cites nothing
    assert thinker.requests[0]["thinking"] == {"type": "adaptive", "display": "updates"}


async def test_a_model_that_writes_text_between_searches_as_text_is_asked_as_before(
        thinker: FakeAnthropic, make_llm: MakeLLM) -> None:
    thinker.search_answer, thinker.between_searches = TWO_CLAIMS, NOTE
    searched = await make_llm(base_url=thinker.base_url).search(prompt("Check the claims.", tier="light"))

    assert NOTE in "".join(b.text for b in searched.blocks)
    assert thinker.requests[0]["thinking"] == {"type": "adaptive"}  # Haiku 5.5 has no "updates" display
    assert "anthropic-beta" not in thinker.headers[0]


async def test_notes_between_searches_survive_a_pause_and_go_back_as_they_came(
        thinker: FakeAnthropic, make_llm: MakeLLM) -> None:
    thinker.search_answer, thinker.between_searches, thinker.web_search = TWO_CLAIMS, NOTE, "pause"
    searched = await make_llm(base_url=thinker.base_url).search(prompt("Check the claims."))

    assert not searched.refused, searched.refused
    assert "".join(b.text for b in searched.blocks).startswith(NOTE)
    sent = thinker.requests[1]["messages"][1]["content"]
    assert [b["type"] for b in sent].count("thinking") == 2 and NOTE in [b.get("thinking") for b in sent]


@pytest.mark.parametrize(("model", "beta", "problem"), [
    ("claude-sonnet-5-5", "", "requires the anthropic-beta header"),
    ("claude-haiku-5-5", "thinking-display-updates-2026-08-18", "not supported for this model")])
async def test_the_fake_refuses_the_updates_display_where_the_api_does(
        fake: FakeAnthropic, model: str, beta: str, problem: str) -> None:
    body = {"model": model, "max_tokens": 100, "thinking": {"type": "adaptive", "display": "updates"},
            "messages": [{"role": "user", "content": "Hello."}]}
    async with aiohttp.ClientSession() as session, session.post(
            fake.base_url + "/v1/messages", json=body, headers={"anthropic-beta": beta} if beta else {}) as response:
        assert response.status == 400
        assert problem in (await response.json())["error"]["message"]


# -- every attempt's usage is charged ------------------------------------------------------------------------------

async def test_a_stream_that_breaks_after_an_attempt_cut_at_max_tokens_carries_that_attempts_cost(
        make_llm: MakeLLM) -> None:
    async with FakeAnthropic(thinking_tokens=300, reply_chars=1500) as model:
        model.break_stream_next(2, after_deltas=1, skip=1)  # the cut attempt finishes; both tries with room break
        llm = make_llm(base_url=model.base_url, thinking_room={"low": 0, "medium": 0, "high": 0}, room_attempts=2,
                       turn_attempts=2)
        with pytest.raises(LLMUnavailable, match="overloaded") as raised:
            await llm.complete(prompt(max_tokens=200))
    assert [b["max_tokens"] for b in model.requests] == [200, 400, 400]
    usage = raised.value.usage
    assert model.output_tokens == 200 and len(model.broken) == 2  # the cut attempt finished; two broke
    # The cut attempt, paid, and what each broken stream used before it broke.
    assert usage is not None and usage.input_tokens == model.input_tokens + sum(b["input_tokens"]
                                                                                for b in model.broken)
    assert usage.output_tokens >= 200 + sum(b["chars"] for b in model.broken) // 4
    assert usage.cost_usd == pytest.approx(expected_cost(usage, 2.0, 10.0)) and usage.cost_usd > 0


# -- prices ----------------------------------------------------------------------------------------------------------

async def test_opus_cache_reads_cost_a_twentieth_of_its_input_rate(fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm()
    await llm.complete(prompt(tier="heavy"))
    second = (await llm.complete(prompt("Opening statement as Bram.", tier="heavy"))).usage

    assert second.cache_read_tokens > 1024
    # $4 in, $20 out, cache reads $0.20 a million (Opus 5.5's page).
    assert second.cost_usd == pytest.approx((second.input_tokens * 4.0 + second.cache_read_tokens * 0.20
                                             + second.output_tokens * 20.0) / 1e6)


async def test_haiku_charges_its_long_prompt_rates_on_every_token_of_a_request_over_100k(
        fake: FakeAnthropic, make_llm: MakeLLM) -> None:
    llm = make_llm()
    near = Block(text="Moderator: the figures from each team follow. " * 8_300)  # ~96k tokens
    far = Block(text="Moderator: the figures from each team follow. " * 9_100)  # ~105k tokens
    short = (await llm.complete(prompt(tier="light", system=[], shared=[near]))).usage
    long = (await llm.complete(prompt(tier="light", system=[], shared=[far]))).usage

    assert short.input_tokens < 100_000 < long.input_tokens and short.cache_read_tokens == long.cache_write_tokens == 0
    assert short.cost_usd == pytest.approx((short.input_tokens * 0.10 + short.output_tokens * 0.50) / 1e6)
    assert long.cost_usd == pytest.approx((long.input_tokens * 0.50 + long.output_tokens * 2.50) / 1e6)


async def test_each_attempt_is_priced_as_its_own_request(make_llm: MakeLLM) -> None:
    """Two attempts of 60k prompt tokens each are two short prompts, not one long one."""
    async with FakeAnthropic(thinking_tokens=300) as model:
        llm = make_llm(base_url=model.base_url, thinking_room={"low": 0, "medium": 0, "high": 0})
        big = Block(text="Moderator: the figures from each team follow. " * 5_200)  # ~60k tokens
        usage = (await llm.complete(prompt(tier="light", system=[], shared=[big], max_tokens=200))).usage

    assert len(model.requests) == 2 and usage.input_tokens > 100_000
    assert usage.cost_usd == pytest.approx((usage.input_tokens * 0.10 + usage.output_tokens * 0.50) / 1e6)


def test_council_prices_overrides_each_rate_and_keeps_the_rest_of_the_table() -> None:
    settings = Settings(_env_file=None, council_prices={  # type: ignore[call-arg]
        "claude-opus-5-5": {"cache_read_mult": 0.08, "cache_write_mult": 2.0},
        "claude-haiku-5-5": {"long_context_over": 200_000, "long_output_per_mtok": 3.0},
        "claude-sonnet-5-5": [3, 15],
    })
    prices = settings.council_prices
    assert (prices["claude-opus-5-5"].input_per_mtok, prices["claude-opus-5-5"].cache_read_mult,
            prices["claude-opus-5-5"].cache_write_mult) == (4.0, 0.08, 2.0)
    haiku = prices["claude-haiku-5-5"]
    assert (haiku.long_context_over, haiku.long_input_per_mtok, haiku.long_output_per_mtok) == (200_000, 0.5, 3.0)
    assert (prices["claude-sonnet-5-5"].input_per_mtok, prices["claude-sonnet-5-5"].output_per_mtok) == (3, 15)
    usage = Usage(input_tokens=150_000, output_tokens=1_000, cache_read_tokens=10_000)
    assert cost(usage, haiku) == pytest.approx((150_000 * 0.10 + 10_000 * 0.01 + 1_000 * 0.50) / 1e6)
    assert cost(usage, prices["claude-opus-5-5"]) == pytest.approx((150_000 * 4 + 10_000 * 0.32 + 1_000 * 20) / 1e6)


@pytest.mark.parametrize(("given", "words"), [
    ({"claude-opus-5-5": {"cache_red_mult": 0.05}}, "cache_red_mult"),
    ({"my-model": {"input_per_mtok": 1.0}}, "output_per_mtok"),
    ({"claude-haiku-5-5": {"long_context_over": None}}, "together"),
    ({"claude-opus-5-5": [1, 2, 3]}, "[input, output]")])
def test_a_wrong_price_is_refused_naming_the_model_and_the_rates(given: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(_env_file=None, council_prices=given)  # type: ignore[call-arg]
    message = str(raised.value)
    assert "COUNCIL_PRICES" in message and next(iter(given)) in message and words in message


async def test_a_long_prompt_reserves_at_the_long_prompt_rates(make_llm: MakeLLM) -> None:
    llm = make_llm()
    far = prompt(tier="light", system=[], shared=[Block(text="x" * 330_000)], max_tokens=1000)  # 110k tokens
    near = prompt(tier="light", system=[], shared=[Block(text="x" * 270_000)], max_tokens=1000)  # 90k
    cap = 1000 + LLMConfig(api_key=SECRET).thinking_room["low"]
    assert llm.worst_case_usd(far) == pytest.approx((110_000 * 0.50 * 1.25 + cap * 2.50) / 1e6, rel=1e-3)
    assert llm.worst_case_usd(near) == pytest.approx((90_000 * 0.10 * 1.25 + cap * 0.50) / 1e6, rel=1e-3)
