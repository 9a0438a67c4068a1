"""A server's records stay in the server: an announcement channel, which other servers can follow, opens with
its own records only, and a Revisit button pressed there starts nothing."""

from __future__ import annotations

from tests.adapters.discord.conftest import Council
from tests.fakes import discord_rules as r

TOPIC = "Should we move to trunk-based development?"


async def test_an_announcement_channel_gets_no_other_channels_records(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    first = await fake.slash(dana, "council", topic=TOPIC, rounds=1)  # in #general, read by this server only
    await fake.wait_for(lambda: first.followups)
    await council.settle()
    assert (await council.discussion()).status.value == "done"

    for kind, name in ((r.ANNOUNCEMENT, "news"), (r.TEXT, "design")):
        where = await fake.add_channel(kind, name)
        i = await fake.slash(dana, "council", channel_id=where, topic="Trunk-based development for the API?",
                             rounds=1, memory="workspace")
        await fake.wait_for(lambda i=i: i.followups)
        await council.settle()
        d = await council.discussion()
        shown = any(TOPIC in m["content"] for m in fake.thread_messages(d.thread_ref))
        followed = kind == r.ANNOUNCEMENT
        assert shown is not followed and bool(d.options.recalled) is not followed, name
