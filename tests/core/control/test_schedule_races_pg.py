"""Schedules on PostgreSQL while another replica holds a lock: the day's spend, a slot, a Stop, a digest taken over."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control.permissions import Refused
from core.models import Status
from core.running.effects import save_discussion
from tests.core.conftest import C1, discussion, settle
from tests.core.control.test_digest_holds import built, digest_of_one_discussion
from tests.core.control.test_schedule_mutants import T0, digest_prompts, set_hourly
from tests.core.control.test_schedule_rules import (  # noqa: F401 (clock: a fixture)
    clock,
    reminders,
    schedules,
    waiting,
)
from tests.core.storage.test_invariants_pg import waiting_on_a_lock
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM


async def waits_on_a_lock(app: App) -> None:
    """Until a transaction of the app waits on a lock another holds: each look is a query the server answers, and
    between two looks the waiting task runs; no clock is waited for."""
    for _ in range(2000):
        if await waiting_on_a_lock(app.store):
            return
        await asyncio.sleep(0)
    raise AssertionError("nothing waited for the other transaction's lock")


@pytest.mark.parametrize(("budget", "lock"), [
    ({"council_workspace_budget_usd_per_day": 1.0, "council_process_daily_usd": 0.0}, ("spend", "console", "")),
    ({"council_workspace_budget_usd_per_day": 0.0, "council_process_daily_usd": 1.0}, ("spend",)),
])
async def test_a_digest_written_while_a_turn_starts_waits_for_the_days_spend_and_counts_what_the_turn_reserved(
    pg_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock, budget: dict[str, float],  # noqa: F811
    lock: tuple[str, ...]
) -> None:
    async with built(pg_url, chat, llm, clock, **budget) as app:
        s = await digest_of_one_discussion(app)
        asked = len(llm.prompts)
        llm.cost_per_call = 0.6  # the day has room for one call: the turn's or the digest's
        clock.advance(hours=1)
        async with app.store.tx() as turn:  # a turn starting on another replica locks the day's spend, as it does
            await turn.serialize(*lock)
            writing = asyncio.create_task(app.service.schedules.fire(s.id))
            await waits_on_a_lock(app)
            await turn.hold_workspace_spend("console", "", clock.now(), 0.6)  # and reserves its call
        assert await writing
        assert await digest_prompts(llm, asked) == 0, "the digest asked the model on a spend it read too early"
        assert len(chat.announced) == 1


async def test_a_firing_that_loses_its_slot_to_another_replica_meanwhile_reports_it_did_not_fire(
    pg_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock  # noqa: F811
) -> None:
    async with built(pg_url, chat, llm, clock) as app:
        s = await set_hourly(app)
        slot = s.next_run_at
        assert slot is not None
        clock.set(slot)
        async with app.store.tx() as other:  # another replica claims the slot and records its digest, uncommitted
            assert await other.claim_firing(s.id, slot, slot + timedelta(hours=1), slot)
            await other.add_digest(s.id, slot, T0, slot, slot)
            firing = asyncio.create_task(app.service.schedules.fire(s.id))
            await waits_on_a_lock(app)  # this one read the slot as due, and its claim waits for the other's
        assert not await firing
        async with app.store.tx() as tx:
            assert len(await tx.digests(s.id)) == 1
        assert chat.announced == []


async def test_a_scheduled_round_due_while_the_discussion_is_being_stopped_waits_and_ends_its_schedule(
    pg_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock  # noqa: F811
) -> None:
    async with built(pg_url, chat, llm, clock) as app:
        did = await waiting(app, every="1h")
        [s] = await schedules(app)
        clock.advance(hours=1)
        async with app.store.tx() as stopping:  # a person's Stop on another replica, not yet committed
            d = await stopping.discussion(did, for_update=True)
            assert d is not None
            d.status = Status.STOPPED
            await save_discussion(stopping, d, clock.now())
            firing = asyncio.create_task(app.service.schedules.fire(s.id))
            await waits_on_a_lock(app)
        assert await firing
        await settle(app)
        assert reminders(chat, did) == [], "a stopped discussion was told its next round starts"
        assert (await discussion(app, did)).status == Status.STOPPED
        assert not (await schedules(app))[0].enabled


async def test_a_digest_replaced_by_an_admin_meanwhile_is_not_replaced_again_by_its_former_owner(
    pg_url: str, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock  # noqa: F811
) -> None:
    async with built(pg_url, chat, llm, clock) as app:
        s = await set_hourly(app)  # set by U1
        async with app.store.tx() as admin:  # an admin takes the digest over on another replica, not yet committed
            await admin.upsert_schedule(s.model_copy(update={"created_by": "U2", "trigger": "cron:0 9 * * *"}),
                                        clock.now())
            replacing = asyncio.create_task(app.service.handle(c.SetDigest(
                **C1, user_id="U1", platform="console", channel="C1", cadence="weekly")))
            await waits_on_a_lock(app)
        with pytest.raises(Refused, match="Only the person who set this digest"):
            await replacing
        [after] = await schedules(app)
        assert (after.created_by, after.trigger) == ("U2", "cron:0 9 * * *")
