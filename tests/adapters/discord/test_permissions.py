"""Discord refusals through the real discord.py client: Stop and Synthesize buttons ask first (a private confirm
step); another member's confirmed Stop is refused privately and nothing changes; Manage Server may."""

from __future__ import annotations

from tests.adapters.discord.conftest import Council, confirm_step
from tests.adapters.discord.test_flow import start_and_wait, with_button


async def test_stop_asks_first_and_another_member_is_refused_privately(council: Council) -> None:
    fake = council.fake
    dana, lee, ines = fake.add_user("Dana"), fake.add_user("Lee"), fake.add_user("Ines", admin=True)
    thread = await start_and_wait(council, dana, topic="Should we move to trunk-based development?")
    header = fake.messages[fake.channel_id][0]
    before = await council.discussion()
    posts_before = len(fake.thread_messages(thread))

    ask, sure = await confirm_step(fake, lee, header, "Stop", thread)
    await fake.wait_for(lambda: sure.followups)
    assert "for good" in ask.callbacks[0]["data"]["content"]
    assert sure.followups[0]["content"] == "Only Dana or a workspace admin can stop this discussion."
    assert sure.followups[0]["flags"] & 64
    choice = with_button(fake, thread, "Synthesize")
    _, synth = await confirm_step(fake, lee, choice, "Synthesize", thread)
    await fake.wait_for(lambda: synth.followups)
    assert "Only Dana or a workspace admin can ask for the final synthesis" in synth.followups[0]["content"]
    await council.settle()
    after = await council.discussion()
    assert (after.status, after.round, after.pending) == (before.status, before.round, before.pending)
    assert len(fake.thread_messages(thread)) == posts_before

    await confirm_step(fake, ines, header, "Stop", thread)  # Manage Server: an admin of this guild
    await council.settle()
    assert (await council.discussion()).status.value == "stopped"
