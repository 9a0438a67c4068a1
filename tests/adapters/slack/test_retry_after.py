"""Every Web API method honours Slack's Retry-After, and a method missing from the tier table is spent as Tier 3:
through the real slack_sdk client, the budget the app builds, and the fake Web API on one injected clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.budgeted import PER_MINUTE, slack_budget
from adapters.slack.clients import SingleWorkspace, web_client
from core.running.budget import LocalBuckets, RateBudget
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import METHOD_TIER, TIER


class Wall:
    """The one clock Slack's limits and the app's budget read; it moves only when the budget waits."""

    def __init__(self) -> None:
        self.t = 5_000.0

    def __call__(self) -> float:
        return self.t

    async def sleep(self, s: float) -> None:
        self.t += s
        await asyncio.sleep(0)


@pytest.fixture
def wall() -> Wall:
    return Wall()


@pytest.fixture
async def fake(wall: Wall) -> AsyncIterator[FakeSlack]:
    async with FakeSlack(clock=wall) as f:
        f.add_user("U0001", "Dana")
        f.join("C0001", "U0001")
        yield f


async def client(fake: FakeSlack, wall: Wall, *, tiers: bool = True) -> AsyncWebClient:
    """The workspace's client as the server builds it; without `tiers`, as with SLACK_RATE_BUDGET=false (benches):
    posts paced, no per-method budget."""
    budget = slack_budget(LocalBuckets(), wall=wall, sleep=wall.sleep) if tiers else \
        RateBudget(LocalBuckets(), {}, wall=wall, sleep=wall.sleep)
    return await SingleWorkspace(web_client(fake.base_url, "xoxb-test"), budget)("T0001")


@pytest.mark.parametrize("method,call", [
    ("users.conversations", lambda c: c.users_conversations(user="U0001", types="public_channel", limit=200)),
    ("auth.test", lambda c: c.auth_test()),
    ("canvases.create", lambda c: c.canvases_create(title="t", channel_id="C0001",
                                                    document_content={"type": "markdown", "markdown": "x"})),
])
@pytest.mark.parametrize("tiers", [True, False])
async def test_a_429_is_retried_only_after_its_retry_after_whatever_the_method(
        fake: FakeSlack, wall: Wall, method: str, call: object, tiers: bool) -> None:
    fake.rate_limit(method, times=2, retry_after=7)
    c = await client(fake, wall, tiers=tiers)
    resp = await call(c)  # type: ignore[operator]
    assert resp["ok"]
    at = [x.at for x in fake.called(method)]
    assert len(at) == 3, at
    assert at[1] - at[0] >= 7 and at[2] - at[1] >= 7, f"retried before Retry-After: {at}"


async def test_a_method_missing_from_the_tier_table_is_spent_as_tier_3(fake: FakeSlack, wall: Wall) -> None:
    """team.info is Tier 3 at Slack (50 a minute); the app's table does not name it: 60 calls spread over more than
    a minute, and Slack never has to answer 429."""
    assert "team.info" not in PER_MINUTE and TIER[METHOD_TIER["team.info"]] == 50
    c = await client(fake, wall)
    start = wall()
    for _ in range(60):
        assert (await c.team_info())["ok"]
    assert not fake.answered_429, dict(fake.answered_429)
    assert wall() - start > 60, "the calls past a minute's worth waited for the budget"
