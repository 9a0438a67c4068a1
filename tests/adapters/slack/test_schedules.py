"""Scheduled rounds and digests through the real app (AsyncApp, AsyncWebClient) on an injected clock:
reminders that notify people, digests within Slack's limits, crash recovery by metadata, readable replies."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from adapters.slack.server import SlackServer
from bot.wiring import build_app
from core.control import commands as c
from core.models import Discussion, Poll, Schedule, Status
from tests.adapters.slack.conftest import Slack, settings
from tests.adapters.slack.skipping import skipping_config
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import LIMITS, FakeSlack, Msg, block_error, block_text

T0 = datetime(2026, 3, 2, 8, 0, tzinfo=UTC)  # Monday 09:00 in Berlin, Dana's zone in the fake


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
async def server(fake: FakeSlack, tmp_path: Path, llm: ScriptedLLM, clock: FakeClock) -> AsyncIterator[SlackServer]:
    s = settings(tmp_path)
    srv = SlackServer(skipping_config(fake), lambda chats: build_app(s, chats, llm=llm, clock=clock))
    await srv.start()
    yield srv
    await srv.stop()


def texts(fake: FakeSlack, user: str = "U0001") -> list[str]:
    return [e["text"] for e in fake.ephemerals if e["user"] == user]


def sections(m: Msg) -> list[str]:
    return [b["text"]["text"] for b in m.blocks if b["type"] == "section"]


async def schedule(server: SlackServer, kind: str, target: str) -> Schedule:
    assert server.core is not None
    async with server.core.store.tx() as tx:
        s = await tx.find_schedule(kind, "slack", "T0001", target)
    assert s is not None
    return s


async def fire(server: SlackServer, s: Schedule) -> None:
    assert server.core is not None
    assert await server.core.service.schedules.fire(s.id)
    await server.idle()


# 1: reminders notify the people who took part ----------------------------------------------------------
async def test_the_round_reminder_mentions_everyone_who_took_part(
    slack: Slack, server: SlackServer, fake: FakeSlack, clock: FakeClock
) -> None:
    await slack.command("Is a four-day week worth trying?")  # Dana starts; it waits after round 1
    await server.idle()
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    await slack.reply(d.thread_ref, "What about on-call weeks?", user="U0002")
    await server.idle()
    # A message from another platform's id (say, a CLI user) is heard, but is nobody Slack can notify.
    await server.core.service.handle(c.PostHumanMessage(discussion_id=d.id, text="And support?",
                                                        user_id="cli-user", user_name="Ops", platform="slack",
                                                        workspace="T0001", in_channel="C0001"))
    await slack.command(f'schedule {d.id} "in 1 hour"', user="U0003")
    await server.idle()
    # Each reader sees the time in their own zone (Slack's date token, Unix seconds of 09:00 UTC); clients
    # that can't show it print the fallback, in the discussion's zone.
    token = "<!date^1772442000^{date_short_pretty} {time}|Mon 2 Mar 10:00 (Europe/Berlin)>"
    assert texts(fake, "U0003") == [f"Ines scheduled the next round for {token}."]
    [notice] = [m for m in fake.thread("C0001", d.thread_ref) if "scheduled the next round" in m.text]
    assert token in sections(notice)[0]
    clock.advance(hours=1)
    await fire(server, await schedule(server, "round", d.id))

    [reminder] = [m for m in fake.thread("C0001", d.thread_ref) if "Scheduled round 2 starts now" in m.text]
    assert reminder.text.startswith("<@U0001> <@U0002> ⏰ Scheduled round 2")  # the notification text
    assert sections(reminder)[0].startswith("<@U0001> <@U0002> ⏰ Scheduled round 2")  # and what people see
    assert "cli-user" not in str(reminder.blocks) + reminder.text
    assert "<@U0003>" not in reminder.text  # scheduling a round is not taking part
    [d] = await server.core.service.guard.discussions()
    assert d.round == 2


# 2 and 3: digests ---------------------------------------------------------------------------------------
async def seed(server: SlackServer, fake: FakeSlack, n: int, *, question_words: int = 30) -> list[Discussion]:
    """Discussions in C0001 with threads, long topics and closed polls with long questions."""
    assert server.core is not None
    out = []
    async with server.core.store.tx() as tx:
        for i in range(n):
            header = fake._store(Msg(channel="C0001", ts=fake._ts(), text=f"Council: {i}"))
            topic = f"Topic {i:03d} [draft]: should we move service {i} to the new platform before the next audit?"
            d = Discussion(id=f"d{i:03d}", topic=topic, platform="slack", workspace="T0001", channel="C0001",
                           thread_ref=header.ts, status=Status.WAITING if i % 3 == 0 else Status.DONE,
                           created_at=T0 + timedelta(minutes=i), updated_at=T0 + timedelta(minutes=i))
            await tx.add_discussion(d)
            question = f"Which option should service {i} take? " + "Consider the details carefully. " * (
                question_words // 4)
            await tx.add_poll(Poll(key=f"p{i}", discussion_id=d.id, round=1, question=question,
                                   options=["Move now", "Wait a quarter", "Never"], closed=True, created_at=T0))
            out.append(d)
    return out


def top_level(fake: FakeSlack, channel: str = "C0001") -> list[Msg]:
    return [m for m in fake.messages if m.channel == channel and not m.thread_ts and m.metadata
            and str(m.metadata["event_payload"]["key"]).startswith("digest:")]


def assert_slack_takes(messages: list[Msg]) -> None:
    for m in messages:
        assert m.blocks and not block_error(m.blocks), m.text[:200]  # blocks, not the plain-text fallback
        assert len(m.blocks) <= LIMITS["blocks"] and block_text(m.blocks) <= LIMITS["block_text"]
        assert all(len(s) <= 3000 for s in sections(m))
        assert "](http" not in str(m.blocks)  # every Markdown link became a Slack link


async def test_a_huge_digest_is_one_top_level_message_naming_every_discussion_with_details_in_its_thread(
    slack: Slack, server: SlackServer, fake: FakeSlack, clock: FakeClock
) -> None:
    await slack.command("digest daily")
    await server.idle()
    discussions = await seed(server, fake, 100)  # the most a digest covers
    clock.set(datetime(2026, 3, 3, 8, 0, tzinfo=UTC))  # Tuesday 09:00 in Berlin
    await fire(server, await schedule(server, "digest", "C0001"))

    [top] = top_level(fake)
    thread = fake.thread("C0001", top.ts)[1:]
    replies = [r for r in thread if not r.files]  # the digest's parts; its chart is a file share after them
    assert replies and all(r.thread_ts == top.ts for r in thread)
    assert [r.files[0]["name"] for r in thread if r.files] == ["digest-votes.png"] and thread[-1].files
    assert_slack_takes([top, *replies])
    shown = str(top.blocks)
    # The period in each reader's own zone (Slack's date token), the fallback in the digest's zone.
    assert sections(top)[0].startswith(
        "*Council digest* · <!date^1772438400^{date_short_pretty} {time}|Mon 2 Mar 09:00 (Europe/Berlin)> → "
        "<!date^1772524800^{date_short_pretty} {time}|Tue 3 Mar 09:00 (Europe/Berlin)>")
    assert "*Discussions (100)*" in shown
    for d in discussions:  # each named in the top-level message: its link and (the start of) its topic
        url = f"https://fake.slack.test/archives/C0001/p{d.thread_ref.replace('.', '')}"
        assert re.search(re.escape(f"<{url}|Topic {d.id[1:]}"), shown), d.id
    assert "continue in this message's thread" in shown
    parts = [r.metadata["event_payload"]["part"] for r in replies if r.metadata]
    assert parts == list(range(1, len(replies) + 1))
    details = " ".join(str(r.blocks) for r in replies)
    assert "Which option should service 99 take?" in details and "Cost this period" in details
    assert "<https://fake.slack.test/archives/C0001/p" in details


async def test_a_long_digest_that_fits_is_one_message_in_several_sections(
    slack: Slack, server: SlackServer, fake: FakeSlack, clock: FakeClock
) -> None:
    await slack.command("digest daily")
    await server.idle()
    discussions = await seed(server, fake, 14, question_words=20)
    clock.set(datetime(2026, 3, 3, 8, 0, tzinfo=UTC))
    await fire(server, await schedule(server, "digest", "C0001"))
    [top] = top_level(fake)
    assert [m for m in fake.thread("C0001", top.ts) if not m.files] == [top]  # no text replies: it all fits
    assert_slack_takes([top])
    assert len(sections(top)) > 2 and sum(map(len, sections(top))) > 3000
    assert sum(f"|Topic {d.id[1:]} (draft)" in str(top.blocks) for d in discussions) == 14  # [ ] made ( ) by core
    assert sections(top)[0].startswith("*Council digest* · ") and str(top.blocks).count("Council digest") == 1


async def test_a_digest_posted_by_a_sender_that_died_is_found_by_its_metadata_not_posted_twice(
    slack: Slack, server: SlackServer, fake: FakeSlack, clock: FakeClock
) -> None:
    await slack.command("digest daily")
    await server.idle()
    await seed(server, fake, 3)
    for i in range(150):  # a busy channel: the digest is no longer among the newest messages
        fake.human("C0001", f"chatter {i}", "U0002")
    assert server.core is not None
    fake.lose_answer("chat.postMessage")  # Slack posts the digest; the sender never learns its ts
    clock.set(datetime(2026, 3, 3, 8, 0, tzinfo=UTC))
    await fire(server, await schedule(server, "digest", "C0001"))
    [posted] = top_level(fake)
    async with server.core.store.tx() as tx:
        [row] = await tx.digests()
    assert not row["sent"] and not row["ref"], "the post was never recorded"
    for i in range(12):  # the channel moves on a little before the digest is retried, a lease later
        fake.human("C0001", f"more chatter {i}", "U0002")
    clock.advance(seconds=server.core.driver.config.lease_ttl + 1)
    fake.calls.clear()
    assert await server.core.service.schedules.deliver_digests() == 1

    assert top_level(fake) == [posted]  # found again, not posted again
    async with server.core.store.tx() as tx:
        [row] = await tx.digests()
    assert row["sent"] and row["ref"] == posted.ts
    reads: list[dict[str, Any]] = [x.params for x in fake.called("conversations.history")]
    assert reads and all(p["include_all_metadata"] in ("1", "true", True) for p in reads)
    assert len(reads) == 1 and int(reads[0]["limit"]) <= 15  # one page of the newest messages, never a scan
    assert not fake.called("chat.postMessage")


# 4: what /council digest answers --------------------------------------------------------------------------
async def test_digest_replies_name_the_channel_and_the_zone_once_per_time(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    for command in ("digest daily", "digest weekly <#C0042|decisions> --tz America/New_York",
                    'digest cron "0 9 * * 1" <#C0042|>', "digest off <#C0042|decisions>", "digest off <#C0043|random>",
                    "digest off"):
        await slack.command(command, user="U0003")  # another channel's digest: an admin's to set
        await server.idle()  # one at a time: the answers in order
    here, weekly, cron, off, none, off_here = texts(fake, "U0003")
    # The channel leads each answer, whatever the service's wording (which the adapter does not rewrite).
    assert here.startswith("<#C0001>: Digest scheduled: daily at 09:00")
    assert weekly.startswith("<#C0042>: Digest scheduled: weekly, Mondays at 09:00")
    assert "America/New_York" in weekly
    assert cron.startswith("<#C0042>: Digest scheduled: cron `0 9 * * 1`")
    assert off == "<#C0042>: Digest turned off."
    assert none.startswith("<#C0043>: ") and "no digest" in none
    assert off_here == "<#C0001>: Digest turned off."
    for text in (here, weekly, cron):
        assert not re.search(r"(\([\w/]+\)) \1", text), text  # never "(Europe/Berlin) (Europe/Berlin)"
    _, body = await slack.command("digest daily #general")
    assert "isn't one I can use" in body and "like #general" not in body
