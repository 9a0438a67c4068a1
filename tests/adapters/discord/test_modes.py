"""Degraded and scaled modes: no Manage Webhooks, no Message Content intent, sharding."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path

from adapters.discord.chat import DiscordChat
from adapters.discord.client import CouncilClient, DiscordConfig, serve
from bot.wiring import build_app
from tests.adapters.discord.conftest import TOKEN, Council, RecordingLLM, running, settings_for, settled
from tests.fakes import discord_payloads as p
from tests.fakes import discord_rules as r
from tests.fakes.discord_api import FakeDiscord


async def test_without_manage_webhooks_personas_are_embeds(tmp_path: Path) -> None:
    async with FakeDiscord(token=TOKEN, manage_webhooks=False) as fake, running(fake, tmp_path) as council:
        dana = fake.add_user("Dana")
        i = await fake.slash(dana, "council", topic="Kanban or Scrum?", rounds=1)
        await fake.wait_for(lambda: i.followups)
        await council.settle()
        d = await council.discussion()
        messages = fake.thread_messages(d.thread_ref)
        assert not fake.webhooks and not any(m.get("webhook_id") for m in messages)
        authors = {e["author"]["name"].split(" · ")[0] for m in messages for e in m["embeds"] if "author" in e}
        assert {"Moderator", "Historian", "Contrarian", "Cross-Domain Thinker"} <= authors
        assert all(e["author"]["icon_url"].startswith("https://") for m in messages for e in m["embeds"]
                   if "author" in e)
        assert d.status.value == "done"


async def test_without_message_content_a_reply_button_and_mentions(tmp_path: Path) -> None:
    async with FakeDiscord(token=TOKEN, message_content=False) as fake:
        chat = DiscordChat()
        llm = RecordingLLM()
        app = await build_app(settings_for(fake, tmp_path), {"discord": chat}, llm=llm, owner="t")
        config = DiscordConfig(token=TOKEN, api_url=fake.api_url, sweep_interval_s=3600)
        task = asyncio.create_task(serve(config, app.service, app.driver, app.store, chat,
                                         guild_ready_timeout=0.05))
        try:
            await fake.wait_for(lambda: len(fake.identifies) == 2 and fake.sockets)
            assert not int(fake.identifies[1]["intents"]) & p.MESSAGE_CONTENT_INTENT, "4014: retry without it"
            assert chat.client is not None
            await asyncio.wait_for(chat.client.wait_until_ready(), 10)
            assert isinstance(chat.client, CouncilClient)
            council = Council(fake, app, chat.client, chat, llm)
            dana = fake.add_user("Dana")
            i = await fake.slash(dana, "council", topic="Kanban or Scrum?")
            await fake.wait_for(lambda: i.followups)
            assert "Reply to the council" in i.followups[-1]["content"], "the starter is told how to be heard"
            await app.driver.idle()
            header = fake.messages[fake.channel_id][0]
            reply = fake.find_button(header, "Reply to the council")

            opened = await fake.click(dana, header, reply)
            await fake.wait_for(lambda: opened.callbacks)
            modal = opened.callbacks[0]
            assert modal["type"] == 9 and modal["data"]["custom_id"] == reply
            submitted = await fake.submit(dana, header["id"], reply, {"text": "Kanban, for the support team."})
            await fake.wait_for(lambda: submitted.followups)
            assert submitted.callbacks[0]["type"] == 5 and "Noted" in submitted.followups[0]["content"]

            await fake.say(dana, header["id"], "this one is invisible without the intent")
            await fake.say(dana, header["id"], f"<@{fake.app_id}> Scrum for the platform team.", mention_bot=True)
            d = (await app.service.guard.discussions())[0]

            async def humans() -> list[str]:
                async with app.store.tx() as tx:
                    return [h.text for h in await tx.human_messages(d.id)]

            await settled(council, lambda: _two(humans))
            assert await humans() == ["Kanban, for the support team.", "Scrum for the platform team."]
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await app.close()


async def _two(humans: Callable[[], Awaitable[list[str]]]) -> bool:
    return len(await humans()) >= 2


async def test_past_the_guild_threshold_the_client_is_sharded(fake: FakeDiscord, tmp_path: Path) -> None:
    async with running(fake, tmp_path, sharded=True) as council:
        assert type(council.client).__name__ == "ShardedCouncilClient"
        assert fake.identifies[-1]["shard"] == [0, 1]
        i = await fake.slash(fake.add_user("Dana"), "council-list")
        await fake.wait_for(lambda: i.followups)
        assert "No discussions yet" in i.followups[0]["content"]


async def test_commands_answer_with_ephemeral_errors(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council-stop")
    await fake.wait_for(lambda: i.followups)
    assert i.followups[0]["flags"] & 64 and "inside a council's thread" in i.followups[0]["content"]
    i = await fake.slash(dana, "council-pause", id="nope")
    await fake.wait_for(lambda: i.followups)
    assert "can't find a discussion" in i.followups[0]["content"]


async def test_the_roster_can_be_confirmed_and_modified(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council", topic="Kanban or Scrum?", confirm=True)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "awaiting_confirmation"
    confirm = next(m for m in fake.thread_messages(d.thread_ref) if m["components"])
    modify = fake.find_button(confirm, "Modify roster")
    opened = await fake.click(dana, confirm, modify)
    await fake.wait_for(lambda: opened.callbacks)
    assert opened.callbacks[0]["type"] == 9
    form = opened.callbacks[0]["data"]["custom_id"]
    lee = fake.add_user("Lee")  # not the starter: refused before the roster is read
    refused = await fake.submit(lee, d.thread_ref, form, {"persona": "Contrarian", "name": "<@123>", "title": "",
                                                          "remove": ""}, confirm)
    await fake.wait_for(lambda: refused.followups)
    assert refused.followups[0]["content"] == "Only Dana or a workspace admin can edit the roster of this discussion."
    sent = await fake.submit(dana, d.thread_ref, form, {"persona": "Contrarian", "name": "Devil's Advocate",
                                                        "title": "", "remove": ""}, confirm)
    await fake.wait_for(lambda: sent.followups)
    assert sent.followups[0]["content"] == "Roster updated."
    start = await fake.click(dana, confirm, fake.find_button(confirm, "Start"))
    await fake.wait_for(lambda: any(m["author"]["username"] == "Devil's Advocate"
                                    for m in fake.thread_messages(d.thread_ref)))
    await council.settle()
    assert start.callbacks[0]["type"] == 6 and (await council.discussion()).status.value == "waiting"


async def test_missing_channel_permissions_are_reported_before_starting(council: Council) -> None:
    fake = council.fake
    fake.app_permissions = str(r.VIEW_CHANNEL | r.READ_MESSAGE_HISTORY | r.SEND_MESSAGES)  # it can read, not thread
    i = await fake.slash(fake.add_user("Dana"), "council", topic="Anything")
    await fake.wait_for(lambda: i.followups)
    assert "Create Public Threads" in i.followups[0]["content"] and not await council.app.service.guard.discussions()


async def test_replies_in_a_thread_the_cache_never_saw(tmp_path: Path) -> None:
    async with FakeDiscord(token=TOKEN, thread_events=False) as fake, running(fake, tmp_path) as council:
        dana = fake.add_user("Dana")
        i = await fake.slash(dana, "council", topic="Kanban or Scrum?")
        await fake.wait_for(lambda: i.followups)
        await council.settle()
        d = await council.discussion()
        assert council.client.get_channel(int(d.thread_ref)) is None
        await fake.say(dana, d.thread_ref, "Kanban for support.")

        async def heard() -> bool:
            async with council.app.store.tx() as tx:
                return bool(await tx.human_messages(d.id))

        await settled(council, heard)
        assert fake.calls_to("GET", rf"^/channels/{d.thread_ref}$"), "the parent is asked once"


async def test_the_digest_command_schedules_this_channel(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council-digest", cadence="cron", cron="0 9 * * 1", tz="Europe/Berlin")
    await fake.wait_for(lambda: i.followups)
    async with council.app.store.tx() as tx:
        [schedule] = await tx.schedules(kind="digest")
    assert (schedule.platform, schedule.workspace, schedule.target) == ("discord", fake.guild_id, fake.channel_id)
    assert i.followups[0]["flags"] & 64 and "wrong" not in i.followups[0]["content"]
