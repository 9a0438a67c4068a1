"""Links a persona wrote reach Slack as plain text (through the real SDK, the fake Messages API and the real bolt
app): a `[label](url)` is not turned into a Slack link, and a bare URL or domain is set as code, which Slack does
not link; only links Council builds itself (a check's cited sources, its own pages) are links."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.server import SlackServer
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.on_model import app_on_model
from tests.databases import migrated_sqlite_url
from tests.fakes.anthropic_server import FakeAnthropic, default_reply
from tests.fakes.slack_api import FakeSlack

PHISH = ("Before we go on: [re-verify your SSO session here](https://sso-login.evil.example/auth), or see "
         "sso-login.evil.example/help and <https://evil.example|the wiki>.")
ROSTER_LINK = "[sign in](https://roster.evil.example/a)"


def hostile(body: dict[str, Any]) -> str:
    reply = default_reply(body)
    if (body.get("output_config") or {}).get("format"):  # structured answers stay as the schema asks
        answer = json.loads(reply)
        for expert in answer.get("experts") or []:  # a roster whose titles carry a masked link
            expert["title"] = f"Bank {ROSTER_LINK}"
        return json.dumps(answer)
    words, sep, stance = reply.partition("\n\nStance:")
    return f"{words} {PHISH}{sep}{stance}"


@pytest.fixture
async def served(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[tuple[Slack, SlackServer]]:
    async with (FakeAnthropic(reply=hostile) as model,
                app_on_model(fake, model.base_url, tmp_path, database_url=migrated_sqlite_url(tmp_path)) as app):
        yield app


async def test_a_personas_links_are_shown_as_plain_text(served: tuple[Slack, SlackServer], fake: FakeSlack) -> None:
    slack, server = served
    await slack.command("Should we adopt trunk-based development?")
    await server.idle()
    said = [m for m in fake.messages if "re-verify your SSO session here" in m.text + json.dumps(m.blocks)]
    assert said, "the persona's words are posted"
    for m in said:
        wire = m.text + json.dumps(m.blocks)
        assert "<https://sso-login.evil.example" not in wire and "<https://evil.example" not in wire
        assert "`https://sso-login.evil.example/auth`" in wire  # shown, as code: Slack links no code
        assert "`sso-login.evil.example/help`" in wire and "`https://evil.example`" in wire
    # The roster's titles, shown in Council's own header, pass the same rule.
    headers = [m.text + json.dumps(m.blocks) for m in fake.messages if "Participants" in json.dumps(m.blocks)]
    assert headers and all("sign in (`https://roster.evil.example/a`)" in w for w in headers)
    assert not [m for m in fake.messages if "<https://roster.evil.example" in m.text + json.dumps(m.blocks)]
