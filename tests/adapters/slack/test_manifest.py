"""app-manifest.yml validates against Slack's manifest schema and declares what the code listens for."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from adapters.slack.interactions import SHORTCUT
from adapters.slack.server import BOT_SCOPES

ROOT = Path(__file__).resolve().parents[3]
SCHEMA = ROOT.parent / "shared" / "slack" / "manifest.schema.1.0.0.json"
import jsonschema  # noqa: E402  (dev dependencies: a missing one must fail, not skip)
import yaml  # noqa: E402


def manifest() -> dict:
    return yaml.safe_load((ROOT / "app-manifest.yml").read_text())


# CI always has shared/ beside the clone; only a bare checkout elsewhere lacks the schema copy.
@pytest.mark.skipif(not SCHEMA.exists() and not os.environ.get("CI"), reason="shared/slack schema copy not present")
def test_manifest_validates_against_slacks_schema() -> None:
    jsonschema.validate(manifest(), json.loads(SCHEMA.read_text()))


def test_manifest_matches_the_listeners() -> None:
    m = manifest()
    [command] = m["features"]["slash_commands"]
    assert command["command"] == "/council" and command["should_escape"] is True
    [shortcut] = m["features"]["shortcuts"]
    assert shortcut["type"] == "message" and shortcut["callback_id"] == SHORTCUT
    assert set(m["settings"]["event_subscriptions"]["bot_events"]) == {
        "app_mention", "message.channels", "message.groups", "app_home_opened", "app_uninstalled", "tokens_revoked"}
    assert m["features"]["app_home"]["home_tab_enabled"] is True
    assert m["settings"]["interactivity"]["is_enabled"] is True
    assert set(m["oauth_config"]["scopes"]["bot"]) == set(BOT_SCOPES)
    assert "chat:write.customize" in BOT_SCOPES
    assert all(u.endswith(("/slack/events", "/slack/oauth_redirect")) for u in [
        command["url"], m["settings"]["event_subscriptions"]["request_url"],
        m["settings"]["interactivity"]["request_url"], *m["oauth_config"]["redirect_urls"]])


def test_procfile_runs_the_slack_app_as_the_web_process() -> None:
    lines = (ROOT / "Procfile").read_text().splitlines()
    assert "web: python -m bot slack" in lines
