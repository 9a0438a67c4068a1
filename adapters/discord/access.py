"""Can Council hear a discussion's thread in this channel? Read permissions and the Message Content intent."""

from __future__ import annotations

import discord

CANNOT_READ = ("I can't read this channel, so I would never hear your replies. Give me {missing} here "
               "(channel settings → Permissions → Council), then try again.")
NO_CONTENT = ("Note: I can't read ordinary messages (the bot's *Message Content* intent is off), so reply with the "
              "*Reply to the council* button under the thread's first post, or mention me (@Council) in your reply.")


def hearing(perms: discord.Permissions, *, message_content: bool) -> str:
    """A note to add to the start's answer ("" when all is well); raises PermissionError when Council could not
    hear the thread at all (it needs to see the channel and read its history)."""
    needed = {"View Channel": perms.view_channel, "Read Message History": perms.read_message_history}
    missing = [name for name, ok in needed.items() if not ok]
    if missing:
        raise PermissionError(CANNOT_READ.format(missing=" and ".join(missing)))
    return "" if message_content else NO_CONTENT
