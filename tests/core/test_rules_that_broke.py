"""Five rules that once broke without a test noticing, each pinned here through the real service and store:
the starter is known by id, never by display name; all-undecided is no CONSENSUS; the outbox drain sends only
under the lease; a digest sees ballots and turns finished in its period; the budget day is COUNCIL_DEFAULT_TZ's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.permissions import Refused
from core.control.replies import UserError
from core.deliberation import stances
from core.models import Ballot, Discussion, Phase, Post, Status, Turn, TurnStatus
from core.storage.store import Store
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

HERE = {"platform": "console", "workspace": "T1", "in_channel": "C1"}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(datetime(2026, 3, 2, 7, 0, tzinfo=UTC))  # Sunday 23:00 in Los Angeles


async def make(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, **settings: object) -> App:
    s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", **settings)  # type: ignore[arg-type]
    return await build_app(s, {"console": chat}, llm=llm, clock=clock)


@pytest.fixture
async def app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[App]:
    application = await make(tmp_path, chat, llm, clock)
    yield application
    await application.close()


# 1. the starter is known by id ----------------------------------------------------------------------------
async def test_someone_with_the_starters_display_name_is_not_the_starter(app: App) -> None:
    did = (await app.service.handle(c.StartDiscussion(topic="Trunk-based development?", channel="C1", user_id="U1",
                                                      user_name="Dana", rounds=None, **HERE))).discussion_id  # type: ignore[arg-type]
    await app.driver.idle()
    with pytest.raises(Refused, match="Only Dana or a workspace admin can stop"):
        await app.service.handle(c.Stop(discussion_id=did, user_id="U2", user_name="Dana", **HERE))
    with pytest.raises(Refused):
        await app.service.handle(c.Pause(discussion_id=did, user_id="", user_name="Dana", **HERE))
    assert (await app.service.handle(c.Stop(discussion_id=did, user_id="U1", user_name="Someone else",
                                            **HERE))).text == "Stopped."


# 2. all-undecided is no consensus ---------------------------------------------------------------------------
@pytest.mark.parametrize("labels", [["undecided", "undecided", "undecided"], ["", "", ""], ["undecided", ""]])
def test_personas_who_all_are_undecided_are_no_consensus(labels: list[str]) -> None:
    verdict = stances.verdict(labels)
    assert not verdict.startswith(("CONSENSUS", "LEANING")) and verdict.startswith("NO VERDICT"), verdict
    assert not stances.verdict(labels, ["Trial", "Trial"]).startswith("CONSENSUS")


def test_one_undecided_persona_breaks_a_consensus() -> None:
    assert stances.verdict(["for", "for", "undecided"]).startswith("LEANING: for")
    assert stances.verdict(["for", "for", ""]).startswith("LEANING: for")


# 3. the outbox drain sends only under the lease -------------------------------------------------------------
async def test_the_drain_sends_nothing_while_another_driver_holds_the_lease(app: App, chat: RecordingChat,
                                                                            clock: FakeClock) -> None:
    did = (await app.service.handle(c.StartDiscussion(topic="Trunk-based development?", channel="C1", user_id="U1",
                                                      rounds=None, **HERE))).discussion_id  # type: ignore[arg-type]
    await app.driver.idle()
    sent = len(chat.sent)
    async with app.store.tx() as tx:
        assert await tx.acquire_lease(did, "another-replica", clock.now(), 60.0)
        await tx.enqueue(did, Post(kind="notice", key=f"{did}:fenced", text="Only the lease holder sends this."),
                         clock.now())
    assert await app.driver.publish(did) is False
    assert len(chat.sent) == sent and all(s.post.key != f"{did}:fenced" for s in chat.sent)
    async with app.store.tx() as tx:
        [(_, post, _, attempts)] = await tx.pending_posts(did)
    assert post.key == f"{did}:fenced" and attempts == 0, "not even an attempt is counted"
    clock.advance(seconds=61)  # the other driver's lease ran out: ours now
    async with app.store.tx() as tx:
        assert await tx.acquire_lease(did, app.driver.config.owner, clock.now(), 60.0)
    assert await app.driver.publish(did) is True
    assert chat.sent[-1].post.key == f"{did}:fenced"
    assert await app.driver.outbox.drain(did) is True  # nothing left to send: done, not refused
    async with app.store.tx() as tx:  # a post waiting out its backoff is not sent before its time
        await tx.enqueue(did, Post(kind="notice", key=f"{did}:later", text="After the backoff."), clock.now())
        [(outbox_id, _, _, _)] = await tx.pending_posts(did)
        await tx.defer_post(outbox_id, clock.now() + timedelta(seconds=30), "refused once")
    assert await app.driver.outbox.drain(did) is False and chat.sent[-1].post.key == f"{did}:fenced"
    clock.advance(seconds=31)
    assert await app.driver.outbox.drain(did) is True and chat.sent[-1].post.key == f"{did}:later"


# 4. a digest sees ballots and turns finished in its period --------------------------------------------------
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


async def quiet_discussion(store: Store, did: str) -> None:
    """A discussion last changed a week before the period."""
    old = T0 - timedelta(days=7)
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id=did, topic=did, status=Status.WAITING, platform="console",
                                           workspace="T1", channel="C1", created_at=old, updated_at=old,
                                           budget_usd=1.0))


async def test_a_digest_covers_a_discussion_whose_only_activity_was_a_ballot(store: Store) -> None:
    await quiet_discussion(store, "voted")
    await quiet_discussion(store, "silent")
    async with store.tx() as tx:
        from core.models import Poll

        poll = await tx.add_poll(Poll(key="voted:p", discussion_id="voted", round=1, question="Which?",
                                      options=["A", "B"], created_at=T0 - timedelta(days=7)))
        assert poll is not None
        await tx.cast(Ballot(poll_id=poll.id, voter_id="U2", voter_name="Lee", choice=1,
                             created_at=T0 + timedelta(hours=2)))
    async with store.tx() as tx:
        moved = await tx.moved("console", "T1", "C1", T0, T0 + timedelta(days=1))
        before = await tx.moved("console", "T1", "C1", T0 - timedelta(days=1), T0)
    assert [d.id for d in moved] == ["voted"] and before == []


async def test_a_digest_covers_a_turn_that_finished_in_its_period(store: Store) -> None:
    await quiet_discussion(store, "long-turn")
    await quiet_discussion(store, "silent")
    async with store.tx() as tx:
        began = T0 - timedelta(hours=1)  # begun before the period, finished in it
        await tx.start_turns([Turn(key="long-turn:1", discussion_id="long-turn", round=1, step=1,
                                   phase=Phase.STATEMENT, persona_key="p", created_at=began)])
        turn = await tx.turn("long-turn:1")
        assert turn is not None
        await tx.save_turn(turn.model_copy(update={"status": TurnStatus.DONE, "finished_at": T0 + timedelta(hours=3)}))
    async with store.tx() as tx:
        assert [d.id for d in await tx.moved("console", "T1", "C1", T0, T0 + timedelta(days=1))] == ["long-turn"]
        assert [d.id for d in await tx.moved("console", "T1", "C1", T0 - timedelta(days=1), T0)] == ["long-turn"]
        assert await tx.moved("console", "T1", "C1", T0 + timedelta(days=1), T0 + timedelta(days=2)) == []


# 5. the budget day is COUNCIL_DEFAULT_TZ's ------------------------------------------------------------------
async def test_the_daily_budget_resets_at_midnight_in_the_default_zone(
    tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    app = await make(tmp_path, chat, llm, clock, council_default_tz="America/Los_Angeles",
                     council_workspace_budget_usd_per_day=0.02, council_starts_per_user_per_hour=0)
    try:
        llm.cost_per_call = 0.01
        start = c.StartDiscussion(topic="Trunk-based development?", channel="C1", user_id="U1", rounds=1, **HERE)  # type: ignore[arg-type]
        await app.service.handle(start)  # Sunday 23:00 in Los Angeles: spends the day's budget
        await app.driver.idle()
        clock.set(datetime(2026, 3, 2, 7, 50, tzinfo=UTC))  # 23:50 there: the same day
        with pytest.raises(UserError, match=r"daily budget.*resets at Mon 2 Mar 00:00 \(America/Los_Angeles\)"):
            await app.service.handle(start)
        clock.set(datetime(2026, 3, 2, 8, 10, tzinfo=UTC))  # 00:10 there: a new day (in UTC still the same one)
        assert "Starting" in (await app.service.handle(start)).text
        await app.driver.idle()
        clock.set(datetime(2026, 3, 3, 0, 30, tzinfo=UTC))  # Monday 16:30 there: still Monday (a new day in UTC)
        with pytest.raises(UserError, match="daily budget"):
            await app.service.handle(start)
    finally:
        await app.close()
