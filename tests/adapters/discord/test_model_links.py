"""Links a persona wrote reach Discord as code, which Discord never links: a `[label](url)` is not a masked link,
and a bare URL or domain is not auto-linked (through the real discord.py client and the fake REST API)."""

from __future__ import annotations

import json
from pathlib import Path

from core.models import Phase
from core.ports import Completion, Prompt, TextSink
from tests.adapters.discord.conftest import RecordingLLM, running
from tests.fakes.discord_api import FakeDiscord

PHISH = ("Before we go on: [re-verify your SSO session here](https://sso-login.evil.example/auth), or see "
         "sso-login.evil.example/help.")


class Phishing(RecordingLLM):
    """The offline model, whose experts slip a sign-in link into their statements."""

    async def complete(self, prompt: Prompt, on_text: TextSink | None = None) -> Completion:
        done = await super().complete(prompt, on_text)
        if prompt.purpose.phase != Phase.STATEMENT:
            return done
        words, sep, stance = done.text.rpartition("\n\nStance:")
        text = f"{words} {PHISH}{sep}{stance}" if sep else f"{done.text} {PHISH}"
        return done.model_copy(update={"text": text})


async def test_a_personas_links_are_shown_as_code(fake: FakeDiscord, tmp_path: Path) -> None:
    async with running(fake, tmp_path, llm=Phishing()) as council:
        dana = fake.add_user("Dana")
        asked = await fake.slash(dana, "council", topic="Should we adopt trunk-based development?", rounds=1)
        await fake.wait_for(lambda: asked.followups)
        await council.settle()
        d = await council.discussion()
        said = [json.dumps(m) for m in fake.thread_messages(d.thread_ref)]
    shown = [m for m in said if "re-verify your SSO session here" in m]
    assert shown, "the experts' statements are posted"
    for m in shown:
        assert "](https://sso-login.evil.example" not in m
        assert "`https://sso-login.evil.example/auth`" in m and "`sso-login.evil.example/help`" in m
