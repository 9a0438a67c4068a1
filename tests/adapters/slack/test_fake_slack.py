"""The fake Web API is as strict as Slack documents: each rule, called as a client would, without our app."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from adapters.slack.budgeted import PER_MINUTE
from adapters.slack.views import loading_view
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import METHOD_TIER, POSTS_PER_MINUTE, SPECIAL, TIER


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def clock() -> Clock:
    return Clock()


@pytest.fixture
async def slack(clock: Clock) -> AsyncIterator[FakeSlack]:
    async with FakeSlack(clock=clock) as f:
        f.add_channel("C0001", member=True, people=["U0001"])
        f.add_channel("C0002", member=True)
        f.add_user("U0001", "Dana")
        f.add_user("U0002", "Lee")
        yield f


@pytest.fixture
def client(slack: FakeSlack) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=slack.base_url, retry_handlers=[])  # no retries: see each answer


async def error(call: object) -> tuple[str, int, str]:
    with pytest.raises(SlackApiError) as caught:
        await call  # type: ignore[misc]
    response = caught.value.response
    return str(response.get("error")), response.status_code, str((response.headers or {}).get("Retry-After", ""))


async def test_a_tier_3_method_takes_50_calls_a_minute_then_answers_429_with_retry_after(
    slack: FakeSlack, client: AsyncWebClient, clock: Clock
) -> None:
    posted = await client.chat_postMessage(channel="C0001", text="hello")
    for _ in range(50):
        await client.chat_update(channel="C0001", ts=posted["ts"], text="edited")
        clock.t += 0.5
    assert await error(client.chat_update(channel="C0001", ts=posted["ts"], text="one too many")) == \
        ("ratelimited", 429, "35")  # the first of the 50 (at 0 s, now 25 s) leaves the window 35 s from now
    clock.t += 35
    await client.chat_update(channel="C0001", ts=posted["ts"], text="room again")
    async with FakeSlack(clock=clock, tokens={"xoxb-other": "T0002"}) as other:  # another workspace: its own
        assert other.limits.retry_after("T0002", "chat.update") == 0


async def test_tier_2_and_tier_4_methods_have_their_own_minutes(slack: FakeSlack) -> None:
    assert sum(slack.limits.retry_after("T0001", "usergroups.users.list") == 0 for _ in range(25)) == 20
    assert sum(slack.limits.retry_after("T0001", "users.info") == 0 for _ in range(120)) == 100


async def test_posts_are_about_one_a_second_per_channel_with_short_bursts(
    slack: FakeSlack, client: AsyncWebClient, clock: Clock
) -> None:
    for _ in range(4):
        await client.chat_postMessage(channel="C0001", text="burst")
    assert (await error(client.chat_postMessage(channel="C0001", text="fifth")))[:2] == ("ratelimited", 429)
    await client.chat_postMessage(channel="C0002", text="another channel")
    clock.t += 1.0
    await client.chat_postMessage(channel="C0001", text="a second later")



async def test_posts_in_a_workspace_have_an_allowance_a_minute_whatever_the_channels(slack: FakeSlack,
                                                                                      clock: Clock) -> None:
    accepted = [slack.limits.retry_after("T0001", "chat.postMessage", f"C{i:04d}") == 0
                for i in range(POSTS_PER_MINUTE + 1)]
    assert accepted.count(True) == POSTS_PER_MINUTE, "each in its own channel, and still the workspace's limit"
    assert slack.limits.retry_after("T0002", "chat.postMessage", "C0000") == 0, "another workspace: its own"
    clock.t += 60
    assert slack.limits.retry_after("T0001", "chat.postMessage", f"C{POSTS_PER_MINUTE:04d}") == 0


async def test_thread_reads_of_an_app_distributed_outside_the_marketplace_are_one_a_minute_and_15_a_page(
    slack: FakeSlack, client: AsyncWebClient, clock: Clock
) -> None:
    slack.limits.read_limited = True  # commercially distributed, not in the Marketplace
    parent = await client.chat_postMessage(channel="C0001", text="thread")
    for i in range(30):
        slack.human("C0001", f"reply {i}", "U0001", parent["ts"])
    page = await client.conversations_replies(channel="C0001", ts=parent["ts"], limit=200)
    assert len(page["messages"]) == 15 and page["has_more"]
    assert (await error(client.conversations_replies(channel="C0001", ts=parent["ts"])))[:2] == ("ratelimited", 429)
    await client.conversations_history(channel="C0001")  # a method of its own: its own minute
    slack.limits.read_limited = False  # listed in the Marketplace, or installed in its own workspace only
    assert len((await client.conversations_replies(channel="C0001", ts=parent["ts"], limit=200))["messages"]) == 31


async def test_a_method_outside_the_tokens_scopes_answers_missing_scope(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    slack.scopes["xoxb-test"] = frozenset({"chat:write"})
    await client.chat_postMessage(channel="C0001", text="allowed")
    assert (await error(client.users_info(user="U0001")))[0] == "missing_scope"


async def test_a_trigger_opens_one_view_within_3_seconds(slack: FakeSlack, client: AsyncWebClient,
                                                         clock: Clock) -> None:
    late, once = slack.trigger(), slack.trigger()
    clock.t += 3.5
    assert (await error(client.views_open(trigger_id=late, view=loading_view())))[0] == "expired_trigger_id"
    fresh = slack.trigger()
    opened = await client.views_open(trigger_id=fresh, view=loading_view())
    assert (await error(client.views_open(trigger_id=fresh, view=loading_view())))[0] == "expired_trigger_id"
    assert (await error(client.views_open(trigger_id="made-up", view=loading_view())))[0] == "invalid_trigger_id"
    bad = {**loading_view(), "title": {"type": "plain_text", "text": "A title far longer than Slack allows"}}
    assert (await error(client.views_update(view_id=opened["view"]["id"], view=bad)))[0] == "invalid_arguments"
    assert once not in slack.triggers.used


async def test_edits_only_of_the_apps_own_messages_and_not_in_archived_channels(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    human = slack.human("C0001", "mine", "U0001")
    assert (await error(client.chat_update(channel="C0001", ts=human.ts, text="x")))[0] == "cant_update_message"
    posted = await client.chat_postMessage(channel="C0001", text="ours")
    slack.channels["C0001"]["is_archived"] = True
    assert (await error(client.chat_update(channel="C0001", ts=posted["ts"], text="x")))[0] == "is_archived"


async def test_ephemerals_only_to_people_in_the_channel_and_text_up_to_40000(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    await client.chat_postEphemeral(channel="C0001", user="U0001", text="for Dana")
    assert (await error(client.chat_postEphemeral(channel="C0001", user="U0002", text="x")))[0] == \
        "user_not_in_channel"
    assert (await error(client.chat_postMessage(channel="C0001", text="x" * 40001)))[0] == "msg_too_long"


async def test_a_post_to_a_person_lands_in_the_apps_direct_message_with_them(
    slack: FakeSlack, client: AsyncWebClient
) -> None:
    posted = await client.chat_postMessage(channel="U0002", text="privately")
    assert posted["channel"] == slack.dm("U0002") and posted["channel"].startswith("D")
    assert slack.find(slack.dm("U0002"), posted["ts"]) is not None


def test_every_method_the_fake_answers_has_the_rate_tier_slack_lists_it_under() -> None:
    answered = {name.removeprefix("m_").replace("_", ".") for name in dir(FakeSlack) if name.startswith("m_")}
    assert answered and answered <= set(METHOD_TIER), answered - set(METHOD_TIER)


def test_every_method_the_app_calls_is_in_its_budget_at_the_fakes_tier() -> None:
    """The app's own table and the platform's tiers agree (chat.postMessage is paced per channel, and has its
    workspace allowance)."""
    for method, tier in METHOD_TIER.items():
        if method not in ("chat.postMessage", "oauth.v2.access", "team.info"):
            assert PER_MINUTE.get(method) == TIER[tier] or tier == SPECIAL, method
    assert PER_MINUTE["chat.postMessage"] == POSTS_PER_MINUTE


async def test_a_post_under_another_name_or_face_takes_chat_write_customize(
    slack: FakeSlack, client: AsyncWebClient, clock: Clock
) -> None:
    slack.scopes["xoxb-test"] = frozenset({"chat:write"})
    await client.chat_postMessage(channel="C0001", text="as the app")
    for identity in ({"username": "Ada"}, {"icon_emoji": ":gear:"}, {"icon_url": "https://example.com/a.png"}):
        assert (await error(client.chat_postMessage(channel="C0001", text="as Ada", **identity)))[0] == "missing_scope"
    slack.scopes["xoxb-test"] = frozenset({"chat:write", "chat:write.customize"})
    clock.t += 5  # the channel's posts are paced, refused or not
    await client.chat_postMessage(channel="C0001", text="as Ada", username="Ada", icon_emoji=":gear:")


async def test_a_response_url_is_good_for_five_posts_within_30_minutes(slack: FakeSlack, clock: Clock) -> None:
    async def send(key: str) -> int:
        url = slack.base_url.replace("/api/", f"/response/{key}")
        return (await AsyncWebhookClient(url).send(text="x")).status_code

    assert [await send("five") for _ in range(6)] == [200] * 5 + [404]
    assert await send("late") == 200
    clock.t += 30 * 60 + 1
    assert await send("late") == 404
    assert len(slack.responses) == 6


async def test_workspaces_are_apart_each_token_finds_only_its_own(slack: FakeSlack, clock: Clock) -> None:
    slack.tokens["xoxb-other"] = "T0002"
    slack.add_user("U0900", "Noor", team="T0002")
    slack.add_channel("C0900", member=True, team="T0002")
    ours = AsyncWebClient(token="xoxb-test", base_url=slack.base_url, retry_handlers=[])
    theirs = AsyncWebClient(token="xoxb-other", base_url=slack.base_url, retry_handlers=[])
    posted = await ours.chat_postMessage(channel="C0001", text="ours")
    assert (await error(theirs.chat_postMessage(channel="C0001", text="x")))[0] == "channel_not_found"
    assert (await error(theirs.chat_update(channel="C0001", ts=posted["ts"], text="x")))[0] == "channel_not_found"
    assert (await error(theirs.conversations_replies(channel="C0001", ts=posted["ts"])))[0] == "channel_not_found"
    assert (await error(theirs.users_info(user="U0001")))[0] == "user_not_found"
    assert (await error(ours.users_info(user="U0900")))[0] == "user_not_found"
    canvas = await ours.canvases_create(title="t", document_content={"type": "markdown", "markdown": "x"})
    assert (await error(theirs.canvases_edit(canvas_id=canvas["canvas_id"], changes=[
        {"operation": "replace", "document_content": {"type": "markdown", "markdown": "y"}}])))[0] == "canvas_not_found"
    await theirs.chat_postMessage(channel="C0900", text="theirs")  # their own channel: found
    assert (await theirs.users_info(user="U0900"))["user"]["team_id"] == "T0002"


async def test_a_thread_read_back_from_latest_gives_its_newest_page_and_metadata_when_asked(
        slack: FakeSlack, client: AsyncWebClient) -> None:
    parent = await client.chat_postMessage(channel="C0002", text="the question",
                                           metadata={"event_type": "council_post", "event_payload": {"key": "k"}})
    replies = [slack.human("C0002", f"r{i}", "U0001", thread_ts=parent["ts"]).ts for i in range(30)]
    newest = await client.conversations_replies(channel="C0002", ts=parent["ts"], latest=replies[-1], inclusive=True,
                                                limit=10)
    assert [m["text"] for m in newest["messages"]] == [f"r{i}" for i in range(20, 30)] and newest["has_more"]
    before = await client.conversations_replies(channel="C0002", ts=parent["ts"], latest=replies[20], limit=10)
    assert [m["text"] for m in before["messages"]] == [f"r{i}" for i in range(10, 20)]
    first = await client.conversations_replies(channel="C0002", ts=parent["ts"], limit=1)
    assert first["messages"][0]["reply_count"] == 30 and first["messages"][0]["latest_reply"] == replies[-1]
    assert "metadata" not in first["messages"][0]
    meta = await client.conversations_replies(channel="C0002", ts=parent["ts"], limit=1, include_all_metadata=True)
    assert meta["messages"][0]["metadata"]["event_payload"] == {"key": "k"}
    top = await client.conversations_history(channel="C0002", latest=parent["ts"], inclusive=True, limit=1)
    assert [m["text"] for m in top["messages"]] == ["the question"]
