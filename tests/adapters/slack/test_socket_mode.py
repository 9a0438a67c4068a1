"""Socket Mode (SLACK_APP_TOKEN): the same listeners, reached over the fake's WebSocket instead of HTTP."""

from __future__ import annotations

import json
from pathlib import Path

from adapters.slack.server import SlackServer
from bot.wiring import build_app
from tests.adapters.slack.conftest import fixture, settings
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack


async def test_socket_mode_acks_commands_and_runs_the_discussion(fake: FakeSlack, tmp_path: Path) -> None:
    fake.tokens["xapp-1-test"] = "T0001"
    s = settings(tmp_path)
    srv = SlackServer(skipping_config(fake, app_token="xapp-1-test", signing_secret=""),
                      lambda chats: build_app(s, chats, llm=ScriptedLLM()))
    await srv.start()
    try:
        await fake.connected.wait()
        [opened] = fake.called("apps.connections.open")
        assert opened.token == "xapp-1-test"
        bad = await fake.push("slash_commands", fixture("slash_command") | {"text": "x --nope"}, "env-1")
        assert "I don't know the option `--nope`" in json.dumps(bad)
        ok = await fake.push("slash_commands", fixture("slash_command") | {"text": "Should we adopt Rust? --rounds 1"},
                             "env-2")
        assert ok["envelope_id"] == "env-2"
        await srv.idle()
        assert srv.core is not None
        [d] = await srv.core.service.guard.discussions()
        assert d.status.value == "done" and len(fake.thread("C0001", d.thread_ref)) > 8
    finally:
        await srv.stop()
