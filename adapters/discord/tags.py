"""A forum's tags as `/council-config tag:` offers and checks them: the tag each new post in the forum carries."""

from __future__ import annotations

import discord
from discord.app_commands import Choice

OFF = "off"
NOT_A_FORUM = "Tags belong to forum channels: run `/council-config tag:` in the forum whose posts should carry it."
UNKNOWN = "This forum has no tag “{value}”: pick one of the suggestions (or `off`)."
MODERATED = ("Only members with *Manage Threads* may apply the tag “{name}”, and I don't have it here: pick "
             "another tag, or give me Manage Threads in this forum.")


def may_apply(forum: discord.ForumChannel) -> list[discord.ForumTag]:
    """The forum's tags this bot may put on a post, in the forum's order (a moderated one needs Manage Threads)."""
    me = forum.guild.me
    manage = bool(me and forum.permissions_for(me).manage_threads)
    return [tag for tag in forum.available_tags if manage or not tag.moderated]


def choices(channel: object, typed: str) -> list[Choice[str]]:
    """Autocomplete: the forum's tags the bot may apply whose names contain what was typed, then `off`."""
    if not isinstance(channel, discord.ForumChannel):
        return []
    typed = typed.strip().lower()
    found = [Choice(name=tag.name, value=str(tag.id)) for tag in may_apply(channel) if typed in tag.name.lower()]
    return [*found[:24], Choice(name="off (the first tag I may apply)", value=OFF)]


def pick(channel: object, value: str) -> discord.ForumTag | None:
    """The tag `value` names (its id, as autocomplete sends it, or its name as typed); None for `off`. Raises
    ValueError, saying why, for anything a post could not carry."""
    if not isinstance(channel, discord.ForumChannel):
        raise ValueError(NOT_A_FORUM)
    value = value.strip()
    if value.lower() == OFF:
        return None
    tag = next((t for t in channel.available_tags if str(t.id) == value or t.name.lower() == value.lower()), None)
    if tag is None:
        raise ValueError(UNKNOWN.format(value=value))
    if tag not in may_apply(channel):
        raise ValueError(MODERATED.format(name=tag.name))
    return tag
