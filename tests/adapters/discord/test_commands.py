"""The command tree as Discord sees it: the synced payload, autocomplete answers, every verb, settled buttons."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.slack import translate as slack
from tests.adapters.discord.conftest import Council, running
from tests.fakes import discord_payloads as p
from tests.fakes.discord_api import FakeDiscord, Interaction


@pytest.fixture
async def two_channels(fake: FakeDiscord, tmp_path: Path) -> AsyncIterator[tuple[Council, str]]:
    """A council whose guild has a second text channel (known before the client connects)."""
    other = p.snowflake()
    fake.channels[other] = p.text_channel(other, fake.guild_id, "elsewhere")
    fake.messages[other] = []
    async with running(fake, tmp_path, default_tz="America/New_York") as c:
        yield c, other


async def answered(fake: FakeDiscord, i: Interaction) -> str:
    await fake.wait_for(lambda: i.followups)
    return str(i.followups[-1]["content"])


def command(fake: FakeDiscord, name: str) -> dict:
    return next(c for c in fake.commands if c["name"] == name)


async def test_the_synced_council_command_offers_every_slack_option(council: Council) -> None:
    fake = council.fake
    start = {o["name"]: o for o in command(fake, "council")["options"]}
    flags = slack.FLAG_OPTIONS - {"no-memory"}  # Slack's --no-memory is Discord's memory:off
    assert set(start) - {"topic"} == slack.VALUE_OPTIONS | flags
    assert [ch["value"] for ch in start["memory"]["choices"]] == ["channel", "workspace", "off"]
    assert start["seat"]["type"] == 6  # a member picked from the server
    assert start["topic"]["required"] and start["topic"]["type"] == 3
    assert (start["rounds"]["type"], start["rounds"]["min_value"], start["rounds"]["max_value"]) == (4, 1, 10)
    assert (start["experts"]["min_value"], start["experts"]["max_value"]) == (2, 8)
    assert all(start[f]["type"] == 5 for f in flags)
    assert all(start[n].get("autocomplete") for n in ("every", "next", "tz"))
    digest = {o["name"]: o for o in command(fake, "council-digest")["options"]}
    assert [ch["value"] for ch in digest["cadence"]["choices"]] == ["daily", "weekly", "cron", "off"]
    for verb in ("status", "pause", "resume", "stop", "synthesize", "schedule"):
        ids = next(o for o in command(fake, f"council-{verb}")["options"] if o["name"] == "id")
        assert ids["autocomplete"] and not ids["required"], verb
    assert all(c["contexts"] == [0] and c["integration_types"] == [0] for c in fake.commands)


async def test_autocomplete_offers_this_channels_discussions_and_zones(
        two_channels: tuple[Council, str]) -> None:
    council, other = two_channels
    fake = council.fake
    dana = fake.add_user("Dana")
    for topic, channel in [("Trunk-based development?", fake.channel_id), ("Monorepo or not?", fake.channel_id),
                           ("Secret plans elsewhere", other)]:
        await answered(fake, await fake.slash(dana, "council", channel_id=channel, topic=topic, confirm=True))
    async with council.app.store.tx() as tx:
        ours = {d.topic: d.id for d in await tx.discussions(channel=fake.channel_id)}

    everything = (await fake.wait_for_choices(dana, "council-status", "id", ""))
    assert sorted(ch["value"] for ch in everything) == sorted(ours.values())
    assert all(len(ch["name"]) <= 100 and ch["value"] in ch["name"] for ch in everything)
    mono = await fake.wait_for_choices(dana, "council-stop", "id", "monorepo")
    assert [ch["value"] for ch in mono] == [ours["Monorepo or not?"]]
    by_id = await fake.wait_for_choices(dana, "council-pause", "id", ours["Trunk-based development?"][:5])
    assert ours["Trunk-based development?"] in [ch["value"] for ch in by_id]

    zones = await fake.wait_for_choices(dana, "council", "tz", "berl", topic="x")
    assert zones[0] == {"name": "Europe/Berlin", "value": "Europe/Berlin"}
    every = await fake.wait_for_choices(dana, "council", "every", "1")
    assert [ch["value"] for ch in every][:3] == ["1", "12h", "1d"]


async def test_status_help_schedule_synthesize_and_the_default_zone(two_channels: tuple[Council, str]) -> None:
    council, _ = two_channels
    fake = council.fake
    dana = fake.add_user("Dana")
    await answered(fake, await fake.slash(dana, "council", topic="Should we adopt feature flags?", confirm=True))
    await council.settle()
    d = await council.discussion()
    assert d.tz == "America/New_York", "COUNCIL_DEFAULT_TZ reads times when nobody names a zone"

    status = await answered(fake, await fake.slash(dana, "council-status", id=d.id))
    assert d.id in status and "awaiting" in status
    help_text = await answered(fake, await fake.slash(dana, "council-help"))
    assert "/council-schedule" in help_text and "`next`" in help_text
    bad = await answered(fake, await fake.slash(dana, "council-schedule", id=d.id, when="whenever"))
    assert "I don't understand “whenever” as a time. Try " in bad, bad  # the words it could not read, and examples
    async with council.app.store.tx() as tx:
        assert await tx.schedules(enabled_only=False) == [], "nothing was scheduled"
    nope = await answered(fake, await fake.slash(dana, "council-synthesize", id=d.id))
    assert "can't be synthesized" in nope
    zone = await answered(fake, await fake.slash(dana, "council", topic="x", tz="Mars/Olympus"))
    assert "Mars/Olympus" in zone


async def test_a_final_choice_closes_its_buttons(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council", topic="Should we move to trunk-based development?")
    await answered(fake, i)
    await council.settle()
    d = await council.discussion()
    choice = next(m for m in reversed(fake.thread_messages(d.thread_ref))
                  if any(b.get("label") == "Another round" for r in m["components"] for b in r["components"]))
    click = await fake.click(dana, choice, fake.find_button(choice, "Another round"))
    await fake.wait_for(lambda: click.edits)
    await council.settle()
    # The outbox's edit shows the choice in its own message, with no buttons left to press.
    assert not [b for r in choice["components"] for b in r["components"]]
    assert "Dana chose **Another round**" in choice["content"]
    await council.settle()
    polls = [m for m in fake.thread_messages(d.thread_ref) if m is not choice and m["components"]]
    assert any(not b.get("disabled") for m in polls for r in m["components"] for b in r["components"]), \
        "vote buttons stay open: a ballot may change"


async def test_a_scheduled_round_leaves_the_round_s_choice_open_with_pause_and_synthesize(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    await answered(fake, await fake.slash(dana, "council", topic="Should we move to trunk-based development?"))
    await council.settle()
    d = await council.discussion()
    choice = next(m for m in reversed(fake.thread_messages(d.thread_ref))
                  if any(b.get("label") == "Another round" for r in m["components"] for b in r["components"]))
    click = await fake.click(dana, choice, fake.find_button(choice, "Next round in 1 hour"))
    await fake.wait_for(lambda: click.callbacks)
    await council.settle()
    async with council.app.store.tx() as tx:
        assert await tx.find_schedule("round", d.platform, d.workspace, d.id) is not None, "the round is scheduled"
    # Scheduling chooses nothing yet: the choice, with Pause and Synthesize, waits until that round starts.
    live = {b.get("label") for r in choice["components"] for b in r["components"] if not b.get("disabled")}
    assert {"Pause", "Synthesize", "Another round"} <= live, live


async def test_live_words_grow_in_one_webhook_message_that_becomes_the_post(council: Council) -> None:
    from core.models import Persona, Post, Role

    fake = council.fake
    await answered(fake, await fake.slash(fake.add_user("Dana"), "council", topic="Feature flags?", confirm=True))
    await council.settle()
    d = await council.discussion()
    ada = Persona(key="ada", name="Ada", role=Role.EXPERT, title="Engines", icon=":gear:")
    before = len(fake.thread_messages(d.thread_ref))
    await council.chat.stream(d, ada, "k1", "Flags let us merge <early>")
    await council.chat.stream(d, ada, "k1", "Flags let us merge <early> and often")  # within the gap: skipped
    [live] = fake.thread_messages(d.thread_ref)[before:]
    assert live["author"]["username"] == "Ada" and "merge <early>" in live["content"] and "writing" in live["content"]
    ref = await council.chat.publish(d, Post(kind="turn", key="k1", text="Flags let us merge early and often.",
                                             persona=ada))
    assert fake.thread_messages(d.thread_ref)[before:] == [live], "the post took the live message's place"
    assert live["content"].startswith("Flags let us merge early and often.") and live["id"] in ref


async def test_the_final_synthesis_brings_its_charts_as_attachments(council: Council) -> None:
    fake = council.fake
    # Two rounds: in the second the personas name round 1's proposals by id, so the final poll has their votes.
    await answered(fake, await fake.slash(fake.add_user("Dana"), "council", topic="Adopt Rust?", rounds=2))
    await council.settle()
    d = await council.discussion()
    with_files = [m for m in fake.thread_messages(d.thread_ref)
                  if any(a["filename"].endswith(".png") for a in m["attachments"])]  # synthesis.md comes apart
    assert len(with_files) == 1
    [charts] = with_files
    names = [a["filename"] for a in charts["attachments"]]
    assert "vote.png" in names and all(fake.files[a["id"]].startswith(b"\x89PNG") for a in charts["attachments"])
    assert all(a["description"].startswith(("Bar chart of the vote", "Grid of each persona"))
               for a in charts["attachments"])
    final = next(i for i, m in enumerate(fake.thread_messages(d.thread_ref)) if "Final synthesis" in m["content"])
    assert fake.thread_messages(d.thread_ref).index(charts) > final


async def test_scheduled_times_are_discord_timestamps_every_reader_sees_in_their_own_zone(
        two_channels: tuple[Council, str]) -> None:
    council, _ = two_channels
    fake = council.fake
    dana = fake.add_user("Dana")
    await answered(fake, await fake.slash(dana, "council", topic="Should we adopt feature flags?", confirm=True))
    await council.settle()
    d = await council.discussion()
    at = (datetime.now(UTC) + timedelta(days=2)).replace(second=0, microsecond=0)  # an ISO time, in the window
    epoch = int(at.timestamp())  # Discord's <t:…> takes Unix seconds
    full, relative = f"<t:{epoch}:F>", f"<t:{epoch}:R>"

    said = await answered(fake, await fake.slash(dana, "council-schedule", id=d.id, when=at.isoformat()))
    assert f"{full} ({relative})" in said and "⟦" not in said
    await council.settle()
    notices = [m["content"] for msgs in fake.messages.values() for m in msgs if "scheduled the next round" in
               str(m.get("content"))]
    assert notices and all(full in n and "⟦" not in n for n in notices), notices
    status = await answered(fake, await fake.slash(dana, "council-status", id=d.id))
    assert f"next scheduled round {full}" in status


async def test_config_owners_seats_this_channels_domain_owners_in_its_meetings(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana", admin=True), fake.add_user("Lee")
    assert command(fake, "council-config")["options"][0]["name"] == "owners"
    refused = await answered(fake, await fake.slash(lee, "council-config", owners="<@123>: Everyone; @everyone: All"))
    assert "Only workspace admins can configure this channel" in refused  # a member seats nobody
    lonely = await answered(fake, await fake.slash(dana, "council-config", owners="Dana: Billing"))
    assert "2 to 8 domain owners" in lonely and "/council config" not in lonely, "a Discord person's own words"
    done = await answered(fake, await fake.slash(dana, "council-config", owners="Dana: Billing, invoices; Eli: Mobile"))
    assert "Dana: Billing, invoices; Eli: Mobile" in done
    await answered(fake, await fake.slash(dana, "council", topic="Billing or mobile first?", flow="meeting",
                                          confirm=True))
    await council.settle()
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        seated = {p.name: p.title for p in await tx.personas(d.id) if p.role.value == "owner"}
    assert seated == {"Dana": "Billing, invoices", "Eli": "Mobile"}
    off = await answered(fake, await fake.slash(dana, "council-config", owners="off"))
    assert "generate domain owners for each topic" in off


async def test_config_defaults_shape_the_next_council_in_this_channel(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana", admin=True), fake.add_user("Lee")
    assert [o["name"] for o in command(fake, "council-config")["options"]] == ["owners", "defaults", "tag"]
    refused = await answered(fake, await fake.slash(lee, "council-config", defaults="flow=council tier=heavy"))
    assert "Only workspace admins can configure this channel" in refused  # the same rule as owners
    done = await answered(fake, await fake.slash(dana, "council-config", defaults="flow=council rounds=2 colour=red"))
    assert "start with flow=council rounds=2" in done and "`colour` is not a default I keep" in done
    await answered(fake, await fake.slash(dana, "council", topic="Billing or mobile first?"))
    await council.settle()
    d = await council.discussion()
    assert (d.flow, d.auto_rounds) == ("council", 2)
