"""Council starts a discussion only where it can hear the thread, and says plainly when it cannot."""

from __future__ import annotations

import discord

from tests.adapters.discord.conftest import Council
from tests.fakes import discord_payloads as p


async def test_without_read_permissions_nothing_starts_and_the_person_is_told_why(council: Council) -> None:
    fake = council.fake
    perms = discord.Permissions(p.INVITE_PERMISSIONS)  # not Administrator, which overrides everything
    perms.view_channel = perms.read_message_history = False
    fake.app_permissions = str(perms.value)
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council", topic="Kanban or Scrum?")
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    text = i.followups[-1]["content"]
    assert "can't read this channel" in text and "View Channel and Read Message History" in text
    assert await council.app.service.guard.discussions() == [] and not fake.messages.get(fake.channel_id)

    perms.view_channel = perms.read_message_history = True
    fake.app_permissions = str(perms.value)
    i = await fake.slash(dana, "council", topic="Kanban or Scrum?")
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    assert len(await council.app.service.guard.discussions()) == 1 and "Note:" not in i.followups[-1]["content"]
