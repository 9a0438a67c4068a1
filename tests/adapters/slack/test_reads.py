"""Reading Slack: the read limit only for an app distributed outside the Marketplace (a setting, off by default),
a long thread read to its newest message, users.conversations asked within its documented maximum."""

from __future__ import annotations

from adapters.slack.budgeted import slack_budget
from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.member import channels_of
from adapters.slack.server import SlackServer
from bot.runtime import slack_config
from bot.settings import Settings
from core.models import Status
from core.running.budget import LocalBuckets
from tests.adapters.slack.conftest import TIME_SCALE, Slack
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack


async def test_a_mention_in_a_long_thread_takes_its_newest_messages_as_context(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.add_channel("C0001", member=True)
    parent = fake.human("C0001", "Our build takes 40 minutes. Should we split the test suite?", "U0002")
    for i in range(260):
        fake.human("C0001", f"note {i} on the build", "U0001", parent.ts)
    fake.human("C0001", "the newest word: flaky tests cost us most", "U0002", parent.ts)
    await slack.mention("<@UBOT> --rounds 1", thread_ts=parent.ts)
    await server.idle()
    d = await only(server)
    assert d.topic.startswith("Our build takes 40 minutes") and d.status == Status.DONE
    assert "Lee: the newest word: flaky tests cost us most" in d.context
    assert "note 259 on the build" in d.context


def test_the_read_limit_is_a_setting_off_by_default() -> None:
    """Slack limits thread and history reads only for commercially distributed apps outside its Marketplace; a
    workspace's own app (its bot token) reads at Tier 3."""
    assert slack_config(Settings(_env_file=None)).read_limited is False  # type: ignore[call-arg]
    assert slack_config(Settings(_env_file=None, slack_read_limited=True)).read_limited is True  # type: ignore[call-arg]


async def test_the_channels_a_person_is_in_are_asked_for_within_slacks_maximum(fake: FakeSlack) -> None:
    fake.add_channel("C0001", member=True)
    fake.add_channel("C0002", private=True, member=True)
    fake.join("C0001", "U0001")
    fake.join("C0002", "U0001")
    client = await SingleWorkspace(web_client(fake.base_url, "xoxb-test"), slack_budget(LocalBuckets(),
                                                                                        scale=TIME_SCALE))("T0001")
    assert sorted(await channels_of(client, "U0001")) == ["C0001", "C0002"]
    assert all(0 < int(c.params["limit"]) <= 999 for c in fake.called("users.conversations"))
