"""Discord's living synthesis: each synthesis brings `synthesis.md` with the page link; checks from Discord."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.discord import translate as t
from core.control import commands as c
from tests.adapters.discord.conftest import running
from tests.fakes.discord_api import FakeDiscord

HERE = t.Where(guild_id="1290000000000000001", channel_id="1290000000000000010")
DANA = t.Who(user_id="1280000000000000042", user_name="Dana", guild_id=HERE.guild_id, channel_id=HERE.channel_id)


async def test_each_synthesis_brings_synthesis_md_with_the_page_link(
        fake: FakeDiscord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_PUBLIC_URL", "https://council.example.com")
    monkeypatch.setenv("COUNCIL_WEB_SECRET", "a-secret-for-signing-links-of-32-bytes-or-more")
    async with running(fake, tmp_path) as council:
        i = await fake.slash(fake.add_user("Dana"), "council", topic="Adopt Rust?", rounds=2)
        await fake.wait_for(lambda: i.followups)
        await council.settle()
        d = await council.discussion()
        thread = fake.thread_messages(d.thread_ref)
        [doc] = [m for m in thread if any(a["filename"] == "synthesis.md" for a in m["attachments"])]
        # Written after round 1, then its file replaced in place by round 2's synthesis and the final one.
        assert doc["edited_timestamp"] and len(doc["attachments"]) == 1
        latest = fake.files[doc["attachments"][0]["id"]].decode()
        assert latest.startswith("# Adopt Rust?\n\n## Final synthesis") and "## Open questions" in latest
        assert "(updated)" in doc["content"] and f"https://council.example.com/d/{d.id}?" in doc["content"]
        assert len(fake.files) > 1, "each synthesis uploaded its own file"

def test_check_option_and_button() -> None:
    start = t.slash_command("council", {"topic": "Adopt Rust?", "check": True}, DANA, HERE)
    assert isinstance(start, c.StartDiscussion) and start.check is True
    plain = t.slash_command("council", {"topic": "Adopt Rust?"}, DANA, HERE)
    assert isinstance(plain, c.StartDiscussion) and plain.check is None
    assert t.component("check:claims", "ab12:r1:s3:ada", DANA) == c.CheckClaims(
        discussion_id="ab12", turn_key="ab12:r1:s3:ada", **DANA.fields())
    t.custom_id("check:claims", "ab12cd34:r12:s3:" + "x" * 40)  # a long persona key still fits Discord's 100


def test_peer_review_option() -> None:
    start = t.slash_command("council", {"topic": "Adopt Rust?", "peer_review": True}, DANA, HERE)
    assert isinstance(start, c.StartDiscussion) and start.peer_review is True
    plain = t.slash_command("council", {"topic": "Adopt Rust?"}, DANA, HERE)
    assert isinstance(plain, c.StartDiscussion) and plain.peer_review is False
