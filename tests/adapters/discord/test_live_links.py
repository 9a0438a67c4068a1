"""Live text is as plain as the finished post on Discord too: every webhook message and edit that shows a turn's
words so far carries them under the same link rule, so a masked link is never live while the words stream."""

from __future__ import annotations

import re

from core.models import Persona, Role
from tests.adapters.discord.conftest import Council
from tests.adapters.discord.test_commands import answered

ANSWER = ("We should move. [Sign in to your bank](https://bank.evil.example/login) first, and read "
          "<https://evil.example|the bank's notice> before the vote.")
CODE = re.compile(r"`[^`]*`")


def live_links(content: str) -> list[str]:
    """What Discord would make a link of: a masked link `[label](url)`, an autolinked `<url>` or a bare address
    outside code (Discord links no code)."""
    outside = CODE.sub("", content)
    return re.findall(r"\]\(\s*<?https?://", outside) + re.findall(r"https?://\S+|\bevil\.example", outside)


async def test_no_live_message_or_edit_carries_a_link_the_finished_post_shows_as_text(council: Council) -> None:
    fake = council.fake
    await answered(fake, await fake.slash(fake.add_user("Dana"), "council", topic="Move?", confirm=True))
    await council.settle()
    d = await council.discussion()
    ada = Persona(key="ada", name="Ada", role=Role.EXPERT, title="Engines", icon=":gear:")
    before = len(fake.calls)
    cuts = [*range(20, len(ANSWER) + 1, 6), len(ANSWER)]
    for i, cut in enumerate(cuts):  # every prefix, each a turn's first words (sent at once, no gap to wait)
        await council.chat.stream(d, ada, f"k{i}", ANSWER[:cut])
    sent = [c.body["content"] for c in fake.calls[before:]
            if c.path.startswith("/webhooks/") and isinstance(c.body, dict) and "content" in c.body]
    assert len(sent) == len(cuts), "every prefix was shown live"
    assert "Sign in to your bank (`https://bank.evil.example/login`)" in sent[-1], "the words stay, the link goes"
    for content in sent:
        assert live_links(content) == [], content
