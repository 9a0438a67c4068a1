"""Council hears the threads it starts: it joins a public channel first, and refuses where it cannot hear."""

from __future__ import annotations

from typing import Any

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


def methods(fake: FakeSlack) -> list[str]:
    return [c.method for c in fake.calls]


async def discussions(server: SlackServer) -> list[Any]:
    assert server.core is not None
    return await server.core.service.guard.discussions()


async def test_a_discussion_in_a_channel_council_had_not_joined_hears_the_first_reply(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    fake.add_channel("C0001", member=False)
    # Before Council is in the channel, Slack sends it nothing from there.
    early = fake.human("C0001", "anyone here?", "U0002")
    assert (await slack.event({"type": "message", "user": "U0002", "text": early.text, "ts": early.ts,
                               "channel": "C0001", "channel_type": "channel"}))[0] == 0

    await slack.command("Should we adopt trunk-based development?")
    await server.idle()
    calls = methods(fake)
    assert calls.index("conversations.join") < calls.index("chat.postMessage"), "joined before posting"
    assert fake.channels["C0001"]["is_member"]
    [d] = await discussions(server)
    status, _ = await slack.reply(d.thread_ref, "What about our release train?", user="U0002")
    assert status == 200, "Slack delivered the reply: Council is in the channel"
    await server.idle()
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [heard] = await tx.human_messages(d.id)
    assert heard.text == "What about our release train?"


async def test_a_private_channel_council_is_not_in_is_refused_before_anything_is_posted(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    fake.add_channel("G0001", private=True)
    response_url = fake.base_url.replace("/api/", "/response/start")
    await slack.command("Should we adopt trunk-based development?", channel="G0001", response_url=response_url)
    await server.idle()
    assert "chat.postMessage" not in methods(fake) and await discussions(server) == []
    [answer] = fake.responses
    assert "/invite @Council" in answer["text"]

    # Invited: the same command now runs there.
    fake.channels["G0001"]["is_member"] = True
    await slack.command("Should we adopt trunk-based development?", channel="G0001")
    await server.idle()
    [d] = await discussions(server)
    assert d.channel == "G0001"


async def test_a_direct_message_is_refused_and_a_digest_needs_council_in_its_channel(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    response_url = fake.base_url.replace("/api/", "/response/dm")
    await slack.command("Should we adopt trunk-based development?", channel="D0001", response_url=response_url)
    await server.idle()
    assert await discussions(server) == [] and "direct message" in fake.responses[-1]["text"]

    fake.add_channel("G0002", private=True)
    await slack.command("digest daily <#G0002|secret>", user="U0003")  # another channel: an admin sets it
    await server.idle()
    assert "/invite @Council" in fake.ephemerals[-1]["text"]
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert await tx.schedules() == []

    fake.add_channel("C0003", member=False)
    await slack.command("digest weekly <#C0003|general>", user="U0003")
    await server.idle()
    assert fake.channels["C0003"]["is_member"], "joined the digest's public channel"
    async with server.core.store.tx() as tx:
        assert [s.target for s in await tx.schedules()] == ["C0003"]


async def test_an_archived_channel_is_refused_with_a_clear_message(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    fake.add_channel("C0004", archived=True)
    await slack.command("Should we adopt trunk-based development?", channel="C0004",
                        response_url=f"http://{fake.host}:{fake.port}/response/archived")
    await server.idle()
    # Slack takes no ephemeral message in an archived channel: the answer goes through the command's response_url.
    assert await discussions(server) == [] and "archived" in fake.responses[-1]["text"]
