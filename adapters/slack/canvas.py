"""A discussion's living synthesis as a Slack canvas: created once, replaced in place later, linked in the thread."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.models import Discussion, Post

log = logging.getLogger(__name__)

ClientFor = Callable[[str], Awaitable[AsyncWebClient]]
Publish = Callable[[Discussion, Post], Awaitable[str]]  # posts a message in the thread; returns its ts
# Refusals a retry may cure: raised, so the outbox tries the document again later.
PASSING = {"ratelimited", "internal_error", "fatal_error", "request_timeout", "service_unavailable"}
SCOPE_HELP = (
    "📄 I could not keep this synthesis as a canvas: Council's Slack app lacks the `{needed}` scope. A workspace "
    "admin can add it at api.slack.com/apps → Council → *OAuth & Permissions* → *Bot Token Scopes* (`app-manifest.yml` "
    "lists it), then reinstall the app. Everything else works without it: the synthesis is in this thread."
)


def is_canvas(ref: str) -> bool:
    """Canvas ids are file ids (F…); a message ts (digits and a dot) means no canvas was made."""
    return ref.startswith("F") and "." not in ref


class Canvases:
    """Writes `document` posts (core.showing.document) to canvases; publish returns the canvas id as the post's ref,
    so the outbox keeps it and a later document edits the same canvas."""

    def __init__(self, client_for: ClientFor, publish: Publish) -> None:
        self.client_for, self.publish_message = client_for, publish
        self._base: dict[str, str] = {}  # workspace -> its web address (auth.test's url)

    async def publish(self, d: Discussion, post: Post, *, told: bool = False) -> str:
        """`told`: the thread already says why there is no canvas; a refusal is not repeated."""
        client = await self.client_for(d.workspace)
        try:
            created = await client.canvases_create(title=post.title or d.topic[:120],
                                                   document_content={"type": "markdown", "markdown": post.text})
            canvas_id = str(created["canvas_id"])
            # The channel's members may read it; only the app edits it, so it stays the record.
            await client.canvases_access_set(canvas_id=canvas_id, access_level="read", channel_ids=[d.channel])
        except SlackApiError as exc:
            return await self._refused(d, post, exc, told=told)
        url = await self._url(client, d.workspace, canvas_id)
        await self.publish_message(d, Post(
            kind="notice", key=post.key,
            text=f"📄 The synthesis, the stance table and the open questions are kept in a canvas: "
                 f"[{post.title}]({url}). It is updated when a later round revisits the discussion."))
        return canvas_id

    async def update(self, d: Discussion, ref: str, post: Post) -> None:
        if not is_canvas(ref):  # no canvas yet (the scope was missing, or a crash cut the first one short)
            await self.publish(d, post, told=True)
            return
        client = await self.client_for(d.workspace)
        try:
            await client.canvases_edit(canvas_id=ref, changes=[
                {"operation": "replace", "document_content": {"type": "markdown", "markdown": post.text}}])
        except SlackApiError as exc:
            if exc.response.get("error") == "canvas_not_found":  # deleted by someone: a new one takes its place
                await self.publish(d, post)
                return
            await self._refused(d, post, exc)
            return
        url = await self._url(client, d.workspace, ref)
        await self.publish_message(d, Post(kind="notice", key=f"{post.key}:updated",
                                           text=f"📄 The canvas is updated: [{post.title}]({url})."))

    async def _refused(self, d: Discussion, post: Post, exc: SlackApiError, *, told: bool = False) -> str:
        """Slack will not keep the canvas: say why in the thread (once per discussion) and go on without it."""
        error = str(exc.response.get("error") or "")
        if error in PASSING:
            raise exc
        log.warning("no canvas for %s: %s", d.id, error)
        if told:
            return ""
        if error == "missing_scope":
            text = SCOPE_HELP.format(needed=exc.response.get("needed") or "canvases:write")
        else:
            text = (f"📄 Slack would not keep this synthesis as a canvas ({error}); canvases need a paid Slack plan "
                    "with canvases turned on. The synthesis is in this thread.")
        return await self.publish_message(d, Post(kind="notice", key=post.key, text=text))

    async def _url(self, client: AsyncWebClient, workspace: str, canvas_id: str) -> str:
        """A canvas opens at <workspace address>/docs/<team id>/<canvas id>."""
        if workspace not in self._base:
            me = await client.auth_test()
            self._base[workspace] = f"{str(me['url']).rstrip('/')}/docs/{me['team_id']}"
        return f"{self._base[workspace]}/{canvas_id}"
