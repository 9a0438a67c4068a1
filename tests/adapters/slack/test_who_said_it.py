"""Who said it, in a Slack meeting where Dana holds a seat (the real Slack app, the real anthropic SDK on the
loopback Messages API, an injected clock): her own reply is hers and never marked "(unverified)"; the ranking her AI
stand-in casts when she is silent is labelled "AI stand-in for Dana" in the tally, the dissents, the stance table,
the export, the page and the decision record, and never credited to Dana; the bot's own words are never marked."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.slack.server import SlackServer
from adapters.web.page import render
from bot.settings import Settings
from bot.wiring import build_app
from core.models import Author, Phase, Status
from core.showing.export import export
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.clock import FakeClock
from tests.fakes.slack_api import FakeSlack

STAND_IN = "AI stand-in for Dana"
OPTIONS = ["Billing fixes", "Mobile app", "Platform", "Search", "Docs", "Payments"]
_SPEAKER = re.compile(r'and only as them:\\n<persona name=\\"([^"\\]+)\\"')


def meeting(body: dict[str, Any]) -> str:
    """The owners rank Billing fixes first; Dana's stand-in leaves it out. Eli cites a ticket nobody gave."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    fields = set((fmt.get("schema") or {}).get("properties", {}))
    m = _SPEAKER.search(json.dumps(body["messages"][-1]))
    who = m.group(1) if m else ""
    if fields == {"options"}:
        return json.dumps({"options": OPTIONS})
    if {"ranking", "stance", "label"} <= fields:
        order = ["O4", "O5", "O6"] if who == STAND_IN else ["O1", "O2", "O3"]  # ids of the options fixed above
        return json.dumps({"ranking": [{"item": x, "why": f"{x} matters"} for x in order],
                           "stance": f"{order[0]} first", "label": order[0]})
    reply = default_reply(body)
    return reply.replace("Here is my view", "Ticket #4521 shows it. Here is my view") if who == "Eli" else reply


@pytest.fixture
async def anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic(reply=meeting) as server:
        yield server


async def test_dana_in_person_and_her_stand_in_are_told_apart_everywhere(
        fake: FakeSlack, anthropic: FakeAnthropic, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                        anthropic_api_key="sk-test", anthropic_base_url=anthropic.base_url)
    clock = FakeClock()
    server = SlackServer(skipping_config(fake), lambda chats: build_app(settings, chats, clock=clock))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
            await slack.command('config owners "<@U0001|dana>: Billing; Eli: Mobile app; Fay: Platform"', user="U0003")
            await server.idle()
            await slack.command("Billing fixes or the mobile app first? --flow meeting --rounds 2")
            await server.idle()
            assert server.core is not None
            [d] = await server.core.service.guard.discussions()
            await slack.reply(d.thread_ref, "Incident INC-4410 broke invoicing twice; billing goes first.")
            await server.idle()
            clock.advance(timedelta(minutes=31))  # Dana is silent on her ranking: her stand-in casts it
            await server.core.driver.sweep()
            await server.idle()
        async with server.core.store.tx() as tx:
            d2 = await tx.discussion(d.id)
            turns = await tx.turns(d.id)
            [record] = await tx.decisions_found("slack", "T0001", None)
        doc = await export(server.core.store, d.id)
    finally:
        await server.stop()
    assert d2 is not None and d2.status == Status.DONE, d2 and d2.blocked_reason
    thread = [m.text + json.dumps(m.blocks, ensure_ascii=False) for m in fake.thread("C0001", d.thread_ref)]

    [hers] = [t for t in turns if t.phase == Phase.PROPOSAL and t.author == Author.PERSON]
    assert "INC-4410" in hers.text and "(unverified)" not in hers.text, "a person's own words are never marked"
    [eli] = [t for t in turns if t.phase == Phase.PROPOSAL and "#4521" in t.text]
    assert "Ticket #4521 (unverified)" in eli.text and eli.author == Author.PERSONA, "a persona's claim still is"
    [ranked] = [t for t in turns if t.phase == Phase.RANKED_VOTE and t.author == Author.STAND_IN]

    recommendation = next(t for t in thread if "Council Recommendation" in t)
    assert "ranked this #1" in recommendation and "#1 (unverified)" not in recommendation, "the bot's words"
    assert re.search(f"{STAND_IN} left Billing fixes.* out of their top three", recommendation)
    assert f"• {STAND_IN}: *Search" in recommendation, "the stance table (Slack shows bullets and single stars)"
    for credited in (r"(?<!AI stand-in for )Dana left", r"\(Dana\)", r"[-•] Dana: \*"):
        assert not re.search(credited, recommendation), credited

    by_key = {t["key"]: t for t in doc["turns"]} if doc else {}
    assert by_key[ranked.key]["author"] == STAND_IN and by_key[ranked.key]["stand_in_for"] == "Dana"
    assert by_key[ranked.key]["written_by"] is None and by_key[ranked.key]["authorship"] == "stand_in"
    assert by_key[hers.key]["author"] == "Dana" and by_key[hers.key]["written_by"] == "Dana"
    assert by_key[hers.key]["authorship"] == "person"
    page = render(doc or {})
    assert page.count(STAND_IN) >= 1 and "written by Dana in person" in page
    assert [s["stance"] for s in record.stances if s["persona"] == STAND_IN] == ["O4 first"], record.stances
    assert not [s for s in record.stances if s["persona"] == "Dana"]


PROPOSALS = ["Adopt Rust", "Stay on Go"]


def moderated(body: dict[str, Any]) -> str:
    """The synthesis proposes Adopt Rust or Stay on Go; every stance line puts Adopt Rust on the table."""
    fmt = (body.get("output_config") or {}).get("format") or {}
    if "proposals" in set((fmt.get("schema") or {}).get("properties", {})):
        data = json.loads(default_reply(body))
        return json.dumps({**data, "proposals": PROPOSALS})
    reply = default_reply(body)
    return reply.replace("Stance: undecided — it depends on what the trial shows", "Stance: new: Adopt Rust — it pays")


async def test_a_stand_ins_poll_position_is_the_stand_ins(fake: FakeSlack, tmp_path: Path) -> None:
    async with FakeAnthropic(reply=moderated) as anthropic:
        settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=anthropic.base_url)
        clock = FakeClock()
        server = SlackServer(skipping_config(fake), lambda chats: build_app(settings, chats, clock=clock))
        await server.start()
        try:
            async with aiohttp.ClientSession() as session:
                slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
                await slack.command("Should we adopt Rust? --rounds 1 --experts 2 --seat <@U0001|dana>")
                await server.idle()
                assert server.core is not None
                clock.advance(timedelta(minutes=31))  # Dana is silent: her stand-in speaks, then stands in at once
                await server.core.driver.sweep()
                await server.idle()
            [d] = await server.core.service.guard.discussions()
            doc = await export(server.core.store, d.id)
        finally:
            await server.stop()
    assert d.status == Status.DONE, d.blocked_reason
    [asked] = [json.dumps(b["messages"], ensure_ascii=False) for b in anthropic.requests
               if "proposals" in json.dumps((b.get("output_config") or {}).get("format") or {})]
    assert f"Initial statement] {STAND_IN}:" in asked, "the moderator reads whose words they were"
    assert "Initial statement] Dana:" not in asked
    twice = STAND_IN.replace("Dana", STAND_IN)  # the stand-in's own later turn reads its statement named once
    assert not [b for b in anthropic.requests if twice in json.dumps(b["messages"], ensure_ascii=False)]
    # The round's poll offers the question's whole list: its opening answers, Adopt Rust, and the proposals.
    [poll] = [p for p in (doc or {})["polls"] if not p["final"] and set(PROPOSALS) <= set(p["options"])]
    voters = {b["user"] for b in poll["ballots"] if b["is_ai"]}
    assert STAND_IN in voters and "Dana" not in voters, voters
    closed = [m.text + json.dumps(m.blocks, ensure_ascii=False) for m in fake.thread("C0001", d.thread_ref)
              if "· personas:" in m.text + json.dumps(m.blocks, ensure_ascii=False)]  # a closed poll's tally
    assert closed and all(STAND_IN in t for t in closed), closed
