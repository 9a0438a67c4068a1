"""One verdict per post, on the real Anthropic client through the loopback Messages API: the referee names the
option it recommends by id and the kind it reads, and the code compares those (never its prose) with the verdict
the advisors' recorded stances give."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Phase, Status
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.chat import RecordingChat

# The referee's question put the topic's answers on the table as O1 and O2: the advisors name them by id.
SPLIT_STANCES = {"Pragmatist": "O1 — it pays back", "Visionary": "O2 — too early",
                 "Skeptic": "undecided — no data yet"}


def council(referee: dict[str, Any]) -> Callable[[dict[str, Any]], str]:
    """Advisors split (O1, O2, undecided); the referee answers `referee` over the default shape."""
    def reply(body: dict[str, Any]) -> str:
        fmt = (body.get("output_config") or {}).get("format") or {}
        if "perspectives" in json.dumps(fmt.get("schema", {})):
            return json.dumps(json.loads(default_reply(body)) | referee)
        text = default_reply(body)
        last = json.dumps(body["messages"][-1])
        for name, stance in SPLIT_STANCES.items():
            if f'and only as them:\\n<persona name=\\"{name}\\"' in last:  # its own brief
                return text.rsplit("\n\nStance:", 1)[0] + f"\n\nStance: {stance}"
        return text
    return reply


@contextlib.asynccontextmanager
async def finished(tmp_path: Path, reply: Callable[[dict[str, Any]], str], **start: Any,
                   ) -> AsyncIterator[tuple[FakeAnthropic, App, RecordingChat, str]]:
    """A discussion run to its end on the real client against the fake Messages API answering with `reply`."""
    async with FakeAnthropic(reply=reply) as fake:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat = RecordingChat()
        app = await build_app(settings, {"console": chat})
        try:
            started = await app.service.handle(c.StartDiscussion(**({"topic": "Should we adopt a four-day week?",
                                                                      "rounds": 1, "user_id": "U1"} | start)))
            await app.driver.idle()
            yield fake, app, chat, started.discussion_id
        finally:
            await app.close()


async def run_council(tmp_path: Path, reply: Callable[[dict[str, Any]], str]) -> tuple[str, FakeAnthropic]:
    async with finished(tmp_path, reply, flow="council") as (fake, app, chat, did):
        async with app.store.tx() as tx:
            d = await tx.discussion(did)
            final = next(t for t in await tx.turns(did) if t.phase == Phase.FINAL_SYNTHESIS)
        assert d is not None and d.status == Status.DONE, (d and d.blocked_reason)
        closing = next(p.text for p in chat.posts(did) if "**Referee's reading.**" in p.text)
        assert final.data is not None and final.data["verdict"] in closing
        return closing, fake


async def test_a_referee_claiming_consensus_over_split_stances_is_never_shown_as_a_second_verdict(
        tmp_path: Path) -> None:
    referee = {"verdict": "The council reached a clear CONSENSUS: adopt it now.", "reads": "CONSENSUS",
               "recommends": "O1", "recommendation": "Everyone agrees: adopt the four-day week."}
    closing, fake = await run_council(tmp_path, council(referee))
    assert "**Verdict:** SPLIT" in closing
    assert "CONSENSUS" not in closing and "clear" not in closing and "Everyone agrees" not in closing
    assert "withheld" in closing and "the verdict is the advisors' recorded stances'" in closing
    asked = next(r for r in fake.requests if "perspectives" in json.dumps(r.get("output_config") or {}))
    assert "SPLIT" in json.dumps(asked["messages"][-1])  # the referee was given the computed verdict


async def test_a_referee_recommending_another_option_than_the_advisors_lean_to_is_labelled_not_a_verdict(
        tmp_path: Path) -> None:
    referee = {"verdict": "Two of three advisors lean against.", "reads": "SPLIT", "recommends": "O1",
               "recommendation": "Run a trial first."}
    closing, _ = await run_council(tmp_path, council(referee))
    assert "**Verdict:** SPLIT" in closing and "Two of three advisors lean against." in closing
    assert "**Referee's recommendation** (the referee's, not the verdict): " in closing
    assert " [O1] — Run a trial first." in closing  # the option's label with its id, never a bare "for"


async def test_a_referee_naming_no_option_on_the_table_recommends_none(tmp_path: Path) -> None:
    referee = {"verdict": "Split.", "reads": "SPLIT", "recommends": "adopt it, obviously",
               "recommendation": "Talk again next month."}
    closing, _ = await run_council(tmp_path, council(referee))
    assert "**Referee's recommendation** (the referee's, not the verdict): none — Talk again next month." in closing


LANGUAGE_FREE = "whatever language you write in"  # what the stance instruction says of its form


def polish_council(body: dict[str, Any]) -> str:
    """A council told to write in Polish. The model writes the stance line's keyword and label as the prompt
    says: left in English where the form is said to be the same in every language, else translated (a model
    writing Polish writes `Stanowisko: za`, which no keyword list of six languages reads)."""
    text = default_reply(body)
    last = json.dumps(body["messages"][-1], ensure_ascii=False)
    if "Stance: <label>" not in last:
        return text
    assert "Write in Polish" in last
    english = LANGUAGE_FREE in last
    body_text = "Moim zdaniem czterodniowy tydzień pracy się opłaca."
    for name, (label, polish, reason) in {"Pragmatist": ("O1", "za", "zwraca się w pół roku"),
                                          "Visionary": ("O1", "za", "ludzie zostaną dłużej"),
                                          "Skeptic": ("O2", "przeciw", "za wcześnie, brak danych")}.items():
        if f'and only as them:\\n<persona name=\\"{name}\\"' in last:
            line = f"Stance: {label} — {reason}" if english else f"Stanowisko: {polish} — {reason}"
            return f"{body_text}\n\n{line}"
    return text


async def test_a_polish_discussions_stances_are_recorded_in_the_language_independent_form(tmp_path: Path) -> None:
    async with finished(tmp_path, polish_council, topic="Czy wprowadzić czterodniowy tydzień pracy?", flow="council",
                        lang="Polish") as (_, app, chat, did):
        async with app.store.tx() as tx:
            turns = await tx.turns(did)
        recorded = sorted((t.data or {}).get("choice", "none") for t in turns if t.phase == Phase.ADVISOR_OPENING)
        assert recorded == ["O1", "O1", "O2"]
        closing = next(p.text for p in chat.posts(did) if "**Referee's reading.**" in p.text)
        assert "- Skeptic: **" in closing and " [O2]** (new) — za wcześnie, brak danych" in closing
        assert "**Verdict:** LEANING: " in closing and "[O1] — personas:" in closing


def final_claims_consensus(body: dict[str, Any]) -> str:
    """Every persona ends undecided (the fake's default stance line); the final synthesis reads a consensus."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    if "executive_summary" in json.dumps(fmt.get("schema", {})):
        return json.dumps(json.loads(default_reply(body)) | {"executive_summary": "Everyone agreed: adopt it now.",
                                                             "reads": "CONSENSUS"})
    return default_reply(body)


@pytest.mark.parametrize("flow", ["moderated", "open"])
async def test_a_final_synthesis_reading_another_kind_than_the_verdict_is_withheld(tmp_path: Path,
                                                                                   flow: str) -> None:
    async with finished(tmp_path, final_claims_consensus, flow=flow, experts=2) as (fake, _, chat, did):
        closing = next(p.text for p in chat.posts(did) if "**Final synthesis.**" in p.text)
        assert "Everyone agreed" not in closing and "withheld" in closing.lower()
        assert "**Verdict:** NO VERDICT" in closing, closing  # every persona undecided: nothing was chosen
        asked = next(r for r in fake.requests if "executive_summary" in json.dumps(r.get("output_config") or {}))
        assert "Computed verdict:" in json.dumps(asked["messages"][-1])


def round_claims_consensus(body: dict[str, Any]) -> str:
    """Every expert ends undecided (the fake's default stance line); the round synthesis reads a consensus."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    if "next_topic_suggestions" in json.dumps(fmt.get("schema", {})):
        return json.dumps(json.loads(default_reply(body)) | {"summary": "Everyone agreed on the trial.",
                                                             "reads": "CONSENSUS"})
    return default_reply(body)


async def test_a_round_synthesis_reading_another_kind_than_the_verdict_is_withheld(tmp_path: Path) -> None:
    async with finished(tmp_path, round_claims_consensus, experts=2) as (fake, _, chat, did):
        synthesis = next(p.text for p in chat.posts(did) if p.text.startswith("**Round 1 synthesis.**"))
        assert "Everyone agreed" not in synthesis and "Withheld" in synthesis
        assert "**Verdict:** NO VERDICT" in synthesis, synthesis
        asked = next(r for r in fake.requests if "next_topic_suggestions" in json.dumps(r.get("output_config")
                                                                                          or {}))
        assert "Computed verdict: NO VERDICT" in json.dumps(asked["messages"][-1])
