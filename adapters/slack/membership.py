"""Before a discussion or a digest starts in a channel: make sure Council is in it, so it hears people's replies.

Slack delivers message events only from conversations the app is a member of. A public channel is joined
(`conversations.join`); a private channel, a direct message or a channel Council may not join is refused with
what to do instead, before anything is posted.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.control.replies import UserError

log = logging.getLogger(__name__)

INVITE = ("I'm not in this channel, so I wouldn't hear people's replies. Invite me first with "
          "`/invite @Council`, then try again.")
IN_DM = ("I can't hold a council in a direct message: I wouldn't hear the replies there. Start it in a channel "
         "(for a private one, `/invite @Council` first).")
ARCHIVED = "This channel is archived, so I can't post in it. Pick another channel."
# conversations.join's refusals that mean "only an invitation gets me in".
NEEDS_INVITE = {"method_not_supported_for_channel_type", "channel_not_found", "is_private",
                "not_in_channel", "restricted_action", "user_is_restricted"}


async def ensure_member(client: AsyncWebClient, channel: str) -> bool:
    """Return once Council is a member of `channel` (joining it if it is public): whether the channel is private
    (Council could join it: public); UserError otherwise."""
    try:
        info: dict[str, Any] = (await client.conversations_info(channel=channel))["channel"]
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error == "channel_not_found":  # a private channel or a DM Council cannot see at all
            raise UserError(IN_DM if channel.startswith("D") else INVITE) from exc
        if error != "missing_scope":
            raise
        log.warning("conversations.info needs channels:read/groups:read; trying to join %s directly", channel)
        info = {}
    if info.get("is_im") or info.get("is_mpim"):  # Council subscribes to no direct-message events
        raise UserError(IN_DM)
    private = bool(info.get("is_private"))
    if info.get("is_member"):
        return private
    if info.get("is_archived"):
        raise UserError(ARCHIVED)
    if private:
        raise UserError(INVITE)
    try:
        await client.conversations_join(channel=channel)
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error in NEEDS_INVITE:
            raise UserError(INVITE) from exc
        if error == "is_archived":
            raise UserError(ARCHIVED) from exc
        raise
    log.info("joined %s to hear its discussions", channel)
    return False  # only a public channel can be joined
