"""The App Home tab through the real listener: app_home_opened → views.publish, and its buttons."""

from __future__ import annotations

import json
from typing import Any

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, fixture
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def open_home(slack: Slack, server: SlackServer, user: str) -> dict[str, Any]:
    await slack.event({"type": "app_home_opened", "user": user, "channel": "D0001", "tab": "home",
                       "event_ts": "1700000000.000100"}, kind="event_app_home_opened")
    await server.idle()
    return slack.fake.homes[user]


def text_of(view: dict[str, Any]) -> str:
    return json.dumps(view["blocks"], ensure_ascii=False)


async def home_click(slack: Slack, user: str, action_id: str, value: str = "") -> None:
    payload = fixture("block_actions")
    payload["user"] = {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0001"}
    payload["container"] = {"type": "view", "view_id": f"VH{user}"}
    payload.pop("channel", None)
    payload.pop("message", None)
    payload["view"] = {"id": f"VH{user}", "type": "home"}
    payload["actions"] = [{"action_id": action_id, "block_id": "b", "value": value, "type": "button",
                           "text": {"type": "plain_text", "text": action_id}, "action_ts": "1.2"}]
    status, _ = await slack.interaction(payload)
    assert status == 200


async def test_the_home_tab_lists_a_persons_discussions_open_first_and_their_digests(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust? --rounds 1")
    await server.idle()
    await slack.command("Should we go &lt;remote&gt; &amp; async? --confirm")  # as Slack sends typed text
    await slack.command("Lee's own question", user="U0002")
    await slack.command("digest daily")
    await server.idle()

    home = await open_home(slack, server, "U0001")
    text = text_of(home)
    assert home["type"] == "home" and "New discussion" in text
    assert text.index("remote") < text.index("Rust"), "open discussions come first"
    assert "&lt;remote&gt; &amp; async" in text, "topics stay text"
    assert "Lee's own question" not in text and "Spent today" not in text
    assert "<!date^" in text, "times are shown in each reader's own zone"
    assert "Digest in <#C0001>" in text and '"action_id": "home:cancel:digest"' in text
    assert "awaiting confirmation · round" in text and "done · round 1" in text

    admin = text_of(await open_home(slack, server, "U0003"))
    assert "Spent today: $" in admin and "budget per discussion" in admin

    digest = next(b for b in home["blocks"] if "Digest in" in json.dumps(b))
    await home_click(slack, "U0001", "home:cancel:digest", digest["accessory"]["value"])
    await server.idle()
    assert "Digest in" not in text_of(fake.homes["U0001"]), "the tab is published again without it"
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert [s for s in await tx.schedules() if s.kind == "digest"] == []


async def test_new_discussion_from_home_asks_for_the_channel(slack: Slack, server: SlackServer,
                                                            fake: FakeSlack) -> None:
    await home_click(slack, "U0001", "home:new")
    await server.idle()
    [opened] = fake.views
    blocks = opened["view"]["blocks"]
    assert blocks[0]["block_id"] == "channel" and blocks[0]["element"]["type"] == "conversations_select"


async def test_cancel_on_the_home_tab_ends_a_round_schedule(slack: Slack, server: SlackServer,
                                                              fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust? --every 1d")
    await server.idle()
    home = await open_home(slack, server, "U0001")
    rounds = next(b for b in home["blocks"] if '"home:cancel:round"' in json.dumps(b))
    await home_click(slack, "U0001", "home:cancel:round", rounds["accessory"]["value"])
    await server.idle()
    assert '"home:cancel:round"' not in text_of(fake.homes["U0001"]), "published again without it"
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert [s for s in await tx.schedules() if s.kind == "round" and s.enabled] == []


async def test_cancel_on_the_home_tab_refuses_someone_elses_round_schedule(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt Rust? --every 1d")
    await server.idle()
    home = await open_home(slack, server, "U0001")
    rounds = next(b for b in home["blocks"] if '"home:cancel:round"' in json.dumps(b))
    await home_click(slack, "U0002", "home:cancel:round", rounds["accessory"]["value"])  # a forged click
    await server.idle()
    assert server.core is not None
    async with server.core.store.tx() as tx:
        assert [s for s in await tx.schedules() if s.kind == "round" and s.enabled] != []
