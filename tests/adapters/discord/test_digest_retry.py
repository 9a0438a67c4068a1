"""A digest whose post failed is sent again as it was written: the model writes it once, and parts that landed
are not posted twice, however long the retry waits (Discord forgets a nonce after a few minutes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from core.models import Discussion, Poll, Status
from tests.adapters.discord.conftest import Council, running
from tests.fakes.clock import FakeClock
from tests.fakes.discord_api import FakeDiscord, Fault

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)


async def seed(council: Council, n: int) -> None:
    """Finished discussions of the channel, each with a synthesis and a closed poll: a long digest with a chart."""
    fake = council.fake
    async with council.app.store.tx() as tx:
        for i in range(n):
            at = T0 + timedelta(minutes=10 + i)
            d = Discussion(id=f"d{i:03d}", topic=f"Topic {i:03d}: should service {i} move to the new platform "
                           "before the next audit, or wait for the migration tooling to settle?", platform="discord",
                           workspace=fake.guild_id, channel=fake.channel_id, thread_ref=str(900 + i),
                           status=Status.DONE, created_at=at, updated_at=at)
            await tx.add_discussion(d)
            await tx.add_synthesis(f"{d.id}:final:1", d.id, 1, "final", None,
                                   f"Service {i} moves after the audit; the team keeps the old path for a month.", at)
            await tx.add_poll(Poll(key=f"p{i}", discussion_id=d.id, round=1, question=f"When does service {i} move?",
                                   options=["Now", "After the audit", "Never"], closed=True, created_at=at))


def digest_calls(council: Council) -> int:
    return sum(1 for p in council.llm.prompts if "digest" in str(p).lower())


async def test_a_failed_digest_is_sent_again_as_written(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    async with FakeDiscord(clock=lambda: clock.now().timestamp()) as fake, \
            running(fake, tmp_path, clock=clock) as council:
        await seed(council, 30)
        i = await fake.slash(fake.add_user("Dana"), "council-digest", cadence="daily")
        await fake.wait_for(lambda: i.followups)
        async with council.app.store.tx() as tx:
            [schedule] = await tx.schedules(kind="digest")
        # Part 1 lands; part 2 meets a long rate limit (discord.py gives up on it rather than wait minutes).
        fake.faults.append(Fault("POST", rf"^/channels/{fake.channel_id}/messages$", retry_after=600.0, after=1))
        clock.set(T0 + timedelta(hours=1))
        assert await council.app.service.schedules.fire(schedule.id)
        landed = [m["content"] for m in fake.messages[fake.channel_id]]
        assert len(landed) == 1 and "Council digest" in landed[0]
        written = digest_calls(council)
        assert written == 1, "the model condensed the period once"

        clock.advance(minutes=30)  # past the lease, and past the few minutes Discord keeps a nonce
        assert await council.app.service.schedules.deliver_digests() == 1
        parts = [m["content"] for m in fake.messages[fake.channel_id]]
        assert digest_calls(council) == written, "the retry sends what was written; the model is not asked again"
        assert len(parts) == len(set(parts)) >= 2 and parts[0] == landed[0], "no part shows twice"
        assert fake.messages[fake.channel_id][-1]["attachments"], "the chart rides on the last part"
        async with council.app.store.tx() as tx:
            [row] = await tx.digests()
        assert row["sent"]
