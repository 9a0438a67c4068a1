"""What Council needs in a Discord channel, rule by rule: the permissions it reads and posts with (named when
missing), the notes it adds, and the channel kinds a command's posts could never land in."""

from __future__ import annotations

import discord
import pytest

from adapters.discord import access


def perms(**off: bool) -> discord.Permissions:
    p = discord.Permissions.all()
    p.update(**off)
    return p


def test_with_every_permission_and_the_intent_there_is_nothing_to_say() -> None:
    assert access.hearing(perms(), message_content=True) == ""


def test_each_missing_capability_adds_its_own_note() -> None:
    assert access.hearing(perms(), message_content=False) == access.NO_CONTENT
    assert access.hearing(perms(attach_files=False), message_content=True) == access.NO_FILES
    assert access.hearing(perms(attach_files=False), message_content=False) == f"{access.NO_CONTENT}\n{access.NO_FILES}"


@pytest.mark.parametrize(("off", "missing"), [
    ({"view_channel": False}, "View Channel"),
    ({"read_message_history": False}, "Read Message History"),
    ({"view_channel": False, "read_message_history": False}, "View Channel and Read Message History"),
])
def test_what_council_cannot_read_is_named(off: dict[str, bool], missing: str) -> None:
    with pytest.raises(PermissionError) as refused:
        access.hearing(perms(**off), message_content=True)
    assert str(refused.value) == access.CANNOT_READ.format(missing=missing)


@pytest.mark.parametrize(("off", "forum", "missing"), [
    ({"send_messages": False}, False, "Send Messages"),
    ({"send_messages_in_threads": False, "embed_links": False}, False, "Send Messages in Threads, Embed Links"),
    ({"create_public_threads": False}, False, "Create Public Threads"),
    ({"embed_links": False}, True, "Embed Links"),
])
def test_what_council_cannot_post_with_is_named(off: dict[str, bool], forum: bool, missing: str) -> None:
    with pytest.raises(PermissionError) as refused:
        access.hearing(perms(**off), message_content=True, forum=forum)
    assert str(refused.value) == access.CANNOT_POST.format(missing=missing)


def test_a_forum_post_needs_no_create_public_threads() -> None:
    assert access.hearing(perms(create_public_threads=False), message_content=True, forum=True) == ""


@pytest.mark.parametrize(("kind", "command", "refusal"), [
    (discord.ChannelType.voice, "council", access.NO_THREADS),
    (discord.ChannelType.stage_voice, "council", access.NO_THREADS),
    (discord.ChannelType.forum, "council-digest", access.NO_FORUM_DIGEST),
])
def test_a_command_whose_posts_could_never_land_is_refused(kind: discord.ChannelType, command: str,
                                                          refusal: str) -> None:
    with pytest.raises(PermissionError, match=refusal[:40]):
        access.place(kind, command)


@pytest.mark.parametrize(("kind", "command"), [
    (discord.ChannelType.text, "council"), (discord.ChannelType.forum, "council"), (None, "council"),
    (discord.ChannelType.voice, "council-digest"), (discord.ChannelType.text, "council-digest"),
    (discord.ChannelType.forum, "council-schedule"),
])
def test_every_other_place_is_allowed(kind: discord.ChannelType | None, command: str) -> None:
    assert access.place(kind, command) is None


def test_a_channel_that_is_not_a_thread_starts_in_itself() -> None:
    channel = object()
    assert access.starts_in(channel) is channel
    access.tagging(channel)  # not a forum: no tag rule applies
