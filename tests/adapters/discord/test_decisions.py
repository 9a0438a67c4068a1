"""Decision records on Discord: `/council-decisions`, the "Earlier here" opening with its Revisit button."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.discord.conftest import Council, running, settled
from tests.fakes import discord_payloads as p
from tests.fakes.discord_api import FakeDiscord

TOPIC = "Should we move to trunk-based development?"


async def test_decisions_found_and_reopened_in_a_new_council(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    i = await fake.slash(dana, "council", topic=TOPIC, rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    first = await council.discussion()
    assert first.status.value == "done" and not first.options.private  # @everyone may view the channel

    found = await fake.slash(lee, "council-decisions", words="trunk")
    await fake.wait_for(lambda: found.followups)
    assert TOPIC in found.followups[0]["content"] and "<t:" in found.followups[0]["content"]  # dated, reader's zone
    none = await fake.slash(lee, "council-decisions", words="kubernetes")
    await fake.wait_for(lambda: none.followups)
    assert "No decisions matching “kubernetes”" in none.followups[0]["content"]

    again = await fake.slash(dana, "council", topic="Trunk-based development, time to revisit?", rounds=1)
    await fake.wait_for(lambda: again.followups)
    await council.settle()
    thread = (await council.discussion()).thread_ref
    earlier = next(m for m in fake.thread_messages(thread) if "Earlier here" in m["content"])
    assert TOPIC in earlier["content"]
    button = next(b for r in earlier["components"] for b in r["components"] if b["label"].startswith("Revisit"))
    seen = len(council.llm.prompts)
    await fake.click(lee, earlier, button["custom_id"])

    async def three() -> bool:
        async with council.app.store.tx() as tx:
            return len(await tx.discussions()) == 3

    await settled(council, three)
    latest = await council.discussion()
    assert latest.topic == TOPIC and latest.options.recalled and latest.created_by == lee["id"]
    prompts = council.llm.prompts[seen:]
    assert prompts and all("<decision" in "".join(b.text for b in p.shared) for p in prompts)


async def test_a_member_finds_the_records_of_the_channels_they_can_see(fake: FakeDiscord, tmp_path: Path) -> None:
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    for cid, name in (("1000000000000000101", "design"), ("1000000000000000102", "leads")):
        fake.channels[cid] = p.text_channel(cid, fake.guild_id, name)
        fake.messages[cid] = []
    fake.channels["1000000000000000102"]["permission_overwrites"] = [  # Lee may not view #leads
        {"id": lee["id"], "type": 1, "allow": "0", "deny": str(1 << 10)}]
    async with running(fake, tmp_path) as council:
        for cid, topic in (("1000000000000000101", "Trunk-based development for design?"),
                           ("1000000000000000102", "Trunk-based development for the leads?")):
            i = await fake.slash(dana, "council", channel_id=cid, topic=topic, rounds=1)
            await fake.wait_for(lambda i=i: i.followups)
            await council.settle()
        found = await fake.slash(lee, "council-decisions", words="trunk")  # asked from #general
        await fake.wait_for(lambda: found.followups)
        text = found.followups[0]["content"]
        assert "for design?" in text and "for the leads?" not in text
