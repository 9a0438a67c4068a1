"""SlackChat on the real AsyncWebClient against the fake Web API: identity, pacing, 429s, splitting, recovery."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from slack_sdk.errors import SlackApiError

from adapters.slack.budgeted import per_minute
from adapters.slack.chat import SlackChat
from adapters.slack.clients import SingleWorkspace, web_client
from adapters.slack.render import render
from core.models import Discussion, Persona, Post, Role, Status
from core.ports import CannotPost
from core.running.budget import LocalBuckets, RateBudget
from tests.adapters.slack.conftest import skipping_chat
from tests.fakes.clock import VirtualTime
from tests.fakes.slack_api import FakeSlack

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines", icon=":gear:")


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlack]:
    async with FakeSlack() as f:  # on the skipping clock `chat` gives it
        for channel in ("C0001", "C0002"):  # the app joined them before its discussions started
            f.add_channel(channel, member=True)
        yield f


def chat(fake: FakeSlack, pace_s: float = 1.0) -> SlackChat:
    return skipping_chat(fake, pace_s)


async def discussion(c: SlackChat, channel: str = "C0001") -> Discussion:
    d = Discussion(id="d1", topic="Trunk-based development?", platform="slack", workspace="T0001", channel=channel,
                   created_at=NOW, updated_at=NOW)
    d.thread_ref = await c.publish(d, Post(kind="header", key="d1:header", title=d.topic, text="roster"))
    return d


def turn(key: str, text: str = "I think we should.") -> Post:
    return Post(kind="turn", key=key, text=text, persona=ADA, title="Round 1 · Opening statement")


async def test_personas_post_under_their_own_name_and_a_429_never_loses_a_post(fake: FakeSlack) -> None:
    c = chat(fake)
    d = await discussion(c)
    fake.rate_limit("chat.postMessage", times=1, retry_after=0)
    ts = await c.publish(d, turn("d1:r1:s1:ada"))
    m = fake.find("C0001", ts)
    assert m is not None and m.thread_ts == d.thread_ref and m.username == "Ada Lovelace" and m.icon_emoji == ":gear:"
    assert [x.method for x in fake.calls].count("chat.postMessage") == 3  # header, 429, the retry
    assert await c.link(d) == f"https://fake.slack.test/archives/C0001/p{d.thread_ref.replace('.', '')}"


async def test_pacing_holds_each_channel_to_one_post_per_interval(fake: FakeSlack) -> None:
    # On virtual time, the fake's and the budget's alike: Slack's seconds pass only while every post waits for its
    # slot, so the spacing is exact and a busy machine cannot squeeze two posts together.
    time = VirtualTime()
    fake.clock, fake.time_scale = time, 1.0
    c = SlackChat(SingleWorkspace(web_client(fake.base_url, "xoxb-test"),
                                  RateBudget(LocalBuckets(), per_minute(), wall=time, sleep=time.sleep)))
    one, two = await discussion(c, "C0001"), await discussion(c, "C0002")
    # Queued channel by channel: all of C0001's posts first, then C0002's.
    await time.run(*(c.publish(d, turn(f"{d.channel}:{i}")) for d in (one, two) for i in range(4)))
    posts = fake.called("chat.postMessage")
    for channel in ("C0001", "C0002"):
        times = [x.at for x in posts if x.params["channel"] == channel]  # in Slack's seconds
        assert len(times) == 5
        assert [b - a for a, b in itertools.pairwise(times)] == [1.0] * 4, times  # one a second, each in its slot
    assert not fake.answered_429  # the fake allows short bursts; the app never needs them
    # Paced side by side, not one after the other: C0002 posts while C0001 still waits out its intervals.
    turns = [x.params["channel"] for x in posts[2:]]  # after the two headers
    last_of_one = max(i for i, channel in enumerate(turns) if channel == "C0001")
    assert turns.index("C0002") < last_of_one, turns


async def test_a_long_turn_is_split_into_several_posts_within_slack_limits(fake: FakeSlack) -> None:
    c = chat(fake)
    d = await discussion(c)
    text = "\n\n".join(f"**Point {i}.** " + "evidence " * 300 for i in range(12))
    ts = await c.publish(d, turn("d1:r1:s1:ada", text))
    parts = fake.thread("C0001", d.thread_ref)[1:]
    assert len(parts) >= 3 and parts[0].ts == ts  # the fake refuses what Slack would refuse
    assert all(p.username == "Ada Lovelace" for p in parts)
    assert "part 2 of" in str(parts[1].blocks) and "*Point 0.*" in str(parts[0].blocks)
    assert [p.metadata["event_payload"]["part"] for p in parts if p.metadata] == list(range(len(parts)))


def knowing(c: SlackChat, ref: str) -> SlackChat:
    """A chat whose database says `ref` is the newest post it knows was sent (what the server wires in)."""
    async def last_ref(discussion_id: str) -> str:
        return ref
    c.last_ref = last_ref
    return c


async def test_recovery_reads_one_page_after_the_newest_post_the_database_knows(fake: FakeSlack) -> None:
    before = chat(fake)
    d = await discussion(before)
    for i in range(40):  # a long thread: a scan of it would take pages
        fake.human("C0001", f"reply {i}", "U0002", thread_ts=d.thread_ref)
    known = await before.publish(d, turn("d1:r1:s1:ada"))
    ts = await before.publish(d, turn("d1:r1:s2:ada"))  # sent, but its sender died before recording it
    after = knowing(chat(fake), known)  # a new process
    assert await after.find(d, "d1:r1:s2:ada") == ts
    assert await after.find(d, "d1:r1:s3:ada") is None
    reads = fake.called("conversations.replies")
    assert len(reads) == 2  # one read per post whose fate is unknown, and one page each
    assert all(r.params["oldest"] == known and int(r.params["limit"]) <= 15 for r in reads)
    assert all(r.params["include_all_metadata"] in ("1", "true", True) for r in reads)
    fake.disabled.add("conversations.replies")
    assert await chat(fake).find(d, "d1:r1:s1:ada") is None  # an unreadable thread never blocks publishing


async def test_a_split_post_cut_short_by_a_crash_is_completed_not_duplicated(fake: FakeSlack) -> None:
    before = chat(fake)
    d = await discussion(before)
    post = turn("d1:r1:s1:ada", "\n\n".join("words " * 500 for _ in range(6)))
    fake.fail("chat.postMessage", "internal_error", after=1)
    with pytest.raises(Exception, match="internal_error"):
        await before.publish(d, post)
    after = chat(fake)
    ref = await after.find(d, post.key)
    assert ref is not None
    await after.update(d, ref, post)
    parts = fake.thread("C0001", d.thread_ref)[1:]
    assert [p.metadata["event_payload"]["part"] for p in parts if p.metadata] == list(range(len(parts)))
    assert len(parts) == len(render(post)) > 1


async def test_a_thinking_placeholder_becomes_the_turn_even_after_a_restart(fake: FakeSlack) -> None:
    before = chat(fake)
    d = await discussion(before)
    await before.thinking(d, ADA, "d1:r1:s1:ada")
    await before.drain()
    [placeholder] = fake.thread("C0001", d.thread_ref)[1:]
    assert placeholder.text == "Ada Lovelace is thinking…" and placeholder.username == "Ada Lovelace"
    after = knowing(chat(fake), d.thread_ref)  # the turn's post was claimed before the crash: its fate is unknown
    assert await after.find(d, "d1:r1:s1:ada") is None  # not posted; the page read shows its placeholder
    ts = await after.publish(d, turn("d1:r1:s1:ada"))
    assert ts == placeholder.ts and len(fake.thread("C0001", d.thread_ref)) == 2
    assert "I think we should." in str(fake.find("C0001", ts).blocks)  # type: ignore[union-attr]


async def test_an_announcement_is_found_again_by_its_metadata_in_recent_channel_history(fake: FakeSlack) -> None:
    before = chat(fake)
    post = Post(kind="notice", key="digest:1:20260303T080000Z", title="Council digest", text="**Council digest**")
    ref = await before.announce("T0001", "C0009", post)
    assert fake.find("C0009", ref).metadata == {  # type: ignore[union-attr]
        "event_type": "council_post", "event_payload": {"key": post.key, "part": 0}}
    after = chat(fake)  # a new process
    assert await after.find_announcement("T0001", "C0009", post.key) == ref
    assert await after.find_announcement("T0001", "C0009", "digest:1:other") is None
    assert await after.find_announcement("T0001", "C0001", post.key) is None  # another channel
    fake.fail("conversations.history", "not_in_channel")  # removed from the channel since it posted there
    assert await after.find_announcement("T0001", "C0009", post.key) == ref
    assert fake.called("conversations.join")
    fake.fail("conversations.history", "channel_not_found")
    assert await after.find_announcement("T0001", "C0009", post.key) is None  # unreadable: post again
    for i in range(250):
        fake.human("C0009", f"chatter {i}", "U0002")
    fake.calls.clear()
    assert await after.find_announcement("T0001", "C0009", post.key) is None  # older than the one page read
    [read] = fake.called("conversations.history")
    assert int(read.params["limit"]) <= 15


async def test_an_edit_of_a_message_that_is_gone_is_skipped_and_the_post_still_shown(fake: FakeSlack) -> None:
    """chat.update answers message_not_found (deleted) or cant_update_message: log it, never wedge the outbox."""
    c = chat(fake)
    d = await discussion(c)
    await c.thinking(d, ADA, "d1:r1:s1:ada")
    await c.drain()
    [placeholder] = fake.thread("C0001", d.thread_ref)[1:]
    fake.messages.remove(placeholder)  # someone deleted "Ada Lovelace is thinking…"
    ts = await c.publish(d, turn("d1:r1:s1:ada"))
    assert [x.params["ts"] for x in fake.called("chat.update")] == [placeholder.ts]  # tried, refused
    [shown] = fake.thread("C0001", d.thread_ref)[1:]
    assert shown.ts == ts != placeholder.ts and "I think we should." in str(shown.blocks)  # posted anew instead
    fake.fail("chat.update", "cant_update_message")
    await c.update(d, ts, turn("d1:r1:s1:ada", "Edited."))  # no exception
    await c.update(d, "1700009999.000001", turn("d1:r1:s1:ada", "Edited."))  # message_not_found from the fake
    assert "I think we should." in str(fake.find("C0001", ts).blocks)  # type: ignore[union-attr]
    fake.fail("chat.update", "ratelimited_forever")  # any other refusal still raises: the outbox tries again
    with pytest.raises(Exception, match="ratelimited_forever"):
        await c.update(d, ts, turn("d1:r1:s1:ada", "Edited."))


async def test_a_placeholder_grows_with_the_words_then_becomes_the_post(fake: FakeSlack) -> None:
    c = chat(fake)
    d = await discussion(c)
    key = "d1:r1:s1:ada"
    await c.thinking(d, ADA, key)
    await c.stream(d, ADA, key, "Trunk-based development & <feature flags>")
    await c.stream(d, ADA, key, "Trunk-based development & <feature flags> go together")  # within the gap: skipped
    edits = fake.called("chat.update")
    assert len(edits) == 1, "the first words show at once; growth waits for the channel's next slot"
    placeholder = fake.find("C0001", edits[0].params["ts"])
    assert placeholder is not None and placeholder.username == "Ada Lovelace"
    assert "&amp; &lt;feature flags&gt;" in placeholder.blocks[0]["text"]["text"], "typed markup stays text"
    assert "writing" in str(placeholder.blocks[-1])
    ts = await c.publish(d, turn(key, "Trunk-based development and feature flags go together."))
    assert ts == placeholder.ts, "the finished post replaces the live text in place"
    assert "writing" not in str(fake.find("C0001", ts).blocks)  # type: ignore[union-attr]
    await c.stream(d, ADA, key, "late words")
    assert len(fake.called("chat.update")) == 2, "nothing lands after the finished post"


async def test_an_archived_channel_or_a_removal_is_a_refusal_for_good(fake: FakeSlack) -> None:
    c = chat(fake)
    d = await discussion(c)
    fake.channels["C0001"]["is_archived"] = True
    with pytest.raises(CannotPost, match="archived"):
        await c.publish(d, turn("d1:r1:s1:ada"))
    fake.add_channel("C0001", private=True)  # made private and the app removed: it may not rejoin by itself
    with pytest.raises(CannotPost, match="removed"):
        await c.publish(d, turn("d1:r1:s1:ada"))
    fake.add_channel("C0001", member=True)
    fake.fail("chat.postMessage", "internal_error")  # a passing failure stays an ordinary error: retried later
    with pytest.raises(SlackApiError):
        await c.publish(d, turn("d1:r1:s1:ada"))


async def test_a_header_redrawn_for_a_new_state_leaves_placeholders_of_turns_being_written(fake: FakeSlack) -> None:
    c = chat(fake)
    d = await discussion(c)
    moderator = Persona(key="moderator", name="Moderator", role=Role.MODERATOR, icon=":classical_building:")
    await c.thinking(d, moderator, "d1:r0:s0:roster")
    await c.thinking(d, ADA, "d1:r1:s1:ada")
    await c.drain()
    roster, ada = fake.thread("C0001", d.thread_ref)[1:]
    # someone paused while Ada writes: the header is redrawn, and Ada is still writing
    await c.update(d, d.thread_ref, Post(kind="header", key="d1:header:edit:1", replaces="d1:header",
                                         title=d.topic, text="roster", state="⏸️ Pausing"))
    assert [fake.find("C0001", m.ts).text for m in (roster, ada)] == [  # type: ignore[union-attr]
        "Moderator is thinking…", "Ada Lovelace is thinking…"]
    # the roster turn's result is the header: its placeholder, and only that one, goes (a line saying "the
    # roster is above" would say nothing the header does not)
    await c.update(d, d.thread_ref, Post(kind="header", key="d1:header:d1:r0:s0:roster", replaces="d1:header",
                                         title=d.topic, text="roster"))
    assert fake.find("C0001", roster.ts) is None
    assert fake.find("C0001", ada.ts).text == "Ada Lovelace is thinking…"  # type: ignore[union-attr]
    ts = await c.publish(d, turn("d1:r1:s1:ada"))
    assert ts == ada.ts, "Ada's turn lands in her own placeholder"


async def test_a_turn_cut_short_by_stop_keeps_no_partial_words_in_its_placeholder(fake: FakeSlack) -> None:
    c = chat(fake)
    d = await discussion(c)
    key = "d1:r1:s1:ada"
    await c.thinking(d, ADA, key)
    await c.drain()
    await c.stream(d, ADA, key, "Trunk-based development works when half of")
    [placeholder] = fake.thread("C0001", d.thread_ref)[1:]
    assert "half of" in str(fake.find("C0001", placeholder.ts).blocks)  # type: ignore[union-attr]
    stopped = d.model_copy(update={"status": Status.STOPPED})
    await c.publish(stopped, Post(kind="notice", key="d1:stopped", text="⏹️ Dana stopped the discussion."))
    shown = fake.find("C0001", placeholder.ts)
    assert shown is not None and "half of" not in str(shown.blocks) and "half of" not in shown.text
    assert "stopped" in shown.text and "writing" not in str(shown.blocks)


async def test_takeovers_look_for_placeholders_only_with_a_read_to_spare_never_waiting_for_one(
    fake: FakeSlack,
) -> None:
    """A replica died driving two discussions: outside the Marketplace Slack allows one thread read a minute, so
    the second takeover posts its placeholder anew instead of waiting a minute for a read."""
    fake.limits.read_limited = True  # an app distributed outside the Marketplace
    before = chat(fake)
    one = await discussion(before, "C0001")
    two = Discussion(id="d2", topic="Monorepo?", platform="slack", workspace="T0001", channel="C0002",
                     created_at=NOW, updated_at=NOW)
    two.thread_ref = await before.publish(two, Post(kind="header", key="d2:header", title=two.topic, text="roster"))
    for d in (one, two):
        await before.thinking(d, ADA, f"{d.id}:r1:s1:ada")
    await before.drain()
    after = chat(fake)  # a new process
    for d in (one, two):
        await after.thinking(d, ADA, f"{d.id}:r1:s1:ada")
    await after.drain()
    assert len(fake.called("conversations.replies")) == 1
    assert not fake.answered_429
    assert len([m for m in fake.thread("C0001", one.thread_ref) if "thinking" in m.text]) == 1  # its own, found
    assert len([m for m in fake.thread("C0002", two.thread_ref) if "thinking" in m.text]) == 2  # posted anew
