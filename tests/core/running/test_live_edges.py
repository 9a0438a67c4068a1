"""Live text at its edges, on an injected clock: pieces that are all blank show nothing, however many; trailing
blank pieces after words do not hold the words back; an update due exactly at the interval goes at once; a
refused update is logged for the operator (with the chat's error) and the next words still go."""

from __future__ import annotations

import asyncio
import logging

import pytest

from core.running.live import LiveText


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_blank_pieces_show_nothing_however_many_there_are() -> None:
    shown: list[str] = []

    async def show(text: str) -> None:
        shown.append(text)

    live = LiveText(show, interval_s=1.0, monotonic=Clock())
    for parts in ([" "], [" ", "\n"], ["", " ", "\t", ""]):
        live.push(parts)
        await asyncio.sleep(0)
    await live.close()
    assert shown == []
    assert live.updates == 0


async def test_words_followed_by_a_blank_piece_still_show() -> None:
    shown: list[str] = []

    async def show(text: str) -> None:
        shown.append(text)

    live = LiveText(show, interval_s=1.0, monotonic=Clock())
    live.push(["Trunk", " "])
    await asyncio.sleep(0)
    await live.close()
    assert shown == ["Trunk "]


async def test_an_update_due_exactly_at_the_interval_goes_at_once() -> None:
    shown: list[str] = []
    clock = Clock()

    async def show(text: str) -> None:
        shown.append(text)

    live = LiveText(show, interval_s=1.0, monotonic=clock)
    parts = ["The case"]
    live.push(parts)
    await asyncio.sleep(0)
    assert shown == ["The case"]
    clock.now += 1.0  # exactly one interval since the last update: nothing to wait for
    parts.append(" for trunk")
    live.push(parts)
    await asyncio.sleep(0)  # the update's own step: it does not wait a turn of the loop first
    assert shown == ["The case", "The case for trunk"]
    await live.close()
    assert live.updates == 2


async def test_a_refused_update_is_logged_with_its_error_and_the_next_words_go(
        caplog: pytest.LogCaptureFixture) -> None:
    shown: list[str] = []
    clock = Clock()
    refusals = [RuntimeError("message_not_found")]

    async def show(text: str) -> None:
        if refusals:
            raise refusals.pop()
        shown.append(text)

    live = LiveText(show, interval_s=1.0, monotonic=clock)
    with caplog.at_level(logging.DEBUG, logger="core.running.live"):
        live.push(["The case"])
        await asyncio.sleep(0)
        clock.now += 1.0
        live.push(["The case for trunk"])
        await asyncio.sleep(0)
        await live.close()
    assert shown == ["The case for trunk"]
    assert live.updates == 1, "only the update the chat accepted counts"
    [refused] = caplog.records
    assert (refused.levelno, refused.getMessage()) == (logging.DEBUG, "live update refused")
    assert refused.exc_info is not None and str(refused.exc_info[1]) == "message_not_found"
