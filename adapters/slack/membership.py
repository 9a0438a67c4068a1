"""Before a discussion or a digest starts in a channel: make sure Council is in it, so it hears people's replies.

Slack delivers message events only from conversations the app is a member of. A public channel is joined
(`conversations.join`); a private channel, a direct message or a channel Council may not join is refused with
what to do instead, before anything is posted. Also: who reads the channel, so this workspace's records stay
among its own members (not in a Slack Connect channel, another workspace's, or one with guests).
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.clients import Users
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


# conversations.info's flags for a channel people outside this workspace read: shared with another organisation
# (Slack Connect), an invitation to share it still pending, or shared across an Enterprise Grid's workspaces.
OUTSIDE = ("is_ext_shared", "is_shared", "is_org_shared", "is_pending_ext_shared")
# conversations.members is read in pages of this many, cursor by cursor, however large the channel: a big channel
# is checked person by person like a small one (the people are cached), not taken as read from outside unseen.
MEMBERS_PAGE = 200


class Reach(NamedTuple):
    private: bool  # hidden from the workspace: its records stay in it
    shared: bool  # people outside the workspace read it: no other channel's records go into it


async def ensure_member(client: AsyncWebClient, channel: str) -> Reach:
    """Return once Council is a member of `channel` (joining it if it is public): whether the channel is private
    (Council could join it: public) and whether it is shared outside the workspace; UserError otherwise."""
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
    shared = any(bool(info.get(flag)) for flag in OUTSIDE)
    if info.get("is_member"):
        return Reach(private, shared)
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
    return Reach(False, shared)  # only a public channel can be joined


async def has_guests(client: AsyncWebClient, users: Users, team: str, channel: str) -> bool:
    """Whether guests (or people of another workspace) are among the channel's members, every page of them read;
    True when Slack will not say, so a workspace's records never reach them by default."""
    cursor = ""
    while True:
        try:
            resp = await client.conversations_members(channel=channel, limit=MEMBERS_PAGE, cursor=cursor or None)
        except SlackApiError as exc:
            log.warning("conversations.members failed for %s: %s", channel, exc.response.get("error"))
            return True
        for member in resp.get("members") or []:
            if (await users.get(client, team, str(member))).guest:
                return True
        cursor = str((resp.get("response_metadata") or {}).get("next_cursor") or "")
        if not cursor:
            return False
