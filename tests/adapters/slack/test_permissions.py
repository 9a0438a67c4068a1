"""Slack refusals through the real bolt app: another member's Stop or Synthesize is refused privately and nothing
changes; Stop and Synthesize ask for confirmation (Block Kit confirm objects); an id from elsewhere is unknown."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp

from adapters.slack.server import SlackServer
from bot.settings import Settings
from bot.wiring import build_app
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.skipping import skipping_config
from tests.adapters.slack.test_buttons import buttons, with_action
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def test_another_member_pressing_stop_or_synthesize_is_refused_privately(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")  # Dana (U0001) starts; it waits after round 1
    await server.idle()
    d = await only(server)
    header = fake.find("C0001", d.thread_ref)
    assert header is not None
    confirms = {b["action_id"]: b.get("confirm") for b in buttons(header)}
    assert confirms["ctl:stop"]["style"] == "danger" and "for good" in confirms["ctl:stop"]["text"]["text"]
    assert "ctl:synthesize" not in confirms and "ctl:pause" not in confirms, "the choice offers them, once"
    [choice] = with_action(fake, d.thread_ref, '"next:synthesize"')
    chosen = {b["action_id"]: b.get("confirm") for b in buttons(choice)}
    assert "final synthesis" in chosen["next:synthesize"]["text"]["text"] and chosen["next:pause"] is None

    thread_before = len(fake.thread("C0001", d.thread_ref))
    await slack.click(header.ts, "ctl:stop", d.id, user="U0002")
    await slack.click(header.ts, "ctl:synthesize", d.id, user="U0002")  # as a header drawn earlier offered it
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize", user="U0002")
    await server.idle()
    refusals = [e for e in fake.ephemerals if e["user"] == "U0002"]
    assert [e["text"] for e in refusals] == [
        "Only Dana or a workspace admin can stop this discussion.",
        "Only Dana or a workspace admin can ask for the final synthesis of this discussion.",
        "Only Dana or a workspace admin can ask for the final synthesis of this discussion.",
    ]
    after = await only(server)
    assert (after.status, after.round, after.pending) == (Status.WAITING, d.round, d.pending)
    assert len(fake.thread("C0001", d.thread_ref)) == thread_before, "nothing posted in the thread"
    assert buttons(fake.find("C0001", choice.ts)), "the choice is still open"  # type: ignore[arg-type]

    await slack.command(f"status {d.id}", user="U0002", channel="C0777")  # a member elsewhere: no such thing
    await server.idle()
    elsewhere = [e for e in fake.ephemerals if e["user"] == "U0002"][-1]["text"]
    assert elsewhere == f"I can't find a discussion with id `{d.id}`; the list command shows them."

    await slack.click(header.ts, "ctl:stop", d.id)  # the starter may
    await server.idle()
    assert (await only(server)).status == Status.STOPPED


async def test_usage_is_shown_to_admins_only(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("usage", user="U0002")
    await slack.command("usage", user="U0003")  # Ines is a Slack admin (users.info is_admin)
    await server.idle()
    assert [e["text"] for e in fake.ephemerals if e["user"] == "U0002"] == [
        "Only workspace admins can see this workspace's usage."]
    [usage] = [e["text"] for e in fake.ephemerals if e["user"] == "U0003"]
    assert usage.startswith("*Council usage in this workspace*: $0.00 today of $10.00")


@contextlib.asynccontextmanager
async def with_admin_group(fake: FakeSlack, tmp_path: Path, group: str) -> AsyncIterator[tuple[SlackServer, Slack]]:
    """The app as `python -m bot slack` runs it with COUNCIL_ADMINS naming a Slack user group (and a person)."""
    s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                 council_admins=f"{group}, U0999")
    server = SlackServer(skipping_config(fake, admin_groups=frozenset({group})), lambda chats: build_app(s, chats))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            yield server, Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
    finally:
        await server.stop()


async def test_a_user_group_named_in_council_admins_gives_its_members_admin_rights(
    fake: FakeSlack, tmp_path: Path
) -> None:
    fake.usergroups["S0LEADS"] = ["U0002"]  # Lee is in @leads
    async with with_admin_group(fake, tmp_path, "S0LEADS") as (server, slack):
        await slack.command("Should we sunset the legacy mobile app?")  # Dana starts
        await server.idle()
        d = await only(server)
        assert d.thread_ref
        await slack.command("usage", user="U0002")  # an admin through @leads
        await slack.click(d.thread_ref, "ctl:stop", d.id, user="U0002")  # not the starter, but an admin
        await server.idle()
        stopped = await only(server)
    texts = [e["text"] for e in fake.ephemerals if e["user"] == "U0002"]
    assert texts[0].startswith("*Council usage in this workspace*"), texts
    assert not any(t.startswith("Only ") for t in texts), texts
    assert stopped.status == Status.STOPPED
    # Only the group named in COUNCIL_ADMINS is asked about, once while cached.
    assert [c.params.get("usergroup") for c in fake.calls if c.method == "usergroups.users.list"] == ["S0LEADS"]


async def test_a_group_slack_cannot_read_gives_nobody_rights(fake: FakeSlack, tmp_path: Path) -> None:
    async with with_admin_group(fake, tmp_path, "S0UNKNOWN") as (server, slack):  # the fake knows no such group
        await slack.command("usage", user="U0002")
        await server.idle()
    assert [e["text"] for e in fake.ephemerals if e["user"] == "U0002"] == [
        "Only workspace admins can see this workspace's usage."]
