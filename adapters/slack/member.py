"""The channels a person is in (users.conversations), for what of Council's records they may see."""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)
# users.conversations takes "an integer with a max value of 999"; a person in more than five pages' worth sees the
# first of them.
PAGE, MAX_PAGES = 999, 5


async def channels_of(client: AsyncWebClient, user: str) -> list[str]:
    """Public channels the person is in and private ones Council shares with them; [] when Slack will not say
    (then only the channel asked from counts)."""
    out: list[str] = []
    try:
        pages = 0
        async for page in await client.users_conversations(user=user, types="public_channel,private_channel",
                                                           exclude_archived=True, limit=PAGE):
            out += [str(ch.get("id")) for ch in page.get("channels") or [] if ch.get("id")]
            pages += 1
            if pages >= MAX_PAGES:
                break
    except SlackApiError as exc:
        log.warning("users.conversations failed for %s: %s", user, exc.response.get("error"))
    return out
