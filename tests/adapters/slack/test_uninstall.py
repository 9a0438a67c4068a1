"""Installation hygiene: app_uninstalled and tokens_revoked remove the workspace's installation, schedules and
digests; its discussions (and so its exports) stay."""

from __future__ import annotations

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def schedules(server: SlackServer) -> list[tuple[str, str]]:
    assert server.core is not None
    async with server.core.store.tx() as tx:
        return [(s.kind, s.workspace) for s in await tx.schedules(enabled_only=False)]


async def test_uninstalling_forgets_schedules_and_digests_and_keeps_discussions(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we adopt Rust?")
    await server.idle()
    d = await only(server)
    await slack.command(f'schedule {d.id} "tomorrow 09:00"')
    await slack.command("digest daily")
    await server.idle()
    assert sorted(await schedules(server)) == [("digest", "T0001"), ("round", "T0001")]

    # Only a person's OAuth token revoked: the bot still works there, nothing is forgotten.
    await slack.event({"type": "tokens_revoked", "tokens": {"oauth": ["U0001"], "bot": []}},
                      kind="event_message")
    await server.idle()
    assert len(await schedules(server)) == 2

    status, _ = await slack.event({"type": "app_uninstalled"}, kind="event_message")
    await server.idle()
    assert status == 200 and await schedules(server) == []
    assert (await only(server)).id == d.id, "discussions are kept (their exports too)"


async def test_a_revoked_bot_token_forgets_the_schedules(slack: Slack, server: SlackServer) -> None:
    await slack.command("digest weekly")
    await server.idle()
    assert await schedules(server) == [("digest", "T0001")]
    await slack.event({"type": "tokens_revoked", "tokens": {"oauth": [], "bot": ["UBOT"]}})
    await server.idle()
    assert await schedules(server) == []
