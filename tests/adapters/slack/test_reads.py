"""Reading Slack: the read limit only for an app distributed outside the Marketplace (a setting, off by default),
a long thread read to its newest message, users.conversations asked within its documented maximum."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.member import channels_of
from adapters.slack.server import SlackServer
from adapters.slack.translate import thread_context
from bot.runtime import slack_config
from bot.settings import Settings
from bot.wiring import build_app
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, settings
from tests.adapters.slack.skipping import skipping_budget, skipping_config
from tests.adapters.slack.test_threads import only
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_limits import SCAN_PAGE

server = skipping.server  # the app on skipping time, in place of the conftest's


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
    client = await SingleWorkspace(web_client(fake.base_url, "xoxb-test"), skipping_budget(fake))("T0001")
    assert sorted(await channels_of(client, "U0001")) == ["C0001", "C0002"]
    assert all(0 < int(c.params["limit"]) <= 999 for c in fake.called("users.conversations"))


async def test_a_read_limited_app_takes_the_newest_page_of_a_long_thread_and_says_what_it_left_out(
        fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM) -> None:
    """Outside the Marketplace Slack gives a read a minute, 15 messages a page: that page is the newest one (read
    back from the mention with `latest` and `inclusive`), the first message comes apart (the topic, and how many
    replies the thread has), and the context counts the messages between them it never read."""
    fake.limits.read_limited = True
    fake.add_channel("C0001", member=True)
    parent = fake.human("C0001", "Our build takes 40 minutes. Should we split the test suite?", "U0002")
    notes = 40
    for i in range(notes):
        fake.human("C0001", f"note {i} on the build", "U0001", parent.ts)
    server = SlackServer(skipping_config(fake, read_limited=True),
                         lambda chats: build_app(settings(tmp_path), chats, llm=llm))
    await server.start()
    try:
        async with aiohttp.ClientSession() as session:
            slack = Slack(f"http://127.0.0.1:{server.port}/slack/events", session, fake)
            await slack.mention("<@UBOT> --rounds 1", thread_ts=parent.ts)
            await server.idle()
            d = await only(server)
    finally:
        await server.stop()
    newest = SCAN_PAGE - 1  # the page holds the mention and the notes just before it
    assert d.topic.startswith("Our build takes 40 minutes")
    lines = d.context.splitlines()
    assert lines[0] == "Lee: Our build takes 40 minutes. Should we split the test suite?"
    assert lines[1] == f"[{notes - newest} earlier messages of this thread left out: only the newest are here.]"
    assert [x for x in lines if "note" in x] == [f"Dana: note {i} on the build" for i in range(notes - newest, notes)]
    [read] = [c for c in fake.called("conversations.replies") if not c.limited]
    assert read.params["inclusive"] in ("1", "true", True) and "oldest" not in read.params
    mention = next(m for m in fake.thread("C0001", parent.ts) if m.text.startswith("<@UBOT>"))
    assert read.params["latest"] == mention.ts  # the thread as it stood when the council was asked for


def test_a_context_too_long_keeps_the_first_message_and_the_newest_whole_and_counts_the_rest() -> None:
    names = {"U1": "Dana"}
    thread = [{"ts": "1.0", "thread_ts": "1.0", "user": "U1", "text": "the question"},
              *({"ts": f"{i + 2}.0", "thread_ts": "1.0", "user": "U1", "text": f"reply {i} " + "x" * 90}
                for i in range(100))]
    text = thread_context(thread, names, limit=1000)
    lines = text.splitlines()
    kept = [x for x in lines if x.startswith("Dana: reply")]
    assert lines[0] == "Dana: the question" and len(text) <= 1000 + len(lines[1])
    assert kept == [f"Dana: reply {i} " + "x" * 90 for i in range(100 - len(kept), 100)]  # whole lines, the newest
    assert lines[1] == f"[{100 - len(kept)} earlier messages of this thread left out: only the newest are here.]"
    unread = thread_context(thread[:1] + thread[-2:], names, unread=None).splitlines()
    assert unread[1].startswith("[Earlier messages of this thread were not read")
