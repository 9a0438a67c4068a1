"""Revoke links on Discord: `/council-revoke-links` gives the discussion's page links a new key version, for its
starter or a server admin only, and the thread says so; a member who did not start it revokes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.adapters.discord.conftest import running
from tests.adapters.discord.test_commands import answered, command
from tests.fakes.discord_api import FakeDiscord

PAGE = re.compile(r"https://council\.example\.com/d/\w+\?[^\s)>'\"]+")


def page_links(fake: FakeDiscord) -> list[str]:
    """Every page link the server shows: the header (the thread's starter, in the channel) and the thread's posts."""
    return [link for messages in fake.messages.values() for m in messages for link in PAGE.findall(str(m))]


async def test_the_starter_or_an_admin_revokes_a_councils_page_links_and_nobody_else(
        fake: FakeDiscord, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COUNCIL_PUBLIC_URL", "https://council.example.com")
    monkeypatch.setenv("COUNCIL_WEB_SECRET", "a-secret-for-signing-links-of-32-bytes-or-more")
    async with running(fake, tmp_path) as council:
        synced = command(fake, "council-revoke-links")
        assert [o["name"] for o in synced["options"]] == ["id"] and synced["options"][0]["autocomplete"]
        dana, lee, ines = fake.add_user("Dana"), fake.add_user("Lee"), fake.add_user("Ines", admin=True)
        await answered(fake, await fake.slash(dana, "council", topic="Adopt Rust?", rounds=1))
        await council.settle()
        d = await council.discussion()
        before = set(page_links(fake))
        assert before, "the thread links the page"

        said = await answered(fake, await fake.slash(lee, "council-revoke-links", id=d.id))
        await council.settle()
        assert "can revoke the page links" in said
        assert (await council.discussion()).options.links == 0, "a member who did not start it revokes nothing"

        said = await answered(fake, await fake.slash(dana, "council-revoke-links", id=d.id))
        await council.settle()
        assert said.startswith("Done: every earlier link to this discussion's page is revoked")
        assert (await council.discussion()).options.links == 1
        assert any("Dana revoked the links to this discussion's page" in m["content"]
                   for m in fake.thread_messages(d.thread_ref))
        assert not any("v=" in link for link in before)
        fresh = set(page_links(fake)) - before
        assert fresh and all(link.endswith("&v=1") for link in fresh), "the header's link is of the new version"

        said = await answered(fake, await fake.slash(ines, "council-revoke-links", id=d.id))
        await council.settle()
        assert said.startswith("Done:") and (await council.discussion()).options.links == 2, "an admin may too"
