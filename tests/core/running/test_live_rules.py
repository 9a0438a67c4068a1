"""Live text, rule by rule, on an injected clock: newer words wait out the interval and close drops them, blank
words are not shown; a channel's edits: a turn's first words go at once, later ones one edit per gap per channel,
the turn shown longest ago first while the other still asks, a landed turn gives way; by default one update a
second; an update cancelled beneath the live text does not make close raise."""

from __future__ import annotations

import asyncio

from core.running.live import ChannelBudget, LiveText
from tests.fakes.clock import settle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_first_words_go_at_once_and_later_ones_once_a_gap_per_channel() -> None:
    clock = Clock()
    budget = ChannelBudget(gap_s=1.0, monotonic=clock)
    assert budget.allow("C1", "a") and budget.allow("C1", "b")  # each turn's first words, at the same instant
    assert budget.allow("C2", "c")  # another channel has its own edits
    clock.now += 0.99
    assert not budget.allow("C1", "a")
    clock.now += 0.01
    assert budget.allow("C1", "a")  # one gap after the channel's last edit
    assert not budget.allow("C1", "a")


def test_the_turn_shown_longest_ago_goes_first_while_the_other_still_asks() -> None:
    clock = Clock()
    budget = ChannelBudget(gap_s=1.0, monotonic=clock)
    budget.allow("C1", "a")
    clock.now += 0.5
    budget.allow("C1", "b")  # b's first words: shown after a's
    clock.now += 0.9
    assert not budget.allow("C1", "a")  # within the gap: refused, but a is still asking
    clock.now += 0.2
    assert not budget.allow("C1", "b")  # a was shown longer ago and asked 0.2 s ago: a goes first
    assert budget.allow("C1", "a")
    clock.now += 1.0
    assert not budget.allow("C1", "a")  # now b was shown longer ago, and b asked a gap ago
    assert budget.allow("C1", "b")
    clock.now += 3.1
    assert budget.allow("C1", "b")  # a stopped asking over two gaps ago: it holds nobody up


def test_a_landed_turn_gives_way_and_is_forgotten() -> None:
    clock = Clock()
    budget = ChannelBudget(gap_s=1.0, monotonic=clock)
    budget.allow("C1", "a")
    clock.now += 0.5
    budget.allow("C1", "b")
    clock.now += 0.9
    assert not budget.allow("C1", "a")  # a still asks, and was shown first
    assert budget.shown("a") and budget.shown("b") and not budget.shown("c")
    budget.forget("a")
    clock.now += 0.2
    assert budget.allow("C1", "b")  # a's post landed: b no longer waits for it
    assert not budget.shown("a")
    budget.forget("a")  # forgetting twice, or a turn never seen, changes nothing
    budget.forget("never")
    budget.forget("b")
    clock.now += 0.1
    assert budget.allow("C1", "b")  # nothing left of b: as new, its words go at once


async def test_newer_words_within_the_interval_wait_and_close_drops_them() -> None:
    clock, shown = Clock(), []

    async def show(text: str) -> None:
        shown.append(text)

    live = LiveText(show, interval_s=5.0, monotonic=clock)
    live.push(["The"])
    await settle()
    live.push(["The case"])
    await settle()  # the clock stands still: the interval since "The" has not passed
    assert shown == ["The"]
    await live.close()
    live.push(["The case for"])  # after close: nothing more lands
    await settle()
    assert shown == ["The"] and live.updates == 1


async def test_blank_words_are_not_shown() -> None:
    shown: list[str] = []

    async def show(text: str) -> None:
        shown.append(text)

    live = LiveText(show, interval_s=0.01)
    live.push(["  \n "])
    live.push([])  # no piece yet
    await settle()
    assert shown == []
    await live.close()


def test_a_turn_competes_for_two_gaps_after_it_last_asked() -> None:
    clock = Clock()
    budget = ChannelBudget(gap_s=2.0, monotonic=clock)
    budget.allow("C1", "a")
    clock.now += 1.0
    budget.allow("C1", "b")
    clock.now += 1.0
    assert not budget.allow("C1", "a")  # within the gap; a last asked now
    clock.now += 1.5
    assert not budget.allow("C1", "b")  # a asked 1.5 s ago, under two gaps, and was shown first
    clock.now += 2.5
    assert budget.allow("C1", "b")  # a asked two gaps ago: it no longer competes


def test_a_landed_turn_leaves_the_others_in_the_channel_as_they_were() -> None:
    clock = Clock()
    budget = ChannelBudget(gap_s=1.0, monotonic=clock)
    budget.allow("C1", "a")
    budget.allow("C1", "b")
    budget.forget("a")
    clock.now += 0.5
    assert not budget.allow("C1", "b")  # b's later words still wait out the channel's gap


def test_a_channel_has_one_live_edit_a_second_by_default() -> None:
    clock = Clock()
    budget = ChannelBudget(monotonic=clock)
    assert budget.allow("C1", "a")
    clock.now += 0.99
    assert not budget.allow("C1", "a")
    clock.now += 0.01
    assert budget.allow("C1", "a")  # a second after the channel's last edit


async def test_live_text_waits_its_one_second_interval_by_default() -> None:
    clock = Clock()
    soon: list[str] = []
    later: list[str] = []

    async def show_soon(text: str) -> None:
        soon.append(text)

    async def show_later(text: str) -> None:
        later.append(text)

    on_time = LiveText(show_soon, monotonic=clock)
    early = LiveText(show_later, monotonic=clock)
    on_time.push(["The"])
    early.push(["The"])
    await settle()
    clock.now += 0.5
    early.push(["The case"])  # half a second after "The": it waits out the rest of the second
    await settle()
    clock.now += 0.5
    on_time.push(["The case"])  # a second after "The": it goes at once
    await settle()
    assert soon == ["The", "The case"]
    assert later == ["The"]
    await on_time.close()
    await early.close()
    assert later == ["The"]


async def test_an_update_cancelled_beneath_the_live_text_does_not_cost_the_turn() -> None:
    # The turn's completion is returned after close (in a finally): were close to raise the update's
    # cancellation, the finished words would be lost with it.
    async def cancelled(text: str) -> None:
        raise asyncio.CancelledError

    live = LiveText(cancelled, interval_s=0.0)
    live.push(["words"])
    await settle()
    await live.close()
    assert live.updates == 0


class Shown(list[str]):
    """What the chat was shown, update by update."""

    async def __call__(self, text: str) -> None:
        self.append(text)


async def test_the_pieces_written_since_a_push_show_joined_at_the_next_update() -> None:
    clock, shown = Clock(), Shown()
    live, parts = LiveText(shown, interval_s=1.0, monotonic=clock), ["The"]
    live.push(parts)
    await settle()
    for piece in (" case", " for", "  "):  # the writer appends to the one list, pushing it each time
        parts.append(piece)
        live.push(parts)
    clock.now += 1.0
    await settle()
    assert shown == ["The", "The case for  "]
    await live.close()


async def test_a_new_attempt_shows_its_own_words_even_as_many_pieces_as_the_last() -> None:
    shown = Shown()
    live = LiveText(shown, interval_s=0.0)
    live.push(["Cut short"])
    await settle()
    live.push(["Again, whole"])  # the turn asked again: a new list of pieces, of the same length
    await settle()
    live.push(["Words", "  "])  # a blank piece last, after words: the words still show
    await settle()
    assert shown == ["Cut short", "Again, whole", "Words  "]
    await live.close()
