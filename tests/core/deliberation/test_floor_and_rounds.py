"""The open floor and the moderated rounds as their protocols say, with the real anthropic SDK on the loopback
Messages API: a participant who did not speak this round keeps their latest stance; nobody takes the floor twice
in a row while someone has spoken fewer than two times; `--rounds N` runs another round on the same topic."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import NextAction, Phase, Status
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.chat import RecordingChat

TOPIC = "Should the city ban cars downtown?"
_OPENING = re.compile(r"Open round (\d+) on this topic:\\n<topic>(?:\\n)?([^<]*?)(?:\\n)?</topic>")
_SPEAKER = re.compile(r'and only as them:\\n<persona name=\\"([^"\\]+)\\"')


def schema_of(body: dict[str, Any]) -> set[str]:
    fmt = (body.get("output_config") or {}).get("format") or {}
    return set((fmt.get("schema") or {}).get("properties", {}))


def speaker(body: dict[str, Any]) -> str:
    m = _SPEAKER.search(json.dumps(body["messages"][-1]))
    return m.group(1) if m else ""


class Floor:
    """Three participants, Ada, Ben and Cy. `urgency(name, n)` is what a participant bids the n-th time it is
    asked (from 0); every speech leaves a question open, so the floor runs all its rounds."""

    def __init__(self, urgency: Any, labels: dict[str, str]) -> None:
        self.urgency, self.labels = urgency, labels
        self.names = iter(["Ada", "Ben", "Cy"])
        self.bids: Counter[str] = Counter()
        self.recommendations: list[str] = []

    def __call__(self, body: dict[str, Any]) -> str:
        fields = schema_of(body)
        if {"name", "expertise", "title"} <= fields:  # a slot becomes a participant
            return json.dumps({"name": next(self.names), "title": "Resident", "expertise": ["streets"],
                               "thinking_style": "plain", "bias": "none", "reply_tendency": "short"})
        who = speaker(body)
        if {"urgency", "point"} <= fields:
            n, self.bids[who] = self.bids[who], self.bids[who] + 1
            return json.dumps({"urgency": self.urgency(who, n), "point": "a point", "answers": ""})
        if {"executive_summary", "recommendations"} <= fields and self.recommendations:  # the floor's synthesis
            return json.dumps({**json.loads(default_reply(body)), "recommendations": self.recommendations})
        if {"builds_on_earlier", "proposes_synthesis"} <= fields:
            label = self.labels.get(who, "undecided")
            return json.dumps({"text": f"{who} speaks.", "stance": f"{who} holds {label}", "label": label,
                               "builds_on_earlier": True, "proposes_synthesis": False,
                               "open_question": "Who pays for it?"})
        return default_reply(body)


async def floor(tmp_path: Path, fake: FakeAnthropic, rounds: int) -> tuple[App, RecordingChat, str]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                        anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
    chat = RecordingChat()
    app = await build_app(settings, {"console": chat})
    reply = await app.service.handle(c.StartDiscussion(topic=TOPIC, flow="open", rounds=rounds, experts=3,
                                                       user_id="U1"))
    await app.driver.idle()
    return app, chat, reply.discussion_id


async def speakers(app: App, did: str) -> list[str]:
    async with app.store.tx() as tx:
        names = {p.key: p.name for p in await tx.personas(did)}
        turns = await tx.turns(did)
    said = sorted((t for t in turns if t.phase == Phase.SPEECH and t.text), key=lambda t: (t.round, t.step))
    return [names[t.persona_key] for t in said]


async def test_nobody_takes_the_floor_twice_in_a_row_while_someone_has_spoken_fewer_than_twice(
        tmp_path: Path) -> None:
    # Ada always bids highest: without the rule she would hold the floor all along.
    script = Floor(lambda who, n: {"Ada": 10, "Ben": 3}.get(who, 1), {})
    async with FakeAnthropic(reply=script) as fake:
        app, _, did = await floor(tmp_path, fake, rounds=2)
        try:
            order = await speakers(app, did)
        finally:
            await app.close()
    assert len(order) == 6, order
    for i in range(1, len(order)):
        before = Counter(order[:i])
        short = [n for n in ("Ada", "Ben", "Cy") if n != order[i - 1] and before[n] < 2]
        assert not (order[i] == order[i - 1] and short), f"{order[i]} spoke twice in a row while {short} waited"
    assert order[0] == "Ada" and order.count("Ada") == 3, "the highest bid still speaks whenever the rule allows"


async def test_a_participant_who_did_not_speak_this_round_keeps_their_latest_stance(tmp_path: Path) -> None:
    # Cy bids highest once, speaks first in round 1 and never again: round 2 is Ada's and Ben's.
    script = Floor(lambda who, n: {"Ada": 9, "Ben": 5}.get(who, 10 if n == 0 else 1),
                   {"Ada": "O1", "Ben": "O1", "Cy": "O2"})  # the roster's two answers, by id
    async with FakeAnthropic(reply=script) as fake:
        app, chat, did = await floor(tmp_path, fake, rounds=2)
        try:
            order = await speakers(app, did)
            async with app.store.tx() as tx:
                [record] = await tx.decisions_found("console", "", None)
        finally:
            await app.close()
    assert order[:3].count("Cy") == 1 and "Cy" not in order[3:], order
    closing = next(p.text for p in chat.posts(did) if p.kind == "synthesis" and "Stances after round 2" in p.text)
    cy = next(line for line in closing.splitlines() if line.startswith("- Cy: **"))
    assert "[O2]** (unchanged)" in cy, closing
    assert "undecided" not in closing.split("**Verdict:**")[1].split("people:")[0], closing
    assert "[O1] 2 · " in closing and "[O2] 1 of 3" in closing
    assert [(r["persona"], r["label"].endswith("[O2]")) for r in record.stances if r["persona"] == "Cy"] == [
        ("Cy", True)], record.stances


def openings(fake: FakeAnthropic) -> dict[int, str]:  # also read by the Slack test of `--rounds N`
    """Each round's opening request: the round number and the topic it quotes."""
    out = {}
    for body in fake.requests:
        m = _OPENING.search(json.dumps(body["messages"][-1]))
        if m:
            out[int(m.group(1))] = m.group(2)
    return out


@pytest.fixture
async def anthropic() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as server:
        yield server


async def test_a_deep_dive_stays_a_choice_people_make(anthropic: FakeAnthropic, tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                        anthropic_api_key="sk-test", anthropic_base_url=anthropic.base_url)
    app = await build_app(settings, {"console": RecordingChat()})
    try:
        reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt Rust for billing?", experts=2,
                                                           user_id="U1"))
        await app.driver.idle()
        async with app.store.tx() as tx:
            d = await tx.discussion(reply.discussion_id)
            [synthesis] = [t for t in await tx.turns(reply.discussion_id) if t.phase == Phase.ROUND_SYNTHESIS]
        assert d is not None and d.status == Status.WAITING
        await app.service.handle(c.ChooseNextAction(discussion_id=d.id, action=NextAction.DEEP_DIVE, user_id="U1"))
        await app.driver.idle()
    finally:
        await app.close()
    deeper = (synthesis.data or {})["next_topic_suggestions"][0]
    assert openings(anthropic) == {1: "Should we adopt Rust for billing?", 2: deeper}


async def test_a_participant_who_did_not_speak_this_round_keeps_their_ballot_on_the_final_poll(
        tmp_path: Path) -> None:
    # Round 1 puts two options on the table; Cy backs the second and is silent in round 2, like the table shows.
    script = Floor(lambda who, n: {"Ada": 9, "Ben": 5}.get(who, 10 if n == 0 else 1),
                   {"Ada": "new: Ban cars", "Ben": "new: Ban cars", "Cy": "new: Keep cars"})
    script.recommendations = ["Ban cars", "Keep cars"]
    async with FakeAnthropic(reply=script) as fake:
        app, _, did = await floor(tmp_path, fake, rounds=2)
        try:
            order = await speakers(app, did)
            async with app.store.tx() as tx:
                [poll] = await tx.polls(did)
                ballots = {b.voter_name: poll.options[b.choice] for b in await tx.ballots(poll.id) if b.is_ai}
        finally:
            await app.close()
    assert "Cy" in order[:3] and "Cy" not in order[3:], order
    assert ballots == {"Ada": "Ban cars", "Ben": "Ban cars", "Cy": "Keep cars"}, "Cy's ballot is where Cy stands"
