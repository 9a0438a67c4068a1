"""LiveText: the newest words reach the chat at most once per interval, and nothing lands after close (on virtual
seconds: an interval passes only when the test moves the clock)."""

from __future__ import annotations

import asyncio

from core.running.live import LiveText
from tests.fakes.clock import Naps, settle


async def test_updates_are_throttled_to_the_newest_text() -> None:
    shown: list[str] = []

    async def show(text: str) -> None:
        shown.append(text)

    naps = Naps()
    live = LiveText(show, interval_s=0.05, monotonic=naps, sleep=naps.sleep)
    live.push(["The"])
    await settle()
    for text in ("The case", "The case for", "The case for trunk"):
        live.push([text])
    await settle()
    assert shown == ["The"], "the first words show at once"
    assert naps.napping == 1, "the newer words wait out the interval"
    await naps.advance(0.04)
    assert shown == ["The"], "not before the interval has passed"
    await naps.advance(0.01)
    assert shown == ["The", "The case for trunk"], "then only the newest text, one interval later"
    await live.close()
    assert live.updates == 2


async def test_close_drops_pending_text_and_waits_for_an_update_in_flight() -> None:
    shown: list[str] = []
    release = asyncio.Event()

    async def slow(text: str) -> None:
        await release.wait()
        shown.append(text)

    naps = Naps()
    live = LiveText(slow, interval_s=10.0, monotonic=naps, sleep=naps.sleep)
    live.push(["first"])
    await settle()
    live.push(["second"])  # would wait ten seconds: close must not
    closing = asyncio.create_task(live.close())
    await settle()
    assert not closing.done(), "close waits for the update already sent"
    release.set()
    await settle()
    assert closing.done() and naps.napping == 0, "and ends without waiting out the interval"
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
    await settle()
    await live.close()
    assert calls == ["words"] and live.updates == 0
