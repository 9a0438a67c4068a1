"""Multi-workspace OAuth install through the real flow, and secrets kept out of the logs (bot/logs.py)."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest
from cryptography.fernet import Fernet

from adapters.slack.server import SlackServer
from bot.logs import RedactSecrets, redact_settings
from bot.settings import Settings
from bot.wiring import build_app
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import SECRET, Slack, fixture, settings
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

CLIENT_SECRET = "c0ffee-client-secret-4242"


@pytest.fixture
async def oauth_server(fake: FakeSlack, tmp_path: Path) -> AsyncIterator[SlackServer]:
    s = settings(tmp_path)
    srv = SlackServer(skipping_config(fake, bot_token="", client_id="1234.5678", client_secret=CLIENT_SECRET,
                             encryption_key=Fernet.generate_key().decode()),
                      lambda chats: build_app(s, chats, llm=ScriptedLLM()))
    await srv.start()
    yield srv
    await srv.stop()


async def test_a_workspace_installs_the_app_and_its_own_token_is_used(
    oauth_server: SlackServer, fake: FakeSlack
) -> None:
    base = f"http://127.0.0.1:{oauth_server.port}"
    async with aiohttp.ClientSession() as session:
        async with session.get(f"{base}/slack/install") as resp:
            assert resp.status == 200
            page = await resp.text()
            cookie = resp.cookies["slack-app-oauth-state"].value  # Secure: a browser sends it back over https
        state = re.search(r"state=([\w-]+)", page)
        assert state and "client_id=1234.5678" in page and "chat%3Awrite.customize" in page.replace(":", "%3A")
        async with session.get(f"{base}/slack/oauth_redirect", params={"code": "good-code", "state": state.group(1)},
                               headers={"Cookie": f"slack-app-oauth-state={cookie}"}) as resp:
            assert resp.status == 200, await resp.text()
        [exchange] = fake.called("oauth.v2.access")
        assert exchange.params["code"] == "good-code"
        slack = Slack(f"{base}/slack/events", session, fake)
        form = fixture("slash_command") | {"team_id": "T0002", "text": "Should we open a Lisbon office? --rounds 1"}
        status, _ = await slack.post(urlencode(form), "application/x-www-form-urlencoded")
        assert status == 200
        await oauth_server.idle()
        assert oauth_server.bolt is not None and oauth_server.bolt.installation_store is not None
        store = oauth_server.bolt.installation_store
        assert await store.async_find_bot(enterprise_id=None, team_id="T0002") is not None
        uninstalled = fixture("event_message") | {"team_id": "T0002", "event": {"type": "app_uninstalled"},
                                                  "event_id": "EvUNINSTALL",
                                                  "authorizations": [{"team_id": "T0002", "is_bot": True}]}
        status, _ = await slack.post(json.dumps(uninstalled), "application/json")
        await oauth_server.idle()
        assert status == 200 and await store.async_find_bot(enterprise_id=None, team_id="T0002") is None
    posts = fake.called("chat.postMessage")
    assert posts and {p.token for p in posts} == {"xoxb-installed"}
    assert oauth_server.core is not None
    [d] = await oauth_server.core.service.guard.discussions()
    assert d.workspace == "T0002"


async def test_no_secret_reaches_the_logs(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    root = logging.getLogger()
    root.addHandler(handler)
    old = root.level
    root.setLevel(logging.DEBUG)
    try:
        redact_settings(Settings(_env_file=None, slack_signing_secret=SECRET, slack_bot_token="xoxb-test"))  # type: ignore[call-arg]
        await slack.command("Should we rotate on-call weekly? --rounds 1")
        await server.idle()
        logging.getLogger("test").warning("token xoxb-test and secret %s and xoxp-1-abc", SECRET)
    finally:
        root.setLevel(old)
        root.removeHandler(handler)
        for h in root.handlers:
            for f in [f for f in h.filters if isinstance(f, RedactSecrets)]:
                h.removeFilter(f)
    text = out.getvalue()
    assert "chat.postMessage" in text  # slack_sdk's debug lines were there to leak from
    assert "xoxb-test" not in text and SECRET not in text and "xoxp-1-abc" not in text
    assert "[redacted]" in text


def test_an_installed_workspace_token_is_masked_by_its_shape() -> None:
    """OAuth installs bring tokens no setting holds: the Slack token pattern catches them, in tracebacks too."""
    flt = RedactSecrets([])
    try:
        raise RuntimeError("bad token xoxb-123-456 and xoxe.xoxp-1-abc")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed: %s", ("xapp-1-A0-99",), None)
        import sys

        record.exc_info = sys.exc_info()
    flt.filter(record)
    assert "xapp-1" not in record.getMessage() and "xapp-[redacted]" in record.getMessage()
    assert "xoxb-123" not in (record.exc_text or "") and "xoxe.xoxp-1" not in (record.exc_text or "")
