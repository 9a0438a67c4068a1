"""A workspace member who wants more than their share, through the real bolt app and the fake Web API: no
every-minute digest, no `<!here>` seated, no hijacked digest."""

from __future__ import annotations

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


def ephemerals_to(fake: FakeSlack, user: str) -> list[str]:
    return [e["text"] for e in fake.ephemerals if e["user"] == user]


async def test_a_members_every_minute_digest_is_refused(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    status, body = await slack.command('digest cron "* * * * *"')
    await server.idle()
    said = body + " ".join(ephemerals_to(fake, "U0001"))
    assert status == 200 and "at most one an hour" in said
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert await tx.find_schedule("digest", "slack", "T0001", "C0001") is None


async def test_a_member_cannot_replace_anothers_digest(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("digest daily", user="U0001")
    await server.idle()
    _, body = await slack.command("digest weekly", user="U0002")
    await server.idle()
    assert "Only the person who set this digest or a workspace admin" in body + " ".join(ephemerals_to(fake, "U0002"))
    assert server.core is not None
    async with server.core.store.tx() as tx:
        s = await tx.find_schedule("digest", "slack", "T0001", "C0001")
    assert s is not None and s.created_by == "U0001" and s.trigger == "cron:0 9 * * *"


async def test_a_member_seating_here_is_refused_and_an_admins_names_are_cleaned(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    _, body = await slack.command('config owners "<!here>: Everyone; <@U0002>: Billing"')
    await server.idle()
    assert "Only workspace admins can configure this channel" in body + " ".join(ephemerals_to(fake, "U0001"))
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert await tx.channel_owners("slack", "T0001", "C0001") == []
    await slack.command('config owners "<!channel> Dana: Billing; Eli <@U0002>: <#C0001|general> Mobile"',
                        user="U0003")
    await server.idle()
    async with server.core.store.tx() as tx:
        # The mention seats the person it names (issue 20), under their Slack name, as one mention rebuilt from the id.
        assert await tx.channel_owners("slack", "T0001", "C0001") == ["Dana: Billing", "Lee <@U0002>: Mobile"]


async def test_a_member_cannot_set_the_channels_defaults_and_an_admin_can(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    _, body = await slack.command("config defaults flow=council tier=heavy rounds=5", user="U0001")
    await server.idle()
    assert "Only workspace admins can configure this channel" in body + " ".join(ephemerals_to(fake, "U0001"))
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert await tx.channel_defaults("slack", "T0001", "C0001") == {}
    await slack.command("config defaults flow=council tier=heavy rounds=5", user="U0003")
    await server.idle()
    async with server.core.store.tx() as tx:
        assert await tx.channel_defaults("slack", "T0001", "C0001") == {"flow": "council", "tier": "heavy",
                                                                        "rounds": 5}
