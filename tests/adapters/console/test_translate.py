"""What is typed at the terminal, read as a choice, a command, an answer of the terminal's own, or a message."""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.console.live import unmarked
from adapters.console.translate import HELP, Answer, choices, parse_control, pick
from core.control import commands as c
from core.models import Discussion
from core.showing import posts

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
D = Discussion(id="d", topic="Flags?", created_at=NOW, updated_at=NOW)


def test_a_number_picks_the_action_shown_with_it_and_a_number_not_shown_is_refused() -> None:
    menu = choices(posts.next_action_post(D, []).actions)
    assert [a.id for a in menu] == ["next:deep_dive", "next:different_topic", "next:another_round",
                                    "next:synthesize", "next:pause"], "scheduling buttons are not offered here"
    assert pick("3", menu) == menu[2] and pick(" 1 ", menu) == menu[0]
    for wrong in ("0", "6", "7", "12"):
        refused = pick(wrong, menu)
        assert isinstance(refused, Answer) and refused.mistake and "from 1 to 5" in refused.text, wrong
    assert pick("go on", menu) is None, "words are not a choice: they are read as a message"
    roster = choices(posts.roster_post(D, []).actions)
    assert [a.id for a in roster] == ["roster:start", "roster:modify"]
    assert pick("2", roster) == roster[1]
    assert isinstance(pick("3", roster), Answer)


def test_help_lists_the_commands_and_an_unknown_command_is_answered() -> None:
    said = parse_control("/help", "d", "Me")
    assert isinstance(said, Answer) and not said.mistake and said.text == HELP
    for command in ("/vote", "/pause", "/resume", "/stop", "/retry", "/skip", "/synthesize", "Ctrl-C"):
        assert command in HELP, command
    unknown = parse_control("/frobnicate now", "d", "Me")
    assert isinstance(unknown, Answer) and unknown.mistake and "/frobnicate" in unknown.text
    assert isinstance(parse_control("/vote one", "d", "Me"), Answer), "a malformed vote is explained"
    assert parse_control("/vote 2 1", "d", "Me") == c.CastBallot(poll_id=2, choice=0, user_id="console-user",
                                                                 user_name="Me", platform="console",
                                                                 in_channel="console")
    assert isinstance(parse_control("/synthesize", "d", "Me"), c.Synthesize)
    assert isinstance(parse_control("/pause", "d", "Me"), c.Pause)


def test_a_bare_number_with_no_prompt_open_is_not_a_message_but_words_are() -> None:
    assert isinstance(parse_control("2", "d", "Me"), Answer)
    said = parse_control("I disagree with 2", "d", "Me")
    assert isinstance(said, c.PostHumanMessage) and said.text == "I disagree with 2"
    assert parse_control("   ", "d", "Me") is None


def test_live_lines_show_words_not_markdown() -> None:
    assert unmarked("**Round 1**: adopt [core]?\n- a _small_ `trial`\n\n## Next") == \
        "Round 1: adopt [core]? a small trial Next"
