"""A whole discussion on a model that thinks as today's do (thinking counted against max_tokens), through the
real anthropic SDK and the loopback Messages API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from bot.__main__ import _settings
from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.deliberation import flows
from core.deliberation.schemas import RoundSynthesis
from core.llm import default_prices
from core.models import Phase, Status, TurnStatus
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import RecordingChat


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_five_rounds_on_a_thinking_model_post_every_turn_whole_with_every_stance(tmp_path: Path) -> None:
    # 300 thinking tokens at low effort, 1200 at Sonnet's default (high), before turns of ~1,500 characters.
    async with FakeAnthropic(thinking_tokens=300, reply_chars=1500) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url, council_budget_usd=50.0)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?",
                                                               flow="moderated", rounds=5, experts=3, user_id="U1"))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(reply.discussion_id)
                turns = await tx.turns(reply.discussion_id)
                personas = {p.key: p for p in await tx.personas(reply.discussion_id)}
        finally:
            await app.close()

    assert d is not None and d.status == Status.DONE, (d and d.status, d and d.blocked_reason)
    assert d.round == 5
    written = [w.strip() for w in fake.written]
    spoken = [t for t in turns if t.text and t.status in (TurnStatus.DONE, TurnStatus.PUBLISHED)]
    assert len(spoken) > 20
    for t in spoken:  # a cut turn is the start of a reply the model was still writing
        assert not any(w != t.text.strip() and w.startswith(t.text.strip()) for w in written), (t.phase, t.text)
    flow = flows.get("moderated")
    asked = [t for t in spoken if flow.stance(t.phase, personas[t.persona_key])]
    assert len(asked) >= 5 * 4
    assert all((t.data or {}).get("label") for t in asked), [(t.phase, t.text[-80:]) for t in asked]
    assert all(t.status != TurnStatus.FAILED for t in turns)


def ledger_cost(fake: FakeAnthropic) -> float:
    """What the fake billed, priced request by request from the price table's rates."""
    total = 0.0
    for row in fake.ledger:
        price = default_prices()[row["model"]]
        prompt = row["input_tokens"] + row["cache_write_tokens"] + row["cache_read_tokens"]
        long = price.long_context_over is not None and prompt > price.long_context_over
        price_in = price.long_input_per_mtok if long else price.input_per_mtok
        price_out = price.long_output_per_mtok if long else price.output_per_mtok
        assert price_in is not None and price_out is not None
        total += (row["input_tokens"] * price_in + row["cache_write_tokens"] * price_in * price.cache_write_mult
                  + row["cache_read_tokens"] * price_in * price.cache_read_mult
                  + row["output_tokens"] * price_out) / 1_000_000
    return total


async def test_a_refused_turn_is_skipped_with_a_note_at_once_and_its_cost_charged(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        fake.refuse = lambda body: "Your turn (Counterpoint" in json.dumps(body["messages"][-1])
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?",
                                                               flow="moderated", rounds=1, experts=2, user_id="U1"))
            await app.driver.idle()
            async with app.store.tx() as tx:
                d = await tx.discussion(reply.discussion_id)
                turns = await tx.turns(reply.discussion_id)
        finally:
            await app.close()

    assert d is not None and d.status == Status.DONE, (d and d.status, d and d.blocked_reason)
    [counter] = [t for t in turns if t.phase == Phase.COUNTERPOINT]
    assert counter.status == TurnStatus.SKIPPED and counter.attempts == 1  # asked once: a refusal is not nudged
    asked = [r for r in fake.requests if "Your turn (Counterpoint" in json.dumps(r["messages"][-1])]
    assert len(asked) == 1
    notices = [p.text for p in chat.posts(d.id) if p.kind == "notice"]
    assert any("could not respond (the model declined to write this)" in n for n in notices), notices
    assert not any("nudging" in n for n in notices)
    assert d.cost_usd == pytest.approx(ledger_cost(fake))  # the refused call's tokens are paid for too


async def test_the_effort_settings_reach_every_call(tmp_path: Path) -> None:
    async with FakeAnthropic() as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url,
                            council_turn_effort="medium", council_synthesis_effort="high")
        app = await build_app(settings, {"console": RecordingChat()})
        try:
            await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?", flow="moderated",
                                                       rounds=1, experts=2, user_id="U1"))
            await app.driver.idle()
        finally:
            await app.close()

    turns = [b["output_config"]["effort"] for b in fake.requests if "format" not in b["output_config"]]
    syntheses = [b["output_config"]["effort"] for b in fake.requests
                 if set(((b["output_config"].get("format") or {}).get("schema") or {}).get("properties") or {})
                 == set(RoundSynthesis.model_fields)]
    assert turns and set(turns) == {"medium"}
    assert syntheses and set(syntheses) == {"high"}
    assert all(b["thinking"] == {"type": "adaptive"} for b in fake.requests)


def test_a_wrong_effort_is_refused_at_start_naming_the_variable(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COUNCIL_SYNTHESIS_EFFORT", "extreme")
    with pytest.raises(typer.Exit):
        _settings(quiet=True)
    err = capsys.readouterr().err
    assert "COUNCIL_SYNTHESIS_EFFORT must be one of low, medium, high, xhigh, max (got 'extreme')" in " ".join(
        err.split())
