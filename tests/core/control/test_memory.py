"""Decision records and memory: a finished discussion leaves a record; `decisions trunk` finds it (only where the
asker may see it); a new discussion on the topic opens with it, and the Messages API receives it as quoted data."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.replies import UserError
from core.models import Status
from core.showing.export import export
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock

MARCH = datetime(2026, 3, 12, 9, 0, tzinfo=UTC)
JUNE = datetime(2026, 6, 3, 9, 0, tzinfo=UTC)
WHERE = {"platform": "console", "workspace": "T1"}


@dataclass
class World:
    app: App
    chat: RecordingChat
    fake: FakeAnthropic
    clock: FakeClock


@pytest.fixture
async def world(db_url: str) -> AsyncIterator[World]:
    """On SQLite (FTS5) and PostgreSQL (tsvector + GIN) alike."""
    async with FakeAnthropic() as fake:
        settings = Settings(_env_file=None, database_url=db_url,  # type: ignore[call-arg]
                            anthropic_api_key="sk-test", anthropic_base_url=fake.base_url)
        chat, clock = RecordingChat(), FakeClock(MARCH)
        app = await build_app(settings, {"console": chat}, clock=clock)
        try:
            yield World(app, chat, fake, clock)
        finally:
            await app.close()


async def run(w: World, topic: str, channel: str = "C1", **kw: object) -> str:
    reply = await w.app.service.handle(c.StartDiscussion(
        topic=topic, channel=channel, in_channel=channel, user_id="U1", user_name="Ann", **WHERE, **kw))  # type: ignore[arg-type]
    await w.app.driver.idle()
    async with w.app.store.tx() as tx:
        d = await tx.discussion(reply.discussion_id)
    assert d is not None and d.status == Status.DONE, (d and d.status, d and d.blocked_reason)
    return d.id


def prompts_of(fake: FakeAnthropic, since: int) -> list[str]:
    return [json.dumps(body["messages"]) for body in fake.requests[since:]]


async def test_a_march_decision_is_found_and_opens_the_june_discussion(world: World) -> None:
    march = await run(world, "Should we move to trunk-based development?", flow="meeting", rounds=2)

    found = await world.app.service.handle(c.SearchDecisions(words="trunk", in_channel="C1", user_id="U2", **WHERE))
    assert "Should we move to trunk-based development?" in found.text
    assert f"⟦t:{int(MARCH.timestamp())}:" in found.text  # dated March (each platform shows it in its reader's zone)
    async with world.app.store.tx() as tx:
        [record] = await tx.decisions_found("console", "T1", None)
    # The fake API's rankings name no option's id or label: nothing is matched from them, so no votes count.
    assert record.discussion_id == march and record.flow == "meeting" and record.decided.startswith("Ranking: ")
    assert record.stances and record.link == f"https://chat.invalid/console/{march}"

    world.clock.set(JUNE)
    before = len(world.fake.requests)
    june = await run(world, "Trunk-based development: time to revisit?", rounds=1)
    opening = [p for p in world.chat.posts(june) if p.key == f"{june}:earlier"]
    assert len(opening) == 1 and "Should we move to trunk-based development?" in opening[0].text
    assert opening[0].actions[0].value == str(record.id)  # its Revisit button
    seen = prompts_of(world.fake, before)
    assert seen and all("<decision date=\\\"2026-03-12\\\"" in p for p in seen)  # every persona reads it
    assert all("<decision" not in json.dumps(b["system"]) for b in world.fake.requests[before:])  # data, not rules


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_no_memory_and_unrelated_topics_open_without_it(world: World) -> None:
    await run(world, "Should we move to trunk-based development?", rounds=1)
    before = len(world.fake.requests)
    off = await run(world, "Trunk-based development again?", rounds=1, memory="off")
    other = await run(world, "Which coffee machine for the office?", rounds=1)
    assert not [p for p in world.chat.posts(off) + world.chat.posts(other) if p.key.endswith(":earlier")]
    assert all("<decision" not in p for p in prompts_of(world.fake, before))
    # The case: an earlier decision that shares "team" with the topic is on another subject.
    await run(world, "Should we move the team to a monorepo?", rounds=1)
    before = len(world.fake.requests)
    leads = await run(world, "Should we rotate team leads every six months?", rounds=1)
    assert not [p for p in world.chat.posts(leads) if p.key.endswith(":earlier")]
    assert all("<decision" not in p for p in prompts_of(world.fake, before))


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_records_of_other_channels_only_for_admins_or_with_memory_workspace(world: World) -> None:
    await run(world, "Should we move to trunk-based development?", channel="C1", rounds=1)
    member = await world.app.service.handle(c.SearchDecisions(words="trunk", in_channel="C2", user_id="U2",
                                                               **WHERE))
    admin = await world.app.service.handle(c.SearchDecisions(words="trunk", in_channel="C2", user_id="U3",
                                                             is_admin=True, **WHERE))
    elsewhere = await world.app.service.handle(c.SearchDecisions(
        words="trunk", in_channel="C1", user_id="U3", is_admin=True, platform="console", workspace="T2"))
    assert "No decisions" in member.text and "trunk-based" in admin.text and "No decisions" in elsewhere.text
    here = await run(world, "Trunk-based development for mobile?", channel="C2", rounds=1)
    outsider = await run(world, "Trunk-based development for the web?", channel="C2", rounds=1, memory="workspace")
    wide = await run(world, "Trunk-based development for the API?", channel="C2", rounds=1, memory="workspace",
                     member_of=["C1", "C2"])
    assert not [p for p in world.chat.posts(here) if p.key.endswith(":earlier")]
    assert not [p for p in world.chat.posts(outsider) if p.key.endswith(":earlier")
                and "Should we move to trunk-based development?" in p.text], "C1 is not theirs to see"
    [earlier] = [p for p in world.chat.posts(wide) if p.key.endswith(":earlier")]
    assert "Earlier in this workspace" in earlier.text and "Should we move to trunk-based development?" in earlier.text


async def test_revisit_starts_a_discussion_seeded_with_the_record(world: World) -> None:
    await run(world, "Should we move to trunk-based development?", rounds=1)
    async with world.app.store.tx() as tx:
        [record] = await tx.decisions_found("console", "T1", None)
    refused = c.Revisit(decision_id=record.id, in_channel="C9", user_id="U2", **WHERE)
    with pytest.raises(UserError, match="can't find a decision"):
        await world.app.service.handle(refused)
    reply = await world.app.service.handle(c.Revisit(decision_id=record.id, in_channel="C1", user_id="U2",
                                                     user_name="Bo", **WHERE))
    await world.app.driver.idle()
    async with world.app.store.tx() as tx:
        d = await tx.discussion(reply.discussion_id)
    assert d is not None and d.topic == record.topic and d.channel == "C1" and d.created_by == "U2"
    assert d.options.recalled[0].id == record.id


async def test_the_record_follows_the_peoples_vote_on_the_final_poll(world: World) -> None:
    did = await run(world, "Should we move to trunk-based development?", rounds=1)
    async with world.app.store.tx() as tx:
        [final] = [p for p in await tx.polls(did) if p.final]
    for user, choice in (("U2", 0), ("U3", 0), ("U4", 1), ("U4", 0)):  # U4 changes their mind
        await world.app.service.handle(c.CastBallot(poll_id=final.id, choice=choice, user_id=user, user_name=user,
                                                    in_channel="C1", **WHERE))
    async with world.app.store.tx() as tx:
        [record] = await tx.decisions_found("console", "T1", None)
    shown = f"{final.options[0]} [{final.option_ids[0]}]"
    assert record.people == {shown: 3}
    # The record's verdict is the one the final synthesis shows now, with the people's three votes in it.
    async with world.app.store.tx() as tx:
        [synthesis] = [t for t in await tx.turns(did) if t.key == final.key.removesuffix(":poll")]
    assert synthesis.data is not None and record.verdict == synthesis.data["verdict"]
    assert f"people: {shown} 3 of 3" in record.verdict and f"**Verdict:** {record.verdict}" in synthesis.text
    doc = await export(world.app.store, did)  # what the page and the exports read: the same verdict
    assert doc is not None
    [kept] = [x for x in doc["syntheses"] if x["kind"] == "final"]
    assert f"**Verdict:** {record.verdict}" in kept["text"] and kept["data"]["verdict"] == record.verdict
    await world.app.driver.idle()  # the outbox sends the edit
    sent = world.chat.by_key[synthesis.key]  # the thread's post, edited in place
    posted = sent.updates[-1] if sent.updates else sent.post
    assert f"**Verdict:** {record.verdict}" in posted.text
    found = await world.app.service.handle(c.SearchDecisions(words="trunk", in_channel="C1", user_id="U2", **WHERE))
    # One line: the people's vote once, inside the verdict, which is shown once.
    assert found.text.count(f"{shown} 3") == 1 and found.text.count(record.verdict) == 1
    assert len(found.text.splitlines()) == 2  # the heading and the record
