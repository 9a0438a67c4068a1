"""Search replies (scope, log links), the records a discussion opens with, Revisit's refusals and App Home's count."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

import pytest

from core.control import commands as c
from core.control.permissions import Policy
from core.control.recall import Recall
from core.control.replies import UserError
from core.models import Decision, Discussion, Status
from core.showing.decision_log import LogLinks
from core.showing.pages import PageLinks
from core.storage.db import make_engine
from core.storage.store import Store
from tests.core.control.test_recall_rules import Started
from tests.fakes.clock import FakeClock

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
# (discussion, channel, private, hours after T0); all of slack workspace T1
RECORDS = [("c1-old", "C1", False, 1), ("c1-new", "C1", False, 2), ("c2", "C2", False, 3), ("priv", "G1", True, 4)]
TOPIC = "Trunk-based development: time to revisit?"  # on the records' subject
LOGS = LogLinks(PageLinks(base_url="https://council.example", secret="s3cret"))
LINK = re.compile(r"^\[(.+)\]\((\S+)\)$")


async def add(store: Store, did: str, channel: str, private: bool, at: datetime, topic: str = "") -> None:
    topic = topic or f"Trunk-based development for {did}?"
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id=did, topic=topic, status=Status.DONE, platform="slack", workspace="T1",
                                           channel=channel, created_at=at, updated_at=at, budget_usd=5.0))
        await tx.add_decision(Decision(discussion_id=did, platform="slack", workspace="T1", channel=channel,
                                       topic=topic, flow="meeting", decided="Go trunk-based.", decided_at=at,
                                       private=private))


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    s = Store(make_engine(db_url))
    for did, channel, private, hours in RECORDS:
        await add(s, did, channel, private, T0 + timedelta(hours=hours))
    yield s
    await s.close()


async def ids(store: Store, *dids: str) -> set[int]:
    out = set()
    async with store.tx() as tx:
        for did in dids:
            record = await tx.decision_of(did)
            assert record is not None
            out.add(record.id)
    return out


def listed(text: str) -> set[int]:
    return {int(x) for x in re.findall(r"\(record (\d+):", text)}


def links(line: str) -> list[tuple[str, str]]:
    """The line's links, as (label, the channel whose log it opens; "" for the workspace's)."""
    out = []
    for part in line.split(" · "):
        m = LINK.match(part)
        assert m, part
        channel = parse_qs(urlsplit(m[2]).query, keep_blank_values=True)["c"][0]
        out.append((m[1], channel))
    return out


THIS_CHANNEL, WORKSPACE = "Browse this channel's decision log", "Browse the workspace's decision log"


def search(words: str = "trunk", channel: str = "C1", **kw: object) -> c.SearchDecisions:
    return c.SearchDecisions(words=words, user_id="U1", platform="slack", workspace="T1", in_channel=channel,
                             **kw)  # type: ignore[arg-type]


async def test_a_members_search_lists_their_channels_and_links_the_log_of_the_one_asked_in(store: Store) -> None:
    recall = Recall(store, Policy(), Started(), LOGS, FakeClock(T0))
    reply = await recall.search(search(member_of=["C2"]))
    head, *records, last = reply.text.split("\n")
    assert "the channels you are in" in head and "this workspace" not in head
    assert listed("\n".join(records)) == await ids(store, "c1-old", "c1-new", "c2") and len(records) == 3
    assert links(last) == [(THIS_CHANNEL, "C1")]  # not C2's: only the channel it was asked in


async def test_an_admins_search_reaches_the_private_channels_they_are_in_and_links_both_logs(store: Store) -> None:
    recall = Recall(store, Policy(), Started(), LOGS, FakeClock(T0))
    reply = await recall.search(search(is_admin=True, member_of=["G1"]))
    head, *records, last = reply.text.split("\n")
    assert "this workspace" in head
    assert listed("\n".join(records)) == await ids(store, "c1-old", "c1-new", "c2", "priv") and len(records) == 4
    assert links(last) == [(THIS_CHANNEL, "C1"), (WORKSPACE, "")]
    # Asked in a private channel they are in: its records too, without being told they are in it.
    inside = await recall.search(search(channel="G1", is_admin=True))
    assert await ids(store, "priv") <= listed(inside.text)


async def test_a_search_in_a_direct_message_links_no_channels_log(store: Store) -> None:
    recall = Recall(store, Policy(), Started(), LOGS, FakeClock(T0))
    member = await recall.search(search(channel="D1", in_dm=True, member_of=["C1"]))
    _head, *records = member.text.split("\n")
    assert listed(member.text) == await ids(store, "c1-old", "c1-new") and len(records) == 2  # no link line
    admin = await recall.search(search(channel="D1", in_dm=True, is_admin=True))
    assert links(admin.text.split("\n")[-1]) == [(WORKSPACE, "")]
    # Asked from nowhere in particular: no channel's log either.
    nowhere = await recall.search(search(channel="", member_of=["C1"]))
    assert len(nowhere.text.split("\n")) == 3


async def test_without_pages_a_search_reply_is_the_listing_alone(store: Store) -> None:
    reply = await Recall(store, Policy(), Started()).search(search())
    assert "https://" not in reply.text
    _head, *records = reply.text.split("\n")  # no trailing line for links
    assert listed(reply.text) == await ids(store, "c1-old", "c1-new") and len(records) == 2


async def recalled(store: Store, channel: str = "C1", admin: bool = False, **kw: object) -> set[int]:
    start = c.StartDiscussion(topic=TOPIC, user_id="U1", is_admin=admin, platform="slack", workspace="T1",
                              channel=channel, in_channel=channel, **kw)  # type: ignore[arg-type]
    async with store.tx() as tx:
        found = await Recall(store, Policy(), Started()).recalled(tx, start)
    return {d.id for d in found}


async def test_channel_memory_is_that_channels_records_whoever_starts(store: Store) -> None:
    own = await ids(store, "c1-old", "c1-new")
    assert await recalled(store, member_of=["C2"]) == own
    assert await recalled(store, admin=True) == own


async def test_a_shared_channel_opens_with_its_own_records_only(store: Store) -> None:
    own = await ids(store, "c1-old", "c1-new")
    assert await recalled(store, shared=True, memory="workspace", member_of=["C2"]) == own
    assert await recalled(store, shared=True, memory="workspace", admin=True) == own
    # A revisited record of another channel stays out of it; one of its own is welcome.
    [c2] = await ids(store, "c2")
    assert await recalled(store, shared=True, memory="off", revisits=c2) == set()
    assert await recalled(store, shared=True, revisits=c2) == own
    [c1] = await ids(store, "c1-old")
    assert await recalled(store, shared=True, memory="off", revisits=c1) == {c1}


async def test_a_private_channels_record_opens_a_discussion_revisiting_it_there(store: Store) -> None:
    [priv] = await ids(store, "priv")
    assert await recalled(store, channel="G1", memory="off", revisits=priv) == {priv}
    assert await recalled(store, channel="C1", memory="off", revisits=priv) == set()


async def test_app_home_lists_ten_records_unless_asked_for_more(store: Store) -> None:
    for i in range(12):
        await add(store, f"many{i}", "C3", False, T0 + timedelta(days=1, minutes=i), topic=f"Billing {i}?")
    recall = Recall(store, Policy(), Started())
    found = await recall.recent(c.Command(user_id="U1", platform="slack", workspace="T1", in_channel="C3"), [])
    assert [d.discussion_id for d in found] == [f"many{i}" for i in range(11, 1, -1)]


def revisit(record: int, channel: str = "C1", **kw: object) -> c.Revisit:
    return c.Revisit(decision_id=record, user_id="U1", platform="slack", workspace="T1", in_channel=channel,
                     **kw)  # type: ignore[arg-type]


# A refusal's words are what the person gets: each says why and what to do instead.

async def test_an_unknown_record_is_refused_pointing_to_the_decisions_command(store: Store) -> None:
    started = Started()
    with pytest.raises(UserError) as refused:
        await Recall(store, Policy(), started).revisit(revisit(9999))
    assert "9999" in str(refused.value) and "; the decisions command lists them." in str(refused.value)
    assert started.commands == []


async def test_a_private_channels_record_is_refused_elsewhere_saying_where_to_revisit_it(store: Store) -> None:
    started = Started()
    [priv] = await ids(store, "priv")
    with pytest.raises(UserError) as refused:
        await Recall(store, Policy(), started).revisit(revisit(priv, is_admin=True))
    assert str(priv) in str(refused.value)
    assert "comes from a private channel, so it stays there: revisit it from that channel." in str(refused.value)
    assert started.commands == []


async def test_a_shared_channel_refuses_another_channels_record_and_says_why(store: Store) -> None:
    started = Started()
    [c2] = await ids(store, "c2")
    with pytest.raises(UserError) as refused:
        await Recall(store, Policy(), started).revisit(revisit(c2, is_admin=True, shared=True))
    said = str(refused.value)
    assert str(c2) in said and "belongs to this workspace" in said
    assert "people outside it read this channel (it is shared with another organisation or workspace, or has " \
           "guests)" in said
    assert "revisit it from a channel only this workspace's members read." in said
    assert started.commands == []


async def test_revisit_in_a_shared_channel_starts_a_discussion_that_knows_it_is_shared(store: Store) -> None:
    started = Started()
    [c1] = await ids(store, "c1-new")
    await Recall(store, Policy(), started).revisit(revisit(c1, shared=True))
    [start] = started.commands
    assert (start.revisits, start.channel, start.shared) == (c1, "C1", True)
