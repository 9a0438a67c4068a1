"""The people's budget at its edges, in the figures people were promised: 24,000 characters of the thread a prompt,
8,400 of them for one person, 200 kept for the note on what was left out, and no stub of under 400 characters.
Each case sits one character either side of its limit, so moving a limit by one fails it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation import context
from core.models import HumanMessage

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
BUDGET, SHARE, NOTE_ROOM, MIN_CUT = 24_000, 8_400, 200, 400


def msg(i: int, author: str, chars: int) -> HumanMessage:
    return HumanMessage(id=i + 1, discussion_id="d", author_id=author, author_name=author, text="x" * chars,
                        created_at=T0 + timedelta(seconds=i))


def overhead(author: str) -> int:
    """What quoting adds to a message of plain letters: its tag and its writer's name."""
    return len(context.human_block(msg(0, author, 10))) - 10


def thread(block_sizes: list[tuple[str, int]]) -> list[HumanMessage]:
    """Messages, oldest first, whose quoted blocks have exactly these sizes."""
    return [msg(i, author, size - overhead(author)) for i, (author, size) in enumerate(block_sizes)]


def in_full(heard: context.Heard, messages: list[HumanMessage]) -> list[bool]:
    shown = [text for _, text in heard.blocks]
    return [context.human_block(m) in shown for m in messages]


def test_the_thread_fills_the_budget_less_the_note_s_room_and_not_one_character_more() -> None:
    room = BUDGET - NOTE_ROOM
    # six writers (no one near their share), the newest last: blocks of 4,000 and one that ends exactly at the room
    sizes = [(f"U{i}", 4_000) for i in range(5)]
    exact = thread([("U9", room - 20_000), *sizes])
    assert in_full(context.heard(exact), exact) == [True] * 6
    over = thread([("U9", room - 20_000 + 1), *sizes])
    assert in_full(context.heard(over), over) == [False] + [True] * 5  # the oldest is cut or left out


def test_one_person_s_share_ends_at_its_figure() -> None:
    # Ana's two older messages and her newest, then someone else's newest: her three blocks sum to her share
    def ana(last: int) -> list[HumanMessage]:
        return thread([("ana", last), ("ana", 4_000), ("ana", 4_000), ("ben", 300)])

    fits = ana(SHARE - 8_000)
    assert in_full(context.heard(fits), fits) == [True] * 4
    assert context.heard(fits).over_share == frozenset()
    past = ana(SHARE - 8_000 + 1)
    heard = context.heard(past)
    assert in_full(heard, past) == [False, True, True, True]
    assert heard.over_share == frozenset({"ana"})


def test_a_message_is_cut_to_a_stub_of_at_least_its_minimum_or_left_out() -> None:
    long = msg(0, "U1", 4_000)
    assert context._cut(long, MIN_CUT) is not None
    assert len(context._cut(long, MIN_CUT) or "") <= MIN_CUT
    assert context._cut(long, MIN_CUT - 1) is None
