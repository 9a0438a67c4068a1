"""Slash commands are written to Discord only when their definitions changed (a hash kept in the database), and a
sync Discord rate-limits for long is logged while start-up goes on."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.adapters.discord.conftest import running
from tests.fakes import discord_rules as r
from tests.fakes.discord_api import FakeDiscord

SYNC = r"^/applications/\d+/commands$"


async def test_commands_are_synced_only_when_their_definitions_changed(fake: FakeDiscord, tmp_path: Path) -> None:
    async with running(fake, tmp_path):
        pass
    async with running(fake, tmp_path):  # a restart with the same commands: nothing to write
        pass
    assert len(fake.calls_to("PUT", SYNC)) == 1
    assert [c["name"] for c in fake.commands][:2] == ["council", "council-list"]

    async with running(fake, tmp_path) as council:  # what was synced before differs from what this build has
        async with council.app.store.tx() as tx:
            await tx.set_command_hash("discord", str(council.client.application_id), "an older build",
                                      datetime.now(UTC))
    async with running(fake, tmp_path):
        pass
    assert len(fake.calls_to("PUT", SYNC)) == 2


async def test_a_rate_limited_sync_is_logged_and_start_up_goes_on(tmp_path: Path,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    clock = r.ManualClock(start=86400 * 20_000 + 3600.0)
    async with FakeDiscord(clock=clock) as fake:
        fake.command_creates[int(clock() // 86400)] = r.COMMAND_CREATES_PER_DAY  # a restart loop used them up
        with caplog.at_level(logging.WARNING):
            async with running(fake, tmp_path) as council:
                assert council.client.is_ready(), "the bot connects and serves what was registered before"
        assert [c for c in fake.calls_to("PUT", SYNC) if c.status == 429] and not fake.commands
        assert any("rate-limited" in m for m in caplog.messages)

        clock.advance(86400)  # the next day: the start syncs, and keeps the hash
        async with running(fake, tmp_path):
            pass
        assert fake.calls_to("PUT", SYNC)[-1].status == 200 and fake.commands
        async with running(fake, tmp_path):
            pass
        assert len(fake.calls_to("PUT", SYNC)) == 2
