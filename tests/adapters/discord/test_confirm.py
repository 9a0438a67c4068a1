"""/council-stop asks first: a private question with Confirm and Cancel, and only who may stop is asked."""

from __future__ import annotations

from typing import Any

from tests.adapters.discord.conftest import Council, settled
from tests.adapters.discord.test_flow import start_and_wait
from tests.fakes import discord_payloads as p


def question_of(council: Council, followup: dict[str, Any], channel: str) -> dict[str, Any]:
    """The private follow-up as the message a click comes from (kept where Discord keeps it, for its asker)."""
    fake = council.fake
    msg = p.message(p.snowflake(), channel, fake.bot, followup, application_id=fake.app_id)
    fake.messages.setdefault(channel, []).append(msg)
    return msg


def labels(msg: dict[str, Any]) -> list[str]:
    return [b.get("label") for r in msg.get("components") or [] for b in r["components"]]


async def status(council: Council) -> str:
    return (await council.discussion()).status.value


async def test_stop_command_asks_privately_then_cancel_or_confirm(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    thread = await start_and_wait(council, dana, topic="Should we adopt trunk-based development?")
    d = await council.discussion()

    ask = await fake.slash(dana, "council-stop", id=d.id)
    await fake.wait_for(lambda: ask.followups)
    await council.settle()
    [question] = ask.followups
    assert question["flags"] & 64 and "Stop this discussion for good?" in question["content"]
    assert labels(question) == ["Yes, stop", "Cancel"]
    assert await status(council) == "waiting", "nothing happens before it is confirmed"

    msg = question_of(council, question, fake.channel_id)
    no = await fake.click(dana, msg, fake.find_button(msg, "Cancel"))
    await fake.wait_for(lambda: no.callbacks)
    assert no.callbacks[0]["type"] == 7 and "nothing was changed" in no.callbacks[0]["data"]["content"]
    assert no.callbacks[0]["data"]["components"] == []
    await council.settle()
    assert await status(council) == "waiting"

    ask = await fake.slash(dana, "council-stop", channel_id=thread)  # in the thread: no id needed
    await fake.wait_for(lambda: ask.followups)
    msg = question_of(council, ask.followups[0], thread)
    confirm = fake.find_button(msg, "Yes, stop")
    yes = await fake.click(dana, msg, confirm)
    await fake.wait_for(lambda: yes.callbacks)

    async def stopped() -> bool:
        return await status(council) == "stopped"

    await settled(council, stopped)
    # the question becomes the answer, its buttons gone
    await fake.wait_for(lambda: yes.edits)
    assert "Stopped" in yes.edits[-1]["content"] and yes.edits[-1].get("components") == []
    again = await fake.slash(dana, "council-stop", id=d.id)  # nothing left to stop: no question
    await fake.wait_for(lambda: again.followups)
    assert "already stopped" in again.followups[0]["content"] and labels(again.followups[0]) == []


async def test_stop_command_from_someone_who_may_not_is_refused_without_a_question(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    await start_and_wait(council, dana, topic="Should we adopt trunk-based development?")
    d = await council.discussion()
    ask = await fake.slash(lee, "council-stop", id=d.id)
    await fake.wait_for(lambda: ask.followups)
    [answer] = ask.followups
    assert "Only Dana or a workspace admin can stop" in answer["content"] and labels(answer) == []
    await council.settle()
    assert await status(council) == "waiting"
