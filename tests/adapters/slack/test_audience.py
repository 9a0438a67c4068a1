"""A public channel's record is public to this workspace's members only: it never goes into a channel people
outside the workspace read (Slack Connect, a pending invitation to share, an Enterprise Grid's shared channel, or
one with guests or people of another organisation in it), by workspace memory or by an admin's Revisit."""

from __future__ import annotations

import pytest

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_decisions import TOPIC, finished
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

KINDS = ["ext", "pending", "org", "guest", "single-guest", "stranger", "plain", "large", "large-guest"]
INSIDE = {"plain", "large"}  # read by this workspace's members only


def make(fake: FakeSlack, kind: str) -> str:
    """A public channel of the given kind, Council in it, Dana and Ines with whoever makes it that kind."""
    people = ["U0001", "U0003", "UBOT"]
    if kind.startswith("large"):  # more members than one page of conversations.members: every page is read
        for n in range(1000, 1250):
            fake.add_user(f"U{n}", f"Member {n}")
            people.append(f"U{n}")
    if kind == "large-guest":  # the one guest is on the second page
        fake.add_user("U0007", "Gita", guest="multi")
        people.append("U0007")
    if kind in ("guest", "single-guest"):
        fake.add_user("U0007", "Gita", guest="multi" if kind == "guest" else "single")
        people.append("U0007")
    if kind == "stranger":  # a Slack Connect person, as users.info shows them: their own team, their own admin
        fake.add_user("U0008", "Olu", admin=True, team="T0999", connected="T0001")
        people.append("U0008")
    shared = kind if kind in ("ext", "pending", "org") else ""
    fake.add_channel("C0042", member=True, people=people, shared=shared)  # type: ignore[arg-type]
    fake.join("C0042", *people)
    return "C0042"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_public_record_stays_out_of_channels_read_from_outside_the_workspace(
        kind: str, slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.join("C0001", "U0001", "U0003")
    await slack.command(f"{TOPIC} --rounds 1", channel="C0001")
    await server.idle()
    await finished(server)
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    assert not record.private
    channel = make(fake, kind)
    outside = kind not in INSIDE

    await slack.command("Trunk-based development for the API? --rounds 1 --memory workspace", channel=channel)
    await server.idle()
    started = next(d for d in await server.core.service.guard.discussions() if d.channel == channel)
    shown = any(TOPIC in m.text for m in fake.thread(channel, started.thread_ref))
    assert shown is not outside and bool(started.options.recalled) is not outside, kind

    _, said = await slack.command(f"revisit {record.id}", user="U0003", channel=channel)
    await server.idle()
    told = said + " ".join(e["text"] for e in fake.ephemerals if e["user"] == "U0003")
    revisits = [d for d in await server.core.service.guard.discussions() if d.channel == channel and d.topic == TOPIC]
    if outside:
        assert "people outside it read this channel" in told and not revisits, kind
    else:
        assert len(revisits) == 1


async def test_a_slack_connect_admin_is_not_this_workspaces_admin(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.add_user("U0008", "Olu", admin=True, team="T0999", connected="T0001")  # an admin of their own organisation
    await slack.command("usage", user="U0008")
    await server.idle()
    assert "Council usage" not in " ".join(e["text"] for e in fake.ephemerals)
    await slack.command("usage", user="U0003")  # this workspace's admin
    await server.idle()
    assert "Council usage" in fake.ephemerals[-1]["text"]


async def test_an_admin_sees_a_private_channels_spend_not_its_topic_unless_they_are_in_it(
        slack: Slack, server: SlackServer, fake: FakeSlack, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01  # the usage view lists what spent something
    fake.add_channel("G0001", private=True, member=True, people=["U0001", "UBOT"])
    fake.join("G0001", "U0001")
    fake.join("C0001", "U0001", "U0003")
    await slack.command("Should we lay off the platform team? --rounds 1", channel="G0001")
    await server.idle()
    [secret] = await finished(server)
    await slack.command("usage", user="U0003", channel="C0001")  # an admin, not in the private channel
    await server.idle()
    usage = fake.ephemerals[-1]["text"]
    assert "Council usage" in usage and "a discussion in a private channel you are not in" in usage
    assert "lay off" not in usage and secret not in usage
    await slack.command(f"status {secret}", user="U0003", channel="C0001")
    await server.idle()
    assert "I can't find a discussion" in fake.ephemerals[-1]["text"]
    fake.add_channel("G0001", private=True, member=True, people=["U0001", "U0003", "UBOT"])
    fake.join("G0001", "U0003")  # now the admin is in it: they read it like its other members
    await slack.command("usage", user="U0003", channel="C0001")
    await server.idle()
    assert "lay off" in fake.ephemerals[-1]["text"]
    await slack.command(f"status {secret}", user="U0003", channel="C0001")
    await server.idle()
    assert "lay off" in fake.ephemerals[-1]["text"]
