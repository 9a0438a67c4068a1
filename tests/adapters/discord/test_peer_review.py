"""Peer review on Discord: the `peer-review` option through the real client, one aggregate in the thread."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.discord.conftest import running
from tests.fakes.discord_api import FakeDiscord


async def test_a_peer_reviewed_council_posts_one_aggregate_in_its_thread(fake: FakeDiscord, tmp_path: Path) -> None:
    async with running(fake, tmp_path) as council:
        i = await fake.slash(fake.add_user("Dana"), "council", topic="Adopt Rust?", flow="council",
                             **{"peer-review": True})
        await fake.wait_for(lambda: i.followups)
        await council.settle()
        d = await council.discussion()
        assert d.options.peer_review and d.status.value == "done", d.blocked_reason
        thread = [str(m) for m in fake.thread_messages(d.thread_ref)]
        aggregates = [m for m in thread if "Peer review, round 1" in m]
        assert len(aggregates) == 1
        assert all(name in aggregates[0] for name in ("Pragmatist", "Visionary", "Skeptic"))
        asked = [p for p in council.llm.prompts if p.purpose.phase.value == "peer_review"]
        assert len(asked) == 3 and {p.tier for p in asked} == {"light"}
        verdict = next(i for i, m in enumerate(thread) if "Referee" in m and "verdict" in m.lower())
        assert thread.index(aggregates[0]) < verdict
