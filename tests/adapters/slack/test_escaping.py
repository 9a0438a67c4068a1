"""Every Slack `text` field (the notification text of posts and edits, private answers) is escaped: a topic that
holds `<!channel>` or `<@U123>` never notifies the channel or a person."""

from __future__ import annotations

from typing import Any

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

TEXT_METHODS = ("chat.postMessage", "chat.update", "chat.postEphemeral")


async def test_a_topic_with_slack_markup_never_reaches_a_text_field_as_markup(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    # Typed literally, Slack sends the characters escaped; the topic keeps them as the person wrote them.
    await slack.command("Should we tell &lt;!channel&gt; and &lt;@U123&gt; about it? --rounds 1")
    await server.idle()
    d = await only(server)
    assert "<!channel>" in d.topic and "<@U123>" in d.topic
    await slack.command(f"status {d.id}")
    await server.idle()
    texts = [str(call.params.get("text") or "") for call in fake.calls if call.method in TEXT_METHODS]
    assert any("&lt;!channel&gt;" in t for t in texts)  # the topic is shown, as words
    assert not [t for t in texts if "<!channel>" in t or "<@U123>" in t]
    shown = [t for call in fake.calls if call.method in TEXT_METHODS for t in mrkdwn(call.params.get("blocks"))]
    assert shown and not [t for t in shown if "<!channel>" in t or "<@U123>" in t]  # plain_text is never parsed


def mrkdwn(value: Any) -> list[str]:
    """The mrkdwn texts in blocks: where Slack would turn `<!channel>` into a broadcast."""
    if isinstance(value, list):
        return [t for v in value for t in mrkdwn(v)]
    if isinstance(value, dict):
        own = [value["text"]] if value.get("type") == "mrkdwn" and isinstance(value.get("text"), str) else []
        return own + [t for k, v in value.items() if k != "text" or not isinstance(v, str) for t in mrkdwn(v)]
    return []
