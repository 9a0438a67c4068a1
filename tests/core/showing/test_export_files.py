"""Exports a team can file, in every flow: the verdict, the stance table and what is left open (the council's own
questions, the referee's tensions, the people's unanswered messages), and seed 000's folder layout."""

from __future__ import annotations

import json

import pytest

from bot.wiring import App
from core.control import commands as c
from core.models import Phase, Status
from core.showing.export import artifacts, export, layout
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

ROUNDS = {"moderated": 1, "council": 1, "meeting": 2, "open": 1}


async def finished(app: App, llm: ScriptedLLM, flow: str) -> str:
    """A discussion of `flow` in which a person writes while the closing is written: left unanswered."""
    started: list[str] = []
    llm.on_phase[Phase.FINAL_SYNTHESIS] = lambda: app.service.handle(c.PostHumanMessage(
        **C1, discussion_id=started[0], text="Who signs off the budget?", event_id="Ev9", user_id="U7",
        user_name="Rosa"))
    started.append((await app.service.handle(start(topic="Should we rewrite billing?", flow=flow,
                                                   rounds=ROUNDS[flow], experts=2))).discussion_id)
    await settle(app)
    assert (await discussion(app, started[0])).status == Status.DONE
    return started[0]


@pytest.mark.parametrize("flow", list(ROUNDS))
async def test_every_flows_export_has_the_verdict_the_stances_and_what_is_left_open(
    app: App, chat: RecordingChat, llm: ScriptedLLM, flow: str
) -> None:
    did = await finished(app, llm, flow)
    doc = await export(app.store, did)
    assert doc is not None
    files = artifacts(doc)
    synthesis, questions = files["synthesis.md"], files["open-questions.md"]
    assert "**Verdict:**" in synthesis and doc["closing"]["verdict"] in synthesis
    assert "## Stances after round" in synthesis
    for row in doc["closing"]["stances"]:
        assert f"| {row['persona']} | {row['label']} |" in synthesis
    assert "polls below" not in synthesis
    assert "Rosa: Who signs off the budget?" in questions, questions
    assert len(questions.splitlines()) > 4, "more than a heading"
    if flow == "council":
        tensions = [t for s in doc["syntheses"] if s["kind"] == "final" for t in s["data"]["tensions"]]
        assert tensions and all(f"Tension: {t}" in questions for t in tensions)


async def test_the_folder_layout_of_seed_000(app: App, llm: ScriptedLLM) -> None:
    did = await finished(app, llm, "moderated")
    doc = await export(app.store, did)
    assert doc is not None
    files = layout(doc)
    manifest = json.loads(files["manifest.json"])
    assert manifest["id"] == did and manifest["title"] == "Should we rewrite billing?"
    assert {f"personas/{p['id']}.json" for p in manifest["personas"]} == {k for k in files if k.startswith("personas/")}
    first = json.loads(files["rounds/001.json"])
    assert first["roundId"] == 1 and first["synthesis"]["proposals"]
    assert first["metadata"]["messageCount"] == len(first["messages"]) > 5
    assert any(m["from"] == "Moderator" for m in first["messages"])
    final = json.loads(files["artifacts/synthesis.json"])
    assert final["final"]["recommendations"] and final["closing"]["verdict"]
    assert files["artifacts/synthesis.md"] == artifacts(doc)["synthesis.md"]
    assert "Rosa" in files["artifacts/open-questions.md"]
