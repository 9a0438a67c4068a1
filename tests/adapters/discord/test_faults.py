"""Rate limits, refusals and crashes: every post still lands, exactly once, in order."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from adapters.discord.chat import DiscordChat
from adapters.discord.render import render
from core.models import Discussion, Persona, Post, Role, Status
from tests.adapters.discord.conftest import Council, by_webhook, confirm_step, running
from tests.fakes.clock import FakeClock
from tests.fakes.discord_api import FakeDiscord, Fault

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada Lovelace", role=Role.EXPERT, title="Analyst", icon=":bulb:")


async def sent_refs(council: Council) -> list[str]:
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        rows = await tx.posts(d.id)
        pending = await tx.pending_posts(d.id)
    assert not pending, f"posts still queued: {[p.key for _, p, _, _ in pending]}"
    ids: list[str] = []
    for post, ref in rows:
        if not post.replaces:
            ids += ref.split(":")[1].split(",") if ":" in ref else [ref]
    return ids


async def test_posts_refused_with_429_land_once(fake: FakeDiscord, tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 8, 0, tzinfo=UTC))
    async with running(fake, tmp_path, clock=clock) as council:
        await _refused_with_429_land_once(council, clock)


async def _refused_with_429_land_once(council: Council, clock: FakeClock) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    persona_posts = rf"^/webhooks/(?!{fake.app_id})\d+/[^/]+$"  # not the interaction follow-ups
    fake.faults += [
        Fault("POST", persona_posts, retry_after=0.0, times=3),
        Fault("POST", r"^/channels/\d+/messages$", retry_after=0.0, times=2, is_global=True),
        # Longer than max_ratelimit_timeout: discord.py raises instead of waiting; the outbox tries again later.
        Fault("POST", persona_posts, retry_after=120.0, times=1),
    ]
    i = await fake.slash(dana, "council", topic="Should we adopt trunk-based development?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    clock.advance(seconds=119)
    await council.app.driver.sweep()  # what the background sweeper does every COUNCIL_SWEEP_INTERVAL_S
    await council.settle()
    assert sum(1 for c in fake.calls if c.status == 429) == 6
    assert (await council.discussion()).status.value == "running", "Discord's retry-after is honoured"
    clock.advance(seconds=1)
    await council.app.driver.sweep()
    await council.settle()

    assert sum(1 for c in fake.calls if c.status == 429) == 6
    d = await council.discussion()
    assert d.status.value == "done"
    ids = await sent_refs(council)
    charts = [m for m in fake.thread_messages(d.thread_ref)
              if any(a["filename"].endswith(".png") for a in m["attachments"])]  # synthesis.md is a queued post
    assert len(charts) == 1, "the final synthesis's charts, once"  # their own message, not a queued post
    posted = [m["id"] for m in fake.messages[fake.channel_id] + fake.thread_messages(d.thread_ref)
              if m not in charts]
    assert sorted(ids) == sorted(posted), "every queued post landed exactly once"
    thread_ids = [m["id"] for m in fake.thread_messages(d.thread_ref) if m not in charts]
    assert [x for x in ids if x in thread_ids] == thread_ids, "and in the order it was queued"


async def test_a_restart_does_not_post_twice(council: Council) -> None:
    """A crash between posting and storing the ref: a new process (a fresh DiscordChat on the same client and
    store, nothing cached) sends each post again, and Discord still shows every post once."""
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council", topic="Monorepo or polyrepo?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        rows = await tx.posts(d.id)
    shown = {cid: [m["id"] for m in msgs] for cid, msgs in fake.messages.items()}
    threads = sorted(cid for cid, ch in fake.channels.items() if ch["type"] == 11)
    hooks = sorted(fake.webhooks)

    restarted = DiscordChat()
    restarted.attach(council.client, council.app.store)
    edited_later = {p.replaces for p, _ in rows}
    header, header_ref = next((p, ref) for p, ref in rows if p.key == f"{d.id}:header")
    # The header's ref (the thread) was never stored: it is sent again as a new header; its nonce finds it.
    assert await restarted.publish(d.model_copy(update={"thread_ref": ""}), header) == header_ref
    kinds = set()
    for post, ref in rows:
        if post.replaces or post.key in edited_later:
            continue
        kinds.add("persona " + post.kind if post.persona else post.kind)
        assert await restarted.find(d, post.key) == ref, f"find() must recover {post.key}"
        if post.persona is None:  # the bot's messages carry nonces: sending again returns the one posted
            assert await restarted.publish(d, post) == ref, post.key
        else:  # webhooks take no nonce: the outbox finds the post first (attempts > 0) and edits it in place
            await restarted.update(d, ref, post)
    assert {"persona turn", "poll"} <= kinds, kinds  # posts through the webhook, and the bot's own with nonces

    assert {cid: [m["id"] for m in msgs] for cid, msgs in fake.messages.items()} == shown, "nothing twice"
    assert sorted(cid for cid, ch in fake.channels.items() if ch["type"] == 11) == threads, "no second thread"
    assert sorted(fake.webhooks) == hooks, "the webhook already there is reused"


async def test_a_deleted_webhook_is_replaced(fake: FakeDiscord, tmp_path: Path) -> None:
    clock = FakeClock(datetime(2026, 3, 2, 8, 0, tzinfo=UTC))
    async with running(fake, tmp_path, clock=clock) as council:
        await _deleted_webhook_is_replaced(council, clock)


async def _deleted_webhook_is_replaced(council: Council, clock: FakeClock) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council", topic="Monorepo or polyrepo?")
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    fake.webhooks.clear()  # an admin removed it
    choice = next(m for m in reversed(fake.thread_messages((await council.discussion()).thread_ref))
                  if m["components"])
    await confirm_step(fake, dana, choice, "Synthesize", choice["channel_id"])
    # The persona's post through the deleted webhook is refused (404), and waits out its backoff.
    await fake.wait_for(lambda: any(c.status == 404 and c.path.startswith("/webhooks/") for c in fake.calls))
    await council.settle()
    assert not fake.webhooks
    clock.advance(seconds=2)  # the refused post's first backoff
    await council.app.driver.sweep()
    await council.settle()
    assert fake.webhooks, "a new webhook was made"
    assert (await council.discussion()).status.value == "done"
    await sent_refs(council)


async def test_a_split_persona_post_refused_midway_sends_only_the_missing_parts(
    fake: FakeDiscord, tmp_path: Path
) -> None:
    """Webhook posts carry no nonce: after part 2 is refused, the retry must not post part 1 again."""
    clock = FakeClock(datetime(2026, 3, 2, 8, 0, tzinfo=UTC))
    async with running(fake, tmp_path, clock=clock) as council:
        await _split_post_refused_midway(council, clock)


async def _split_post_refused_midway(council: Council, clock: FakeClock) -> None:
    fake = council.fake
    d = Discussion(id="5p117001", topic="Split posts", platform="discord", workspace=fake.guild_id,
                   channel=fake.channel_id, status=Status.STOPPED, created_at=NOW, updated_at=NOW)
    async with council.app.store.tx() as tx:
        await tx.add_discussion(d)
        await tx.enqueue(d.id, Post(kind="header", key=f"{d.id}:header", title="Split posts", text="Roster"), NOW)
        # Only the holder of a discussion's lease sends its posts, as a driver would.
        assert await tx.acquire_lease(d.id, council.app.driver.config.owner, council.app.clock.now(), 600)
    assert await council.app.driver.publish(d.id)
    d = await council.discussion()
    text = "\n\n".join(f"Point {i}: " + "evidence " * 150 for i in range(3))  # a message per point
    post = Post(kind="turn", key=f"{d.id}:r1:s1:ada", text=text, persona=ADA, title="Round 1 · Opening")
    parts = [m.content for m in render(post, webhook=True)]
    assert len(parts) == 3
    async with council.app.store.tx() as tx:
        await tx.enqueue(d.id, post, NOW)
    persona_posts = rf"^/webhooks/(?!{fake.app_id})\d+/[^/]+$"
    fake.faults.append(Fault("POST", persona_posts, status=503, after=1, times=1))  # part 1 lands, part 2 refused

    assert not await council.app.driver.publish(d.id)  # refused: the post stays queued
    assert [m["content"] for m in by_webhook(fake.thread_messages(d.thread_ref))] == parts[:1]
    clock.advance(seconds=2)  # its first backoff
    assert await council.app.driver.publish(d.id)  # the retry finds part 1 and sends parts 2 and 3 only

    posted = by_webhook(fake.thread_messages(d.thread_ref))
    assert [m["content"] for m in posted] == parts
    assert all(m["author"]["username"] == "Ada Lovelace" for m in posted)
    assert len(fake.calls_to("POST", persona_posts)) == 4  # part 1, part 2 refused, part 2, part 3
    async with council.app.store.tx() as tx:
        ref = dict((p.key, r) for p, r in await tx.posts(d.id))[post.key]
    assert ref.split(":")[1].split(",") == [m["id"] for m in posted]  # the ref names every part, in order
