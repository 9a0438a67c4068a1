"""Exports a team can file, in every flow: a header (topic, flow, date, roster, link), the verdict and the stance
table once each, a meeting's ranking beside its owners', what is left open (once each), the charts, and seed 000's
folder layout with its resume context."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from bot.wiring import App
from core.control import commands as c
from core.models import Phase, PostFile, Status
from core.showing import chart_material
from core.showing.export import export
from core.showing.filing import artifacts, folder, layout
from core.showing.pages import PageLinks
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


PAGES = PageLinks(base_url="https://council.example", secret="s3cret")
NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize("flow", list(ROUNDS))
async def test_every_flows_export_has_one_header_one_stance_table_one_verdict_and_what_is_left_open(
    app: App, chat: RecordingChat, llm: ScriptedLLM, flow: str
) -> None:
    did = await finished(app, llm, flow)
    doc = await export(app.store, did, pages=PAGES, now=NOW)
    assert doc is not None
    files = artifacts(doc)
    synthesis, questions = files["synthesis.md"], files["open-questions.md"]
    assert synthesis.count("**Verdict:**") == 1 and doc["closing"]["verdict"] in synthesis
    assert synthesis.count("Stances after round") == 1, synthesis
    for row in doc["closing"]["stances"]:
        assert f"| {row['persona']}" in synthesis and f"| {row['label']} |" in synthesis
        assert synthesis.count(f"{row['persona']}: **{row['label']}**") == 0, "no bullets beside the table"
    assert "polls below" not in synthesis
    assert "Rosa: Who signs off the budget?" in questions, questions
    # Each file opens with what it is about, how, when, who sat at the table and where to read it.
    link = PAGES.url(did, NOW)
    for text in (synthesis, questions):
        head = text.split("\n\n")[1]
        assert "- **Topic:** Should we rewrite billing?" in head and f"- **Flow:** {flow} · " in head
        assert "- **Date:** " in head and f"- **Link:** {link}" in head and link
        assert all(p["name"] in head for p in doc["personas"]), head
    assert doc["link"] == link and [p["name"] for p in doc["roster"]] == [p["name"] for p in doc["personas"]]
    if flow == "council":
        tensions = [t for s in doc["syntheses"] if s["kind"] == "final" for t in s["data"]["tensions"]]
        assert tensions and all(f"Tension: {t}" in questions for t in tensions)


async def test_a_question_asked_in_two_rounds_is_listed_once(app: App, llm: ScriptedLLM) -> None:
    did = (await app.service.handle(start(topic="Should we rewrite billing?", rounds=2, experts=2))).discussion_id
    await settle(app)
    doc = await export(app.store, did)
    assert doc is not None
    asked = [q for s in doc["syntheses"] if s["kind"] == "round" for q in s["data"]["open_questions"]]
    repeated = {q for q in asked if asked.count(q) > 1}
    assert repeated, "the offline model asks its question in both rounds"
    questions = artifacts(doc)["open-questions.md"]
    for q in set(asked):
        assert questions.count(q) == 1, (q, questions)


async def test_a_meeting_files_the_people_s_ranking_beside_the_owners_and_a_split_leaves_its_question_open(
    app: App, chat: RecordingChat
) -> None:
    did = (await app.service.handle(start(topic="Billing rewrite or mobile app first?", flow="meeting",
                                          rounds=2))).discussion_id
    await settle(app)
    async with app.store.tx() as tx:
        first, second = (await tx.polls(did))[:2]
    # The owners put options[0] first; both people put options[1] first: the people chose otherwise, a split.
    for poll, choice, user_id, name in [(first, 1, "U2", "Sam"), (second, 0, "U2", "Sam"), (first, 1, "U3", "Lee")]:
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=choice, user_id=user_id, user_name=name))
    await app.service.handle(c.ClosePoll(**C1, poll_id=first.id, user_id="U1", user_name="Dana"))
    await settle(app)
    doc = await export(app.store, did)
    assert doc is not None
    ranking = doc["closing"]["ranking"]
    assert ranking["closed"] and ranking["people"] == 2 and ranking["owners"] == 4
    picked = next(x for x in ranking["items"] if x["id"] == first.option_ids[1])
    assert picked["people_firsts"] == 2 and picked["people_average"] == 1.0
    assert json.loads(json.dumps(doc))["closing"]["ranking"] == ranking, "the transcript carries it"
    synthesis, questions = artifacts(doc)["synthesis.md"], artifacts(doc)["open-questions.md"]
    assert "## The people's ranking beside the owners'" in synthesis and "_2 people ranked, 4 owners._" in synthesis
    assert f"| {first.options[1]} [{first.option_ids[1]}] | " in synthesis
    assert doc["closing"]["verdict_kind"] == "SPLIT" and synthesis.count("**Verdict:**") == 1
    assert f"**{doc['closing']['question']}** — still undecided: {doc['closing']['verdict']}" in questions
    assert "_None left open._" not in questions
    async with app.store.tx() as tx:  # the vote chart shows the place that counts, the first
        material = await chart_material.gather(tx, did)
    assert material.poll is not None and material.poll.id == first.id


async def test_the_folder_layout_of_seed_000(app: App, llm: ScriptedLLM) -> None:
    did = await finished(app, llm, "moderated")
    doc = await export(app.store, did)
    assert doc is not None
    chart = PostFile(name="vote.png", data=b"\x89PNG picture", alt="Bar chart of [the] vote", title="Vote: q")
    files = folder(doc, [chart])
    manifest = json.loads(files["manifest.json"])  # type: ignore[arg-type]
    assert manifest["id"] == did and manifest["title"] == "Should we rewrite billing?"
    assert {f"personas/{p['id']}.json" for p in manifest["personas"]} == {k for k in files if k.startswith("personas/")}
    first = json.loads(files["rounds/001.json"])  # type: ignore[arg-type]
    assert first["roundId"] == 1 and first["synthesis"]["proposals"]
    assert first["metadata"]["messageCount"] == len(first["messages"]) > 5
    assert any(m["from"] == "Moderator" for m in first["messages"])
    final = json.loads(files["artifacts/synthesis.json"])  # type: ignore[arg-type]
    assert final["final"]["recommendations"] and final["closing"]["verdict"]
    assert files["artifacts/synthesis.md"] == artifacts(doc, [chart])["synthesis.md"]
    assert "Rosa" in files["artifacts/open-questions.md"]  # type: ignore[operator]
    # The charts beside the synthesis that shows them, their words as the image's text.
    assert files["artifacts/vote.png"] == chart.data and manifest["charts"] == ["artifacts/vote.png"]
    assert "![Bar chart of \\[the\\] vote](vote.png)" in files["artifacts/synthesis.md"]  # type: ignore[operator]
    assert "](vote.png)" not in artifacts(doc)["synthesis.md"], "no picture referred to where none is written"
    # The resume context: where it stands, who holds which position, what is open.
    summary = str(files["context/summary.md"])
    assert summary.startswith("# Where it stands: Should we rewrite billing?")
    assert doc["closing"]["verdict"] in summary and all(r["persona"] in summary for r in doc["closing"]["stances"])
    assert json.loads(files["transcript.json"]) == json.loads(json.dumps(doc))  # type: ignore[arg-type]
    assert set(layout(doc, [chart])) == set(files) - {"artifacts/vote.png"}
