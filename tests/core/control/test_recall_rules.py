"""Which decision records a person is shown, rule by rule, on both backends: their home tab lists the newest of the
channels they are in (an admin's, every public channel's), never another workspace's or platform's; a private
channel's records stay in that channel, for admins too; a search reaches the channels the member is in and lists
at most ten; Revisit starts a discussion seeded with the record, carrying who asks and from where, only where the
record may be shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from core.control import commands as c
from core.control.permissions import Policy
from core.control.recall import Recall
from core.control.replies import Reply, UserError
from core.models import Decision, Discussion, Status
from core.storage.db import make_engine, migrate
from core.storage.store import Store

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# (discussion, platform, workspace, channel, private, hours after T0)
RECORDS = [("pub1-earliest", "slack", "T1", "C1", False, -2), ("pub1-early", "slack", "T1", "C1", False, -1),
           ("pub1", "slack", "T1", "C1", False, 1), ("pub2", "slack", "T1", "C2", False, 2),
           ("priv", "slack", "T1", "G1", True, 3), ("other-ws", "slack", "T2", "C1", False, 4),
           ("other-platform", "discord", "T1", "C1", False, 5), ("pub1-later", "slack", "T1", "C1", False, 6)]


@dataclass
class Started:
    """What Revisit asked to start: the real service would run it."""

    commands: list[c.StartDiscussion] = field(default_factory=list)

    async def __call__(self, cmd: c.StartDiscussion) -> Reply:
        self.commands.append(cmd)
        return Reply(text="started", discussion_id="new")


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    engine = make_engine(db_url)
    await migrate(engine)
    s = Store(engine)
    async with s.tx() as tx:
        for did, platform, workspace, channel, private, hours in RECORDS:
            at = T0 + timedelta(hours=hours)
            await tx.add_discussion(Discussion(id=did, topic=f"Trunk-based development for {did}?",
                                               status=Status.DONE, platform=platform, workspace=workspace,
                                               channel=channel, created_at=at, updated_at=at, budget_usd=5.0))
            await tx.add_decision(Decision(discussion_id=did, platform=platform, workspace=workspace, channel=channel,
                                           topic=f"Trunk-based development for {did}?", flow="meeting",
                                           decided="Go trunk-based.", decided_at=at, private=private))
    yield s
    await s.close()


def asker(channel: str = "C1", admin: bool = False) -> c.Command:
    return c.Command(user_id="U1", user_name="Ann", is_admin=admin, platform="slack", workspace="T1",
                     in_channel=channel)


async def record_id(store: Store, did: str) -> int:
    async with store.tx() as tx:
        record = await tx.decision_of(did)
    assert record is not None
    return record.id


async def test_a_members_home_lists_the_newest_records_of_their_channels_only(store: Store) -> None:
    recall = Recall(store, Policy(), Started())
    found = await recall.recent(asker("C1"), member_of=["C2"], limit=10)
    assert [d.discussion_id for d in found] == ["pub1-later", "pub2", "pub1", "pub1-early", "pub1-earliest"]
    assert [d.discussion_id for d in await recall.recent(asker("C1"), member_of=["C2"], limit=2)] == [
        "pub1-later", "pub2"]


async def test_an_admins_home_lists_every_public_channel_and_a_private_one_only_when_in_it(store: Store) -> None:
    recall = Recall(store, Policy(), Started())
    outside = await recall.recent(asker("C1", admin=True), member_of=[], limit=10)
    assert [d.discussion_id for d in outside] == ["pub1-later", "pub2", "pub1", "pub1-early", "pub1-earliest"]
    inside = await recall.recent(asker("C1", admin=True), member_of=["G1"], limit=3)
    assert [d.discussion_id for d in inside] == ["pub1-later", "priv", "pub2"]
    # An admin named by the deployment, not by the platform, is an admin all the same.
    named = await Recall(store, Policy(admins=frozenset({"U1"})), Started()).recent(asker("C1"), [], limit=2)
    assert [d.discussion_id for d in named] == ["pub1-later", "pub2"]


async def test_revisit_starts_in_the_askers_channel_seeded_with_the_record(store: Store) -> None:
    started = Started()
    recall = Recall(store, Policy(), started)
    record = await record_id(store, "pub1")
    await recall.revisit(c.Revisit(decision_id=record, user_id="U1", user_name="Ann", platform="slack",
                                   workspace="T1", in_channel="C1", tz="Europe/Berlin", private=False))
    [start] = started.commands
    assert (start.topic, start.flow, start.channel, start.revisits) == (
        "Trunk-based development for pub1?", "meeting", "C1", record)
    assert (start.platform, start.workspace, start.user_id, start.user_name, start.tz) == (
        "slack", "T1", "U1", "Ann", "Europe/Berlin")


async def test_revisit_refuses_a_record_the_asker_cannot_see_from_here(store: Store) -> None:
    started = Started()
    recall = Recall(store, Policy(), started)
    pub2, other_ws, other_platform = [await record_id(store, x) for x in ("pub2", "other-ws", "other-platform")]
    for record in (pub2, other_ws, other_platform, 9999):
        with pytest.raises(UserError):
            await recall.revisit(c.Revisit(decision_id=record, user_id="U1", platform="slack", workspace="T1",
                                           in_channel="C1"))
    # An admin revisits another channel's public record; a private channel's stays in that channel.
    await recall.revisit(c.Revisit(decision_id=pub2, user_id="U1", is_admin=True, platform="slack",
                                   workspace="T1", in_channel="C1"))
    priv = await record_id(store, "priv")
    with pytest.raises(UserError):
        await recall.revisit(c.Revisit(decision_id=priv, user_id="U1", is_admin=True, platform="slack",
                                       workspace="T1", in_channel="C1"))
    await recall.revisit(c.Revisit(decision_id=priv, user_id="U1", platform="slack", workspace="T1",
                                   in_channel="G1"))
    assert [(s.revisits, s.channel) for s in started.commands] == [(pub2, "C1"), (priv, "G1")]


async def recalled(store: Store, channel: str = "C1", admin: bool = False, **kw: object) -> list[str]:
    start = c.StartDiscussion(topic="Trunk-based development: time to revisit?", user_id="U1", is_admin=admin,
                              platform="slack", workspace="T1", channel=channel, in_channel=channel,
                              **kw)  # type: ignore[arg-type]
    async with store.tx() as tx:
        return [d.discussion_id for d in await Recall(store, Policy(), Started()).recalled(tx, start)]


async def test_without_memory_a_discussion_opens_with_nothing_but_the_record_it_revisits(store: Store) -> None:
    assert await recalled(store, memory="off") == []
    assert await recalled(store, memory="off", revisits=await record_id(store, "pub2")) == ["pub2"]


async def test_a_discussion_opens_with_at_most_three_of_its_channels_records_the_revisited_first(
        store: Store) -> None:
    own = await recalled(store)
    assert len(own) == 3 and set(own) < {"pub1-earliest", "pub1-early", "pub1", "pub1-later"}
    seeded = await recalled(store, revisits=await record_id(store, "pub1"))
    assert seeded[0] == "pub1" and len(seeded) == 3 and len(set(seeded)) == 3  # found again by topic: once
    elsewhere = await recalled(store, revisits=await record_id(store, "pub2"))
    assert elsewhere[0] == "pub2" and set(elsewhere[1:]) < {"pub1-earliest", "pub1-early", "pub1", "pub1-later"}


async def test_a_private_channels_records_open_discussions_in_that_channel_alone(store: Store) -> None:
    priv = await record_id(store, "priv")
    assert "priv" not in await recalled(store, admin=True, memory="workspace", member_of=["G1"])
    assert "priv" not in await recalled(store, revisits=priv)
    assert await recalled(store, channel="G1") == ["priv"]
    assert await recalled(store, channel="G1", revisits=priv) == ["priv"]


async def test_workspace_memory_reaches_the_channels_the_starter_is_in(store: Store) -> None:
    member = await recalled(store, channel="C2", memory="workspace", member_of=["C3"])
    assert member == ["pub2"]  # C1's records are not the member's to see from C2
    admin = await recalled(store, channel="C2", admin=True, memory="workspace")
    assert "pub2" in admin and len(admin) == 3
    reached = await recalled(store, channel="C2", memory="workspace", member_of=["C1"])
    assert len(reached) == 3 and set(reached) <= {"pub2", "pub1-earliest", "pub1-early", "pub1", "pub1-later"}


async def test_a_search_reaches_the_channels_the_member_is_in_and_lists_at_most_ten(store: Store) -> None:
    async with store.tx() as tx:
        for i in range(12):
            at = T0 + timedelta(days=1, minutes=i)
            await tx.add_discussion(Discussion(id=f"many{i}", topic=f"Billing provider number {i}?",
                                               status=Status.DONE, platform="slack", workspace="T1", channel="C3",
                                               created_at=at, updated_at=at, budget_usd=5.0))
            await tx.add_decision(Decision(discussion_id=f"many{i}", platform="slack", workspace="T1", channel="C3",
                                           topic=f"Billing provider number {i}?", flow="meeting",
                                           decided="Stay.", decided_at=at))
    recall = Recall(store, Policy(), Started())
    here = await recall.search(c.SearchDecisions(words="trunk", user_id="U1", platform="slack", workspace="T1",
                                                 in_channel="C1", member_of=["C2"]))
    assert "pub2?" in here.text and "pub1?" in here.text and "Billing" not in here.text
    assert "pub2?" not in (await recall.search(c.SearchDecisions(
        words="trunk", user_id="U1", platform="slack", workspace="T1", in_channel="C1"))).text
    many = await recall.search(c.SearchDecisions(words="billing", user_id="U1", platform="slack", workspace="T1",
                                                 in_channel="C3"))
    assert sum(f"Billing provider number {i}?" in many.text for i in range(12)) == 10
    assert "Trunk" not in many.text
    # An admin searching from outside a private channel is not shown its records either.
    admin = await recall.search(c.SearchDecisions(words="trunk", user_id="U1", is_admin=True, platform="slack",
                                                  workspace="T1", in_channel="C1"))
    assert "pub2?" in admin.text and "priv?" not in admin.text


async def test_revisit_carries_who_asks_and_where_and_a_flow_no_longer_known_becomes_moderated(
        store: Store) -> None:
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id="legacy", topic="An old flow?", status=Status.DONE, platform="slack",
                                           workspace="T1", channel="C1", created_at=T0, updated_at=T0,
                                           budget_usd=5.0))
        await tx.add_decision(Decision(discussion_id="legacy", platform="slack", workspace="T1", channel="C1",
                                       topic="An old flow?", flow="round-robin", decided="Yes.", decided_at=T0))
    started = Started()
    recall = Recall(store, Policy(), started)
    await recall.revisit(c.Revisit(decision_id=await record_id(store, "legacy"), user_id="U1", is_admin=True,
                                   groups=["S1"], platform="slack", workspace="T1", in_channel="C1", in_dm=False,
                                   private=True))
    await recall.revisit(c.Revisit(decision_id=await record_id(store, "pub1"), user_id="U1", platform="slack",
                                   workspace="T1", in_channel="C1", in_dm=True))
    legacy, dm = started.commands
    assert (legacy.flow, legacy.private, legacy.is_admin, legacy.groups, legacy.in_channel) == (
        "moderated", True, True, ["S1"], "C1")
    assert (dm.flow, dm.private, dm.is_admin, dm.in_dm) == ("meeting", False, False, True)
