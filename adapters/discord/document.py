"""The discussion's living synthesis on Discord: one message with `synthesis.md` and the page link, whose file is
replaced in place (a PATCH with a new attachment) when a later synthesis revisits the discussion."""

from __future__ import annotations

import json
from typing import Any

from discord.http import HTTPClient, Route

from core.models import Post

FILENAME = "synthesis.md"


def note(post: Post, *, updated: bool = False) -> str:
    what = "The synthesis (updated)" if updated else "The synthesis"
    text = f"📄 {what}, the stance table and the open questions: `{FILENAME}`."
    if post.page_url:
        text += f" The whole discussion: [its page]({post.page_url})."
    return text[:2000]


def refused(post: Post) -> str:
    """The note without its file, where Council may not attach files."""
    return (f"{note(post)}\n-# (`{FILENAME}` left out: I may not attach files in this channel; give me "
            "*Attach Files* to get it)")[:2000]


def _form(post: Post, body: dict[str, Any]) -> list[dict[str, Any]]:
    body["attachments"] = [{"id": 0, "filename": FILENAME,
                            "description": f"The synthesis as Markdown ({len(post.text):,} characters)"}]
    return [{"name": "payload_json", "value": json.dumps(body)},
            {"name": "files[0]", "value": post.text.encode(), "filename": FILENAME, "content_type": "text/markdown"}]


async def send(http: HTTPClient, channel: str, post: Post, nonce: str) -> str:
    """The document as one bot message (its nonce keeps a resend from showing twice); returns its id."""
    body = {"content": note(post), "nonce": nonce, "enforce_nonce": True, "allowed_mentions": {"parse": []}}
    route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel)
    return str((await http.request(route, form=_form(post, body)))["id"])


async def replace(http: HTTPClient, channel: str, message_id: str, post: Post) -> None:
    """The same message with the new file: attachments left out of the list are removed."""
    body = {"content": note(post, updated=True), "allowed_mentions": {"parse": []}}
    route = Route("PATCH", "/channels/{channel_id}/messages/{message_id}", channel_id=channel, message_id=message_id)
    await http.request(route, form=_form(post, body))
