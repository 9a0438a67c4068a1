"""`python -m bot discord` as operators run it: a fresh database, the fake Discord at DISCORD_API_URL."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from tests.adapters.discord.conftest import TOKEN, by_webhook
from tests.fakes.discord_api import FakeDiscord


@pytest.mark.slow  # seconds even on a quiet machine: out of the fast local loop
async def test_the_discord_entry_point_serves_council(fake: FakeDiscord, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "DISCORD_", "DATABASE_"))}
    env.update(DISCORD_TOKEN=TOKEN, DISCORD_API_URL=fake.api_url, DATABASE_URL=f"sqlite:///{tmp_path / 'c.db'}",
               COUNCIL_LOG_LEVEL="WARNING")
    log = (tmp_path / "bot.log").open("wb")
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "discord", cwd=tmp_path, env=env,
                                                stdout=log, stderr=log)
    try:
        await fake.wait_for(lambda: fake.sockets and fake.commands, 60)
        dana = fake.add_user("Dana")
        i = await fake.slash(dana, "council", topic="Should we adopt trunk-based development?", rounds=1)
        await fake.wait_for(lambda: i.followups, 30)
        header = (await fake.wait_for(lambda: fake.messages[fake.channel_id][:1], 30))[0]
        await fake.wait_for(lambda: any("Final synthesis" in m["content"]
                                        for m in by_webhook(fake.thread_messages(header["id"]))), 60)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        log.close()
    output = (tmp_path / "bot.log").read_text()
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert i.callbacks[0]["type"] == 5
