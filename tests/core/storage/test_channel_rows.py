"""A channel's discussions as its digest reads them, through the real store on both backends: what moved in a
period (and only in this channel of this workspace on this platform), what waits on people, and whether the
channel ever had a discussion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.models import Discussion, HumanMessage, Phase, Status, Turn
from core.storage.store import Store

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
END = START + timedelta(days=1)
OLD = START - timedelta(days=7)


async def add(store: Store, did: str, *, updated: datetime = OLD, created: datetime = OLD,
              status: Status = Status.WAITING, platform: str = "slack", workspace: str = "T1",
              channel: str = "C1") -> None:
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id=did, topic=did, status=status, platform=platform, workspace=workspace,
                                           channel=channel, created_at=created, updated_at=updated, budget_usd=1.0))


async def moved(store: Store, start: datetime = START, end: datetime = END, **kw: object) -> list[str]:
    async with store.tx() as tx:
        return [d.id for d in await tx.moved("slack", "T1", "C1", start, end, **kw)]  # type: ignore[arg-type]


async def test_a_change_of_state_in_the_period_counts_from_its_first_instant_to_before_its_last(store: Store) -> None:
    await add(store, "at-start", updated=START, created=OLD + timedelta(hours=2))
    await add(store, "at-end", updated=END)
    await add(store, "before", updated=START - timedelta(microseconds=1))
    await add(store, "inside", updated=START + timedelta(hours=3), created=OLD + timedelta(hours=1))
    assert await moved(store) == ["inside", "at-start"]  # oldest first
    assert await moved(store, limit=1) == ["inside"]


async def test_only_this_channel_of_this_workspace_on_this_platform(store: Store) -> None:
    inside = START + timedelta(hours=1)
    await add(store, "here", updated=inside)
    await add(store, "discord", updated=inside, platform="discord")
    await add(store, "other-workspace", updated=inside, workspace="T2")
    await add(store, "other-channel", updated=inside, channel="C2")
    assert await moved(store) == ["here"]


async def test_a_reply_or_a_turn_begun_in_the_period_counts(store: Store) -> None:
    await add(store, "replied")
    await add(store, "turned")
    await add(store, "replied-before")
    async with store.tx() as tx:
        await tx.add_human_message(HumanMessage(discussion_id="replied", author_id="U1", author_name="Dana",
                                                text="x", created_at=START + timedelta(hours=1)))
        await tx.add_human_message(HumanMessage(discussion_id="replied-before", author_id="U1", author_name="Dana",
                                                text="x", created_at=START - timedelta(hours=1)))
        await tx.start_turns([Turn(key="turned:1", discussion_id="turned", round=1, step=1, phase=Phase.OPENING,
                                   persona_key="moderator", created_at=START + timedelta(hours=2))])
    assert await moved(store) == ["replied", "turned"]
    assert await moved(store, START - timedelta(days=1), START) == ["replied-before"]


async def test_waiting_on_people_is_this_channels_in_those_states_longest_waiting_first(store: Store) -> None:
    await add(store, "paused", status=Status.PAUSED, updated=START)
    await add(store, "waiting", status=Status.WAITING, updated=OLD)
    await add(store, "running", status=Status.RUNNING, updated=OLD)
    await add(store, "elsewhere", status=Status.WAITING, channel="C2")
    await add(store, "other-workspace", status=Status.WAITING, workspace="T2")
    await add(store, "discord", status=Status.WAITING, platform="discord")
    async with store.tx() as tx:
        found = await tx.waiting_on_people("slack", "T1", "C1", [Status.WAITING, Status.PAUSED])
        one = await tx.waiting_on_people("slack", "T1", "C1", [Status.WAITING, Status.PAUSED], limit=1)
    assert [d.id for d in found] == ["waiting", "paused"] and [d.id for d in one] == ["waiting"]


async def test_whether_a_channel_ever_had_a_discussion(store: Store) -> None:
    await add(store, "d1")
    async with store.tx() as tx:
        assert await tx.channel_has_discussions("slack", "T1", "C1")
        assert not await tx.channel_has_discussions("slack", "T1", "C2")
        assert not await tx.channel_has_discussions("slack", "T2", "C1")
        assert not await tx.channel_has_discussions("discord", "T1", "C1")
