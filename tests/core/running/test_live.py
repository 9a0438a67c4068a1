"""LiveText: the newest words reach the chat at most once per interval, and nothing lands after close."""

from __future__ import annotations

import asyncio

from core.running.live import LiveText


async def test_updates_are_throttled_to_the_newest_text() -> None:
    shown: list[str] = []

    async def show(text: str) -> None:
        shown.append(text)

    live = LiveText(show, interval_s=0.05)
    live.push(["The"])
    await asyncio.sleep(0.01)
    for text in ("The case", "The case for", "The case for trunk"):
        live.push([text])
    assert shown == ["The"], "the first words show at once"
    await asyncio.sleep(0.08)
    assert shown == ["The", "The case for trunk"], "then only the newest text, one interval later"
    await live.close()
    assert live.updates == 2


async def test_close_drops_pending_text_and_waits_for_an_update_in_flight() -> None:
    shown: list[str] = []
    release = asyncio.Event()

    async def slow(text: str) -> None:
        await release.wait()
        shown.append(text)

    live = LiveText(slow, interval_s=10.0)
    live.push(["first"])
    await asyncio.sleep(0)
    live.push(["second"])  # would wait ten seconds: close must not
    closing = asyncio.create_task(live.close())
    await asyncio.sleep(0.01)
    assert not closing.done(), "close waits for the update already sent"
    release.set()
    await asyncio.wait_for(closing, 1)
    assert shown == ["first"]
    live.push(["third"])
    assert shown == ["first"]


async def test_a_refused_update_does_not_stop_the_turn() -> None:
    calls: list[str] = []

    async def refuse(text: str) -> None:
        calls.append(text)
        raise RuntimeError("rate limited")

    live = LiveText(refuse, interval_s=0.0)
    live.push(["words"])
    await asyncio.sleep(0.01)
    await live.close()
    assert calls == ["words"] and live.updates == 0


def test_a_channel_budget_is_shared_in_turn_and_first_words_always_go() -> None:
    from core.running.live import ChannelBudget

    now = [0.0]
    budget = ChannelBudget(gap_s=1.0, monotonic=lambda: now[0])
    assert budget.allow("C1", "a") and budget.allow("C1", "b"), "each turn's first words at once"
    shown = []
    for tick in range(1, 7):
        now[0] = float(tick)
        shown += [k for k in ("a", "b") if budget.allow("C1", k)]
    assert shown == ["a", "b", "a", "b", "a", "b"], "one edit a second, the turns alternating"
    assert budget.allow("C2", "c"), "another channel has its own budget"
    budget.forget("a")
    now[0] = 7.0
    assert budget.allow("C1", "b") and not budget.allow("C1", "b")
    budget.forget("b")
    now[0] = 7.2
    assert budget.allow("C1", "b"), "a forgotten turn asks afresh: its first words go at once"
