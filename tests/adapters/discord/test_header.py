"""Discord's header message (the thread's starter) shows the discussion's state and only the controls that fit."""

from __future__ import annotations

from typing import Any

from tests.adapters.discord.conftest import Council, confirm_step, settled
from tests.adapters.discord.test_flow import start_and_wait


def labels(msg: dict[str, Any]) -> set[str]:
    return {b.get("label") for r in msg["components"] for b in r["components"] if b.get("custom_id")}


async def paused(council: Council) -> bool:
    return (await council.discussion()).status.value == "paused"


def header(council: Council) -> dict[str, Any]:
    return council.fake.messages[council.fake.channel_id][0]


async def test_header_shows_state_and_fitting_buttons_through_pause_and_stop(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    thread = await start_and_wait(council, dana, topic="Should we adopt trunk-based development?")
    d = await council.discussion()
    assert d.status.value == "waiting"
    top = header(council)
    assert top["id"] == d.thread_ref
    text = top["embeds"][0]["description"]
    assert "Waiting for the next step" in text and "Round 1 ·" in text and f"${d.cost_usd:.2f} spent" in text
    assert labels(top) == {"Stop"}, "while the round's choice waits, it alone offers Pause and Synthesize"
    [choice] = [m for m in fake.thread_messages(thread) if "Synthesize" in labels(m)]
    assert "Pause" in labels(choice)

    await fake.click(dana, choice, fake.find_button(choice, "Pause"))
    await settled(council, lambda: paused(council))
    top = header(council)
    assert "Paused · Round 1" in top["embeds"][0]["description"]
    assert labels(top) == {"Resume", "Synthesize", "Stop"}

    await confirm_step(fake, dana, top, "Stop", thread)

    async def stopped() -> bool:
        return "Stopped in round 1" in header(council)["embeds"][0]["description"]

    await settled(council, stopped)
    assert (await council.discussion()).status.value == "stopped"
    assert labels(header(council)) == set(), "no controls once stopped"
