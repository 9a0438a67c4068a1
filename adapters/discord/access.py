"""Can Council hear and post a discussion in this channel? Read permissions and the Message Content intent."""

from __future__ import annotations

import discord

CANNOT_READ = ("I can't read this channel, so I would never hear your replies. Give me {missing} here "
               "(channel settings → Permissions → Council), then try again.")
CANNOT_POST = "I need these permissions in this channel first: {missing}."
NO_CONTENT = ("Note: I can't read ordinary messages (the bot's *Message Content* intent is off), so reply with the "
              "*Reply to the council* button under the thread's first post, or mention me (@Council) in your reply.")
NO_THREADS = ("A council runs in a thread, and a voice or stage channel's chat has none: start it in a text or forum "
              "channel.")
NO_FORUM_DIGEST = ("A digest is one message in the channel, and a forum takes only posts: set it in a text "
                   "channel.")
NO_TAG = ("This forum requires a tag on each post, and it has none I may apply (its tags need *Manage Threads*): "
          "add a tag anyone may use, or give me Manage Threads here, then try again.")
NO_FILES = ("Note: I may not attach files here (*Attach Files*), so charts are left out of the posts; the text "
            "says so where one was meant to be.")


def hearing(perms: discord.Permissions, *, message_content: bool, forum: bool = False) -> str:
    """Notes to add to the start's answer ("" when all is well); raises PermissionError when Council could not
    hear the thread at all (it needs to see the channel and read its history: without View Channel, Discord
    takes every other permission away too, so that is checked first) or could never post in it."""
    needed = {"View Channel": perms.view_channel, "Read Message History": perms.read_message_history}
    missing = [name for name, ok in needed.items() if not ok]
    if missing:
        raise PermissionError(CANNOT_READ.format(missing=" and ".join(missing)))
    # A forum post is created with Send Messages alone; a thread on a message also takes Create Public Threads.
    posting = {"Send Messages": perms.send_messages, "Send Messages in Threads": perms.send_messages_in_threads,
               "Embed Links": perms.embed_links}
    if not forum:
        posting["Create Public Threads"] = perms.create_public_threads
    missing = [name for name, ok in posting.items() if not ok]
    if missing:
        raise PermissionError(CANNOT_POST.format(missing=", ".join(missing)))
    notes = [] if message_content else [NO_CONTENT]
    if not perms.attach_files:
        notes.append(NO_FILES)
    return "\n".join(notes)


def place(channel_type: discord.ChannelType | None, command: str = "council") -> None:
    """Raises PermissionError where the command's posts could never land: a voice or stage channel's chat has
    no threads for a council, and a forum takes no plain message for a digest."""
    if command == "council" and channel_type in (discord.ChannelType.voice, discord.ChannelType.stage_voice):
        raise PermissionError(NO_THREADS)
    if command == "council-digest" and channel_type == discord.ChannelType.forum:
        raise PermissionError(NO_FORUM_DIGEST)


def starts_in(channel: object) -> object:
    """Where a discussion started here posts its header: a thread's (a forum post's) parent channel, else the
    channel itself."""
    if isinstance(channel, discord.Thread) and channel.parent is not None:
        return channel.parent
    return channel


def tagging(channel: object) -> None:
    """Raises PermissionError where a forum requires a tag on each post and has none this bot may apply."""
    if not isinstance(channel, discord.ForumChannel) or not channel.flags.require_tag:
        return
    me = channel.guild.me
    manage = bool(me and channel.permissions_for(me).manage_threads)
    if not any(manage or not tag.moderated for tag in channel.available_tags):
        raise PermissionError(NO_TAG)
