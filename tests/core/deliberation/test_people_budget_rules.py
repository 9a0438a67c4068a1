"""The rules inside the people's budget, one case each: what a cut keeps, which message is read first, whose share
ran out, and the one note on what was left out, word for word. Budgets here are small, passed as arguments, so each
case sits exactly on its rule's edge."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation import context
from core.models import HumanMessage

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
NOTE_ROOM = 200


def msg(i: int, author: str, chars: int, *, owed: bool = False, answered: bool = False, at: int | None = None,
        name: str | None = None, letter: str = "x") -> HumanMessage:
    when = T0 + timedelta(seconds=i if at is None else at)
    return HumanMessage(id=i, discussion_id="d", author_id=author, author_name=name or author, text=letter * chars,
                        needs_answer=owed, answered=answered, created_at=when)


def block_of(author: str, size: int, i: int, **kw: object) -> HumanMessage:
    """A message whose quoted block is exactly `size` characters."""
    extra = len(context.human_block(msg(0, author, 10))) - 10
    return msg(i, author, size - extra, **kw)  # type: ignore[arg-type]


def texts(heard: context.Heard) -> list[str]:
    return [text for _, text in heard.blocks]


def test_nobody_wrote_nothing_is_heard_and_nobody_is_over() -> None:
    assert context.heard([]) == context.Heard([], frozenset())


def test_a_cut_keeps_the_message_s_tag_and_writer_and_fills_its_room_to_the_character() -> None:
    long = msg(1, "U1", 4_000, name="Ana")
    head = context.human_block(long).split("\n")[0]
    for room in (400, 1_000, 2_345):
        cut = context._cut(long, room)
        assert cut is not None and cut.split("\n")[0] == head and len(cut) == room
        assert "cut here: the rest of this message, 4,000 characters in all" in cut


def test_the_shortest_stub_keeps_two_hundred_characters_of_the_message() -> None:
    # a display name that escapes long (`&` is five characters quoted) takes most of the room, so the stub's own
    # floor (half the minimum cut) decides
    long = msg(1, "U1", 4_000, name="&" * 150)
    stubs = [c for room in range(400, 1_500) if (c := context._cut(long, room)) is not None]
    shortest = min(stubs, key=len)
    assert "x" * 199 + "…" in shortest and "x" * 200 not in shortest


def test_a_newest_message_past_the_room_is_cut_to_fit_and_one_that_fits_exactly_is_whole() -> None:
    exact = block_of("U1", 800, 1)
    assert texts(context.heard([exact], budget=1_000)) == [context.human_block(exact)]
    over = block_of("U1", 801, 1)
    [cut] = texts(context.heard([over], budget=1_000))
    assert len(cut) == 800 and "cut here" in cut
    assert context.heard([over], budget=590).blocks == []  # no room for even a stub: nothing, not an empty block


def test_a_message_owed_an_answer_is_read_before_newer_chatter_and_an_answered_one_is_not() -> None:
    owed, chatter, newest = block_of("A", 500, 1, owed=True), block_of("B", 500, 2), block_of("C", 300, 3)
    budget = NOTE_ROOM + 300 + 500 + 100  # room for the newest and one of the other two
    shown = texts(context.heard([owed, chatter, newest], budget=budget))
    assert context.human_block(owed) in shown and context.human_block(chatter) not in shown
    done = block_of("A", 500, 1, owed=True, answered=True)
    shown = texts(context.heard([done, chatter, newest], budget=budget))
    assert context.human_block(chatter) in shown and context.human_block(done) not in shown


def test_of_two_messages_written_in_the_same_second_the_later_written_is_read_first_and_shown_second() -> None:
    first, second = block_of("A", 500, 1, at=5, letter="z"), block_of("B", 500, 2, at=5, letter="a")
    newest = block_of("C", 300, 3, at=9)
    budget = NOTE_ROOM + 300 + 500 + 100
    shown = texts(context.heard([first, second, newest], budget=budget))
    assert context.human_block(second) in shown and context.human_block(first) not in shown
    roomy = texts(context.heard([second, newest, first], budget=5_000))
    assert roomy == [context.human_block(m) for m in (first, second, newest)]


def test_a_first_message_as_long_as_the_share_is_whole() -> None:
    whole, newest = block_of("A", 1_000, 1), block_of("B", 300, 2)
    heard = context.heard([whole, newest], budget=5_000, share=1_000)
    assert texts(heard) == [context.human_block(whole), context.human_block(newest)]
    assert heard.over_share == frozenset()


def test_a_message_past_its_writer_s_share_is_cut_and_its_writer_named() -> None:
    past, newest = block_of("A", 1_001, 1), block_of("B", 300, 2)
    heard = context.heard([past, newest], budget=5_000, share=1_000)
    assert len(texts(heard)[0]) == 1_000 and "cut here" in texts(heard)[0]
    assert heard.over_share == frozenset({"A"})


def test_a_writer_cut_by_the_budget_where_share_and_budget_end_together_is_not_over_their_share() -> None:
    newest = block_of("B", 300, 2)
    budget = NOTE_ROOM + 300 + 700  # 700 left, and A's share is 700: the budget ends there too
    heard = context.heard([block_of("A", 900, 1), newest], budget=budget, share=700)
    assert len(texts(heard)[0]) == 700 and heard.over_share == frozenset()


def test_the_note_counts_what_was_left_out_in_words_that_agree_with_the_count() -> None:
    newest = block_of("C", 500, 9)
    one = context.heard([block_of("A", 500, 1), newest], budget=900)  # 200 left: no room for a stub
    assert texts(one)[0] == ("(1 earlier message by 1 person in the thread is left out of this prompt: it reads a "
                             "bounded part of the thread, the newest in full.)")
    two = context.heard([block_of("A", 500, 1), block_of("A", 500, 2), newest], budget=900)
    assert texts(two)[0] == ("(2 earlier messages by 1 person in the thread are left out of this prompt: it reads a "
                             "bounded part of the thread, the newest in full.)")
    three = context.heard([block_of("A", 500, 1), block_of("B", 500, 2), block_of("A", 500, 3), newest], budget=900)
    assert texts(three)[0] == ("(3 earlier messages by 2 people in the thread are left out of this prompt: it reads "
                               "a bounded part of the thread, the newest in full.)")
