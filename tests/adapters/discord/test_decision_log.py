"""The decision log from Discord: `/council-decisions` answers with the log of the channel asked from, which lists
that channel's discussions; a channel hidden from @everyone keeps its discussions on its own log."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

from aiohttp.test_utils import TestClient, TestServer

from adapters.web.page import Pages, application
from core.ports import SystemClock
from tests.adapters.discord.conftest import running
from tests.fakes import discord_payloads as p
from tests.fakes.discord_api import FakeDiscord

PUBLIC = "https://council.example.test"
WEB = {"council_public_url": PUBLIC, "council_web_secret": "web-secret-for-tests-at-least-32-bytes"}
HIDDEN = "1000000000000000102"


def log_link(content: str) -> str:
    [url] = re.findall(r"\[Browse this channel's decision log\]\((https://council\.example\.test/log\?[^)\s]+)\)",
                       content)
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


async def test_the_answer_links_the_log_of_the_channel_asked_from(fake: FakeDiscord, tmp_path: Path) -> None:
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    fake.channels[HIDDEN] = p.text_channel(HIDDEN, fake.guild_id, "leads")
    fake.messages[HIDDEN] = []
    fake.channels[HIDDEN]["permission_overwrites"] = [  # hidden from @everyone, shown to Dana
        {"id": fake.guild_id, "type": 0, "allow": "0", "deny": str(1 << 10)},
        {"id": dana["id"], "type": 1, "allow": str(1 << 10), "deny": "0"}]
    async with running(fake, tmp_path, settings=WEB) as council:
        for cid, topic in ((fake.channel_id, "Trunk-based development for design?"),
                           (HIDDEN, "Trunk-based development for the leads?")):
            i = await fake.slash(dana, "council", channel_id=cid, topic=topic, rounds=1)
            await fake.wait_for(lambda i=i: i.followups)
            await council.settle()
        leads = await fake.slash(dana, "council-decisions", channel_id=HIDDEN)
        general = await fake.slash(lee, "council-decisions")
        await fake.wait_for(lambda: leads.followups and general.followups)
        pages = Pages(council.app.driver.config.pages, SystemClock(), council.app.store)
        async with TestClient(TestServer(application(pages))) as client:
            private = await (await client.get(log_link(leads.followups[0]["content"]))).text()
            public = await (await client.get(log_link(general.followups[0]["content"]))).text()
    assert "for the leads?" in private and "for design?" not in private
    assert "for design?" in public and "for the leads?" not in public
