"""Discord's documented rules, enforced by the fake by default, and the bot living within them: permissions per
channel, channel kinds (forum, voice), webhook components, the README's invite, direct-message buttons."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.adapters.discord.conftest import Council, confirm_step, running, settled
from tests.adapters.discord.test_flow import start_and_wait, with_button
from tests.fakes import discord_payloads as p
from tests.fakes import discord_rules as r
from tests.fakes.discord_api import FakeDiscord

README = Path(__file__).resolve().parents[3] / "README.md"
PAGES = {"council_public_url": "https://council.example.com",
         "council_web_secret": "s3cret-of-at-least-thirty-two-bytes!"}


def invite_permissions() -> int:
    """The permissions integer the README tells people to invite the bot with."""
    found = re.search(r"permissions integer `(\d+)`", README.read_text())
    assert found, "the README names the invite's permissions integer"
    return int(found[1])


async def status_is(council: Council, status: str) -> bool:
    return (await council.discussion()).status.value == status


def charts_in(fake: FakeDiscord, thread: str) -> list[dict]:
    return [m for m in fake.thread_messages(thread) if m["attachments"]]


async def test_the_readmes_invite_lets_council_post_its_charts(tmp_path: Path) -> None:
    async with FakeDiscord(permissions=invite_permissions()) as fake, running(fake, tmp_path) as council:
        i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?", rounds=1)
        await fake.wait_for(lambda: i.followups)
        await council.settle()
        d = await council.discussion()
        assert d.status.value == "done"
        assert charts_in(fake, d.thread_ref), "the final synthesis's charts are attached"
        assert not [c for c in fake.calls if c.status == 403], "nothing the invite grants is refused"


async def test_a_chart_refused_for_attach_files_is_left_out_and_the_post_says_so(council: Council) -> None:
    fake = council.fake
    fake.deny(fake.channel_id, r.ATTACH_FILES)  # a channel overwrite; the thread inherits it
    i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "done"
    assert "Attach Files" in i.followups[-1]["content"], "the starter learns at once that charts will be missing"
    assert not charts_in(fake, d.thread_ref)
    assert fake.calls_to("POST", rf"^/channels/{d.thread_ref}/messages$")[-1].status == 200
    said = [m["content"] for m in fake.thread_messages(d.thread_ref) if "📊" in m["content"]]
    assert len(said) == 1 and "Attach Files" in said[0], "the charts' place says why they are missing"
    document = [m["content"] for m in fake.thread_messages(d.thread_ref) if "synthesis.md" in m["content"]]
    assert len(document) == 1 and "Attach Files" in document[0], "synthesis.md's place says why it is missing"


async def test_webhook_posts_with_a_button_ask_for_their_components(tmp_path: Path) -> None:
    """Discord drops a webhook message's components unless the query says `with_components=true`."""
    async with FakeDiscord() as fake, running(fake, tmp_path, settings=PAGES) as council:
        i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?", rounds=1)
        await fake.wait_for(lambda: i.followups)
        await council.settle()
        d = await council.discussion()
        linked = [m for m in fake.thread_messages(d.thread_ref) if m.get("webhook_id") and m["components"]]
        labels = [c["label"] for m in linked for row in m["components"] for c in row["components"]]
        assert "Discussion page" in labels, "the synthesis links to its page under the moderator's name"


@pytest.mark.parametrize("kind", [r.VOICE, r.STAGE])
async def test_council_in_a_voice_or_stage_chat_is_refused_before_anything_is_spent(council: Council,
                                                                                    kind: int) -> None:
    fake = council.fake
    chat = await fake.add_channel(kind, "standup")
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=chat, topic="Kanban or Scrum?")
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    assert "voice" in i.followups[-1]["content"] and "text or forum channel" in i.followups[-1]["content"]
    assert await council.app.service.guard.discussions() == [] and not council.llm.prompts
    assert not fake.messages[chat]


async def test_council_in_a_forum_starts_a_forum_post_as_its_thread(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "done", d.blocked_reason
    post = fake.channels[d.thread_ref]
    assert post["parent_id"] == forum and post["name"].startswith("Kanban or Scrum")
    first, *rest = fake.thread_messages(d.thread_ref)
    assert first["id"] == d.thread_ref and "Kanban or Scrum?" in first["embeds"][0]["title"], "the header starts it"
    assert len([m for m in rest if m.get("webhook_id")]) >= 6, "the personas speak in the post"
    assert charts_in(fake, d.thread_ref)
    assert not [c for c in fake.calls if c.status >= 400]


async def test_retry_and_stop_work_from_the_blocked_direct_message(tmp_path: Path) -> None:
    async with FakeDiscord(manage_webhooks=False) as fake, running(fake, tmp_path) as council:
        dana = fake.add_user("Dana")
        thread = await start_and_wait(council, dana, topic="Kanban or Scrum?")
        fake.deny(fake.channel_id, r.SEND_MESSAGES_IN_THREADS)  # someone takes the thread from the bot
        choice = with_button(fake, thread, "Another round")
        await fake.click(dana, choice, fake.find_button(choice, "Another round"))
        await settled(council, lambda: status_is(council, "blocked"))
        await council.settle()
        [dm] = [cid for cid, ch in fake.channels.items() if ch["type"] == r.DM]
        [notice] = fake.messages[dm]
        assert "blocked" in notice["content"]
        assert "/invite" not in notice["content"], "Slack's command, told to someone on Discord"

        fake.allow(fake.channel_id, r.SEND_MESSAGES_IN_THREADS)
        before = len(fake.thread_messages(thread))
        retry = await fake.click(dana, notice, fake.find_button(notice, "Retry"))
        assert "guild_id" not in retry.payload and "member" not in retry.payload, "as Discord sends it from a DM"
        await fake.wait_for(lambda: len(fake.thread_messages(thread)) > before)  # the round goes on in the thread
        await council.settle()
        assert "can't find" not in str(retry.followups)
        assert (await council.discussion()).status.value != "blocked"

        _, sure = await confirm_step(fake, dana, notice, "Stop", dm)
        await council.settle()
        assert "can't find" not in str(sure.followups + sure.edits)
        assert (await council.discussion()).status.value == "stopped"


async def test_a_dm_button_names_a_discussion_only_its_starter_can_reach(tmp_path: Path) -> None:
    async with FakeDiscord(manage_webhooks=False) as fake, running(fake, tmp_path) as council:
        dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
        thread = await start_and_wait(council, dana, topic="Kanban or Scrum?")
        d = await council.discussion()
        # Lee's own DM with the bot, holding a copied Retry button for Dana's discussion.
        dm = p.snowflake()
        fake.channels[dm] = {"id": dm, "type": r.DM, "last_message_id": None, "recipients": [lee]}
        forged = p.message(p.snowflake(), dm, fake.bot, {"content": "x", "components": [{"type": 1, "components": [
            {"type": 2, "style": 1, "label": "Retry", "custom_id": f"cl|fail:retry|{d.id}"}]}]})
        fake.messages[dm] = [forged]
        click = await fake.click(lee, forged, f"cl|fail:retry|{d.id}")
        await fake.wait_for(lambda: click.followups)
        await council.settle()
        assert "can't find" in click.followups[-1]["content"]
        assert (await council.discussion()).status == d.status and thread == d.thread_ref


async def test_an_interaction_too_late_to_acknowledge_does_nothing(council: Council) -> None:
    """Discord drops an interaction not answered within 3 s and tells the person it failed: they will try
    again, so the late one must not start a second discussion."""
    fake = council.fake
    fake.delivery_lag_s = r.INTERACTION_ACK_S + 0.5  # the gateway delivered it late
    late = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?")
    await fake.wait_for(lambda: fake.calls_to("POST", rf"^/interactions/{late.id}/"))
    await council.settle()
    assert fake.calls_to("POST", rf"^/interactions/{late.id}/")[0].status == 404 and not late.callbacks
    assert await council.app.service.guard.discussions() == [] and not council.llm.prompts

    fake.delivery_lag_s = 0.0
    again = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?")
    await fake.wait_for(lambda: again.followups)
    await council.settle()
    assert len(await council.app.service.guard.discussions()) == 1


async def test_a_late_click_changes_nothing(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    thread = await start_and_wait(council, dana, topic="Kanban or Scrum?")
    before = await council.discussion()
    fake.delivery_lag_s = r.INTERACTION_ACK_S + 0.5
    choice = with_button(fake, thread, "Another round")
    late = await fake.click(dana, choice, fake.find_button(choice, "Another round"))
    await fake.wait_for(lambda: fake.calls_to("POST", rf"^/interactions/{late.id}/"))
    await council.settle()
    after = await council.discussion()
    assert (after.status, after.round) == (before.status, before.round)


async def test_a_follow_up_after_fifteen_minutes_is_refused(tmp_path: Path) -> None:
    """The interaction token serves follow-ups for 15 minutes (the fake's rule, on its injected clock)."""
    import aiohttp

    clock = r.ManualClock()
    async with FakeDiscord(clock=clock) as fake, running(fake, tmp_path) as council:
        i = await fake.slash(fake.add_user("Dana"), "council-help")
        await fake.wait_for(lambda: i.followups)
        url = f"{fake.api_url}/webhooks/{fake.app_id}/{i.token}"
        async with aiohttp.ClientSession() as http:
            async with http.post(url, json={"content": "still here"}) as ok:
                assert ok.status == 200
            clock.advance(r.INTERACTION_TOKEN_S + 1)
            async with http.post(url, json={"content": "too late"}) as late:
                assert late.status == 401 and (await late.json())["code"] == 50027
        assert council.client.is_ready()


async def test_posts_wait_for_their_rate_limit_bucket_instead_of_meeting_429s(tmp_path: Path) -> None:
    """Tight buckets (Discord documents no fixed numbers, only the headers): the bot reads X-RateLimit-Remaining
    and -Reset-After and waits, so Discord never has to refuse it."""
    async with FakeDiscord() as fake:
        fake.limits.per_route, fake.limits.per_s = 3, 0.3
        async with running(fake, tmp_path) as council:
            i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?", rounds=1)
            await fake.wait_for(lambda: i.followups)
            await council.settle()
            assert (await council.discussion()).status.value == "done"
        assert fake.limits.answered_429 == 0 and not [c for c in fake.calls if c.status == 429]
        buckets = {b.key for b in fake.limits.buckets.values() if b.used}
        assert len(buckets) > 3, "routes are limited per bucket"


async def test_a_channel_with_fifteen_webhooks_gets_embeds(tmp_path: Path) -> None:
    """Discord allows 15 webhooks a channel; when others took them all, personas post as embeds."""
    async with FakeDiscord() as fake:
        for n in range(r.MAX_WEBHOOKS):
            wid = p.snowflake()
            fake.webhooks[wid] = {"id": wid, "type": 1, "guild_id": fake.guild_id, "channel_id": fake.channel_id,
                                  "name": f"other {n}", "token": f"t{n}", "application_id": None, "user": None}
        async with running(fake, tmp_path) as council:
            i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?", rounds=1)
            await fake.wait_for(lambda: i.followups)
            await council.settle()
            d = await council.discussion()
        assert d.status.value == "done"
        assert [c.status for c in fake.calls_to("POST", r"/webhooks$")] == [400]
        assert any(m["embeds"] and m["embeds"][0].get("author") for m in fake.thread_messages(d.thread_ref))


async def test_council_in_an_announcement_channel_runs_in_an_announcement_thread(council: Council) -> None:
    fake = council.fake
    news = await fake.add_channel(r.ANNOUNCEMENT, "news")
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=news, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "done" and fake.channels[d.thread_ref]["type"] == r.ANNOUNCEMENT_THREAD


async def test_a_digest_in_a_forum_is_refused_since_a_forum_takes_no_plain_message(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    i = await fake.slash(fake.add_user("Dana"), "council-digest", channel_id=forum, cadence="daily")
    await fake.wait_for(lambda: i.followups)
    assert "forum takes only posts" in i.followups[-1]["content"]
    async with council.app.store.tx() as tx:
        assert await tx.schedules(kind="digest") == []


async def test_without_embed_links_in_the_channel_council_says_so_before_starting(council: Council) -> None:
    fake = council.fake
    fake.deny(fake.channel_id, r.EMBED_LINKS)  # the overwrite, not the role: what the interaction reports
    i = await fake.slash(fake.add_user("Dana"), "council", topic="Kanban or Scrum?")
    await fake.wait_for(lambda: i.followups)
    assert "Embed Links" in i.followups[-1]["content"] and not await council.app.service.guard.discussions()


async def test_a_restart_does_not_start_a_second_forum_post(council: Council) -> None:
    """A crash between starting the forum post and recording it: thread creation takes no nonce, so a new process
    finds the post it started (its name, its parent, its header) instead of starting another."""
    from adapters.discord.chat import DiscordChat

    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        header = next(post for post, _ in await tx.posts(d.id) if post.key == f"{d.id}:header")
    restarted = DiscordChat()
    restarted.attach(council.client, council.app.store)
    assert await restarted.find(d.model_copy(update={"thread_ref": ""}), header.key) == d.thread_ref
    assert [cid for cid, ch in fake.channels.items() if ch.get("parent_id") == forum] == [d.thread_ref]
