"""What people read when Council cannot work in a Discord channel, word for word as they read it (not read back from
the module; a forum's tag refusal is in test_forums.py), and the defaults a check takes: a start is a council in a
channel of its own unless it says otherwise."""

from __future__ import annotations

import discord
import pytest

from adapters.discord import access


def perms(**off: bool) -> discord.Permissions:
    p = discord.Permissions.all()
    p.update(**off)
    return p


def refusal(**off: bool) -> str:
    with pytest.raises(PermissionError) as refused:
        access.hearing(perms(**off), message_content=True)
    return str(refused.value)


def test_a_channel_council_cannot_read_names_what_to_give_and_where() -> None:
    assert refusal(view_channel=False, read_message_history=False) == (
        "I can't read this channel, so I would never hear your replies. Give me View Channel and Read Message "
        "History here (channel settings → Permissions → Council), then try again.")


def test_a_channel_council_cannot_post_in_names_the_permissions() -> None:
    assert refusal(embed_links=False, send_messages=False) == (
        "I need these permissions in this channel first: Send Messages, Embed Links.")


def test_a_start_outside_a_forum_needs_to_create_its_thread() -> None:
    assert refusal(create_public_threads=False) == (
        "I need these permissions in this channel first: Create Public Threads.")


def test_the_notes_say_how_to_be_heard_and_that_charts_are_left_out() -> None:
    assert access.hearing(perms(attach_files=False), message_content=False) == (
        "Note: I can't read ordinary messages (the bot's *Message Content* intent is off), so reply with the "
        "*Reply to the council* button under the thread's first post, or mention me (@Council) in your reply.\n"
        "Note: I may not attach files here (*Attach Files*), so charts are left out of the posts; the text says so "
        "where one was meant to be.")


@pytest.mark.parametrize("kind", [discord.ChannelType.voice, discord.ChannelType.stage_voice])
def test_a_council_started_in_a_voice_chat_is_refused_saying_where_to_start_it(kind: discord.ChannelType) -> None:
    with pytest.raises(PermissionError) as refused:
        access.place(kind)
    assert str(refused.value) == ("A council runs in a thread, and a voice or stage channel's chat has none: start "
                                  "it in a text or forum channel.")
    access.place(discord.ChannelType.text)


def test_a_digest_set_in_a_forum_is_refused_saying_where_to_set_it() -> None:
    with pytest.raises(PermissionError) as refused:
        access.place(discord.ChannelType.forum, "council-digest")
    assert str(refused.value) == ("A digest is one message in the channel, and a forum takes only posts: set it in "
                                  "a text channel.")
    access.place(discord.ChannelType.forum)
