"""A council whose three advisors sit on three model families (Anthropic, OpenAI, a self-hosted Ollama), run
through the service against three loopback fakes; and what a start, a channel and the settings may name."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from adapters.web.page import render
from bot.logs import settings_secrets
from bot.settings import ProviderSpec, Settings
from bot.wiring import App, ProviderKeyMissing, build_app, build_llm
from core.control import commands as c
from core.control.replies import UserError
from core.llm import ModelPrice, default_prices
from core.llm_router import RoutedLLM
from core.models import Phase, Role, Status
from core.showing.export import export
from core.storage import tables as t
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import RecordingChat
from tests.fakes.openai_server import FakeOpenAI

PRICES = {**default_prices(), "gpt-5.1": ModelPrice(input_per_mtok=1.25, output_per_mtok=10.0),
          "llama3.3": ModelPrice(input_per_mtok=0.0, output_per_mtok=0.0)}
THREE = "openai:gpt-5.1 anthropic:claude-sonnet-5-5 ollama:llama3.3"


def settings(tmp_path: Path, anthropic: FakeAnthropic, openai: FakeOpenAI, ollama: FakeOpenAI,
             **kw: Any) -> Settings:
    return Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                    anthropic_api_key="sk-ant-test", anthropic_base_url=anthropic.base_url,
                    openai_api_key="sk-openai-test", openai_base_url=openai.base_url,
                    council_providers={"ollama": ProviderSpec(base_url=ollama.base_url, json_schema=False)},
                    council_prices=PRICES, **kw)


@pytest.fixture
async def fakes() -> AsyncIterator[tuple[FakeAnthropic, FakeOpenAI, FakeOpenAI]]:
    async with FakeAnthropic() as a, FakeOpenAI(models=["gpt-5.1"], api_key="sk-openai-test") as o, \
            FakeOpenAI(models=["llama3.3"], caching=False, json_schema=False, name="ollama") as ol:
        yield a, o, ol


@pytest.fixture
async def app(tmp_path: Path, fakes: tuple[FakeAnthropic, FakeOpenAI, FakeOpenAI]) -> AsyncIterator[App]:
    built = await build_app(settings(tmp_path, *fakes), {"console": RecordingChat()})
    yield built
    await built.close()


def chat_of(app: App) -> RecordingChat:
    chat = app.driver.chats["console"]
    assert isinstance(chat, RecordingChat)
    return chat


async def test_three_advisors_on_three_families_run_a_council_to_its_verdict(
        app: App, fakes: tuple[FakeAnthropic, FakeOpenAI, FakeOpenAI]) -> None:
    anthropic, openai, ollama = fakes
    reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?", flow="council",
                                                       rounds=2, user_id="U1", models=THREE))
    await app.driver.idle()
    async with app.store.tx() as tx:
        d = await tx.discussion(reply.discussion_id)
        personas = await tx.personas(reply.discussion_id)
        turns = await tx.turns(reply.discussion_id)
        rows = (await tx.conn.execute(select(t.usage.c.turn_key, t.usage.c.model, t.usage.c.cost_usd))).all()
    assert d is not None and d.status == Status.DONE, (d and d.status, d and d.blocked_reason)
    advisors = [p for p in personas if p.role == Role.ADVISOR]
    refs = dict(zip([p.key for p in advisors], THREE.split(), strict=True))  # dealt in seat order
    billed = {key: model for key, model, _ in rows}
    # Every advisor turn ran on its advisor's model, and each server saw exactly those turns.
    ran = {key: [billed[turn.key] for turn in turns if turn.persona_key == key and turn.key in billed]
           for key in refs}
    for key, ref in refs.items():
        assert ran[key] and set(ran[key]) == {ref.split(":", 1)[1]}, (key, ran[key])
    assert len(openai.requests) == sum(m == "gpt-5.1" for m in billed.values())
    assert len(ollama.requests) == sum(m == "llama3.3" for m in billed.values())
    assert all("tool_choice" in r for r in ollama.requests if "tools" in r)
    # The referee's verdict on its tier's model at Anthropic (the council's referee writes on the medium tier).
    referee = next(p for p in personas if p.role == Role.REFEREE)
    verdicts = [billed[turn.key] for turn in turns if turn.persona_key == referee.key
                and turn.phase == Phase.FINAL_SYNTHESIS]
    assert verdicts == ["claude-sonnet-5-5"]
    assert sum(r["model"] == "claude-sonnet-5-5" for r in anthropic.requests) == sum(
        m == "claude-sonnet-5-5" for m in billed.values())
    assert d.cost_usd == pytest.approx(sum(cost for _, _, cost in rows))
    # The header names each persona's model; so does the page's record.
    header = [p for p in chat_of(app).posts(d.id) if p.kind == "header"][-1]
    for p in advisors:
        assert f"`{refs[p.key]}`" in next(line for line in header.text.splitlines() if p.name in line)
    record = await export(app.store, d.id)
    assert record is not None
    shown = {p["key"]: p["model"] for p in record["personas"]}
    assert {k: shown[k] for k in refs} == refs
    assert shown[referee.key] == "anthropic:claude-sonnet-5-5"
    html = render(record)
    for ref in refs.values():
        assert f"<code>{ref}</code>" in html


@pytest.mark.parametrize(("models", "words"), [
    ("mistral:large-2", "`mistral` is not a configured provider (configured: `anthropic`, `ollama`, `openai`)"),
    ("openai:gpt-9", "`gpt-9` has no price: add it to COUNCIL_PRICES"),
    ("gpt-5.1", "`gpt-5.1` is not `provider:model`"),
    ("=openai:gpt-5.1", "names nothing before `=`"),
])
async def test_a_start_naming_what_is_not_configured_is_refused_and_says_what_is(
        app: App, models: str, words: str) -> None:
    with pytest.raises(UserError, match="--models") as raised:
        await app.service.handle(c.StartDiscussion(topic="Should we adopt a four-day week?", flow="council",
                                                   user_id="U1", models=models))
    assert words in str(raised.value)
    async with app.store.tx() as tx:
        assert await tx.discussions() == []


async def test_a_channel_s_models_apply_to_its_starts_and_a_start_s_own_win(app: App) -> None:
    await app.service.handle(c.SetDefaults(platform="console", channel="C1", text="models=openai:gpt-5.1",
                                           user_id="U1", is_admin=True))
    first = await app.service.handle(c.StartDiscussion(topic="Four-day week?", flow="council", channel="C1",
                                                       user_id="U1"))
    second = await app.service.handle(c.StartDiscussion(topic="Four-day week?", flow="council", channel="C1",
                                                        user_id="U1", models="ollama:llama3.3"))
    async with app.store.tx() as tx:
        d1, d2 = await tx.discussion(first.discussion_id), await tx.discussion(second.discussion_id)
    assert d1 is not None and d2 is not None
    assert d1.options.models.seats == ["openai:gpt-5.1"] and d2.options.models.seats == ["ollama:llama3.3"]
    # The deployment's tiers stay under both.
    assert d1.options.models.tiers["heavy"] == d2.options.models.tiers["heavy"] == "anthropic:claude-opus-5-5"


def test_models_settings_are_checked_at_start(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=re.escape("COUNCIL_MODELS: `heavy=gpt-5.1` is not `provider:model`")):
        Settings(_env_file=None, council_models="heavy=gpt-5.1")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="'anthropic' cannot name a provider"):
        Settings(_env_file=None, council_providers={"anthropic": {"base_url": "http://x"}})  # type: ignore[call-arg]


def test_a_provider_s_key_comes_from_the_variable_it_names_and_is_never_shown(tmp_path: Path) -> None:
    spec = ProviderSpec(base_url="http://127.0.0.1:1/v1", api_key_env="OPENROUTER_API_KEY")
    base = Settings(_env_file=None, council_providers={"openrouter": spec},  # type: ignore[call-arg]
                    council_models="medium=openrouter:gpt-5.1 light=openrouter:gpt-5.1 heavy=openrouter:gpt-5.1",
                    council_prices=PRICES)
    with pytest.raises(ProviderKeyMissing, match="reads its key from OPENROUTER_API_KEY, which is not set"):
        build_llm(base, environ={})
    llm = build_llm(base, environ={"OPENROUTER_API_KEY": "sk-or-SECRET-123"})
    assert isinstance(llm, RoutedLLM) and set(llm.providers) == {"openrouter"}
    assert "sk-or-SECRET-123" not in repr(llm.providers["openrouter"].__dict__.get("_config"))


def test_a_provider_s_key_is_masked_in_the_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-SECRET-456")
    s = Settings(_env_file=None, anthropic_api_key="sk-ant-x", council_providers={  # type: ignore[call-arg]
        "openrouter": ProviderSpec(base_url="http://x/v1", api_key_env="OPENROUTER_API_KEY")})
    assert "sk-or-SECRET-456" in settings_secrets(s)


def test_a_tier_on_a_provider_that_is_not_configured_is_an_error_at_start() -> None:
    with pytest.raises(ValidationError, match="`anthropic` is not a configured provider") as raised:
        Settings(_env_file=None, openai_api_key="sk-x", council_prices=PRICES)  # type: ignore[call-arg]
    assert "name each tier" in str(raised.value)
    with pytest.raises(ValidationError, match=re.escape("COUNCIL_PROVIDERS['ollama']: jsonschema: Extra inputs")):
        Settings(_env_file=None, council_providers={"ollama": {"base_url": "http://x", "jsonschema": False}})  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="`gpt-9` has no price"):
        Settings(_env_file=None, openai_api_key="sk-x", council_models="heavy=openai:gpt-9")  # type: ignore[call-arg]
    routed = Settings(_env_file=None, openai_api_key="sk-x", council_prices=PRICES,  # type: ignore[call-arg]
                      council_models="light=openai:gpt-5.1 medium=openai:gpt-5.1 heavy=openai:gpt-5.1")
    llm = build_llm(routed, environ={})
    assert isinstance(llm, RoutedLLM) and llm.tiers == {t: "openai:gpt-5.1" for t in ("light", "medium", "heavy")}
