"""A discussion's living synthesis as a Slack canvas: created once, replaced in place later, linked in the thread."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.deliberation import links
from core.models import Discussion, Post

log = logging.getLogger(__name__)

ClientFor = Callable[[str], Awaitable[AsyncWebClient]]
Publish = Callable[[Discussion, Post], Awaitable[str]]  # posts a message in the thread; returns its ts
Keep = Callable[[str, str], Awaitable[None]]  # (post key, canvas id): stored before anything else is called
Kept = Callable[[str], Awaitable[str]]  # post key -> the canvas id stored for it ("" when none)
# Refusals a retry may cure: raised, so the outbox tries the document again later.
PASSING = {"ratelimited", "internal_error", "fatal_error", "request_timeout", "service_unavailable"}
FREE_PLAN = "free_teams_cannot_create_non_tabbed_canvases"  # a free workspace: canvases tabbed in a channel only
_BRACKETS = str.maketrans({"[": "(", "]": ")"})  # a topic in a link label never closes the label
SCOPE_RECHECK_S = 3600.0  # a missing scope is believed this long: an admin's fix is noticed within the hour
SCOPE_HELP = (
    "📄 I could not keep this synthesis as a canvas: Council's Slack app lacks the `{needed}` scope. A workspace "
    "admin can add it at api.slack.com/apps → Council → *OAuth & Permissions* → *Bot Token Scopes* (`app-manifest.yml` "
    "lists it), then reinstall the app. Everything else works without it: the synthesis is in this thread."
)
UNSHARED = ("📄 I kept this synthesis in a canvas, but Slack would not share it with this channel, so its members "
            "could not open it. The synthesis is in this thread.")


def is_canvas(ref: str) -> bool:
    """Canvas ids are file ids (F…); a message ts (digits and a dot) means no canvas was made."""
    return ref.startswith("F") and "." not in ref


class NoCanvas(Exception):
    """Slack is known to refuse this canvas (remembered from an earlier answer): no call is made for it."""

    def __init__(self, error: str, needed: str = "") -> None:
        super().__init__(error)
        self.error, self.needed = error, needed


class Canvases:
    """Writes `document` posts (core.showing.document) to canvases; publish returns the canvas id as the post's ref,
    so the outbox keeps it and a later document edits the same canvas.

    A paid workspace gets a standalone canvas the channel may read; a free one (no standalone canvases there) a
    canvas tabbed in the channel (canvases.create with channel_id). Never the channel's own canvas
    (conversations.canvases.create): a channel has one, so a second discussion there would get none, and some plans
    may not make it at all. One discussion, one canvas, however many discussions share a channel.

    The id is kept (`keep`, on the post's outbox row) as soon as Slack answers, so a failure after it (sharing,
    linking) is retried with the same canvas, never a second one."""

    def __init__(self, client_for: ClientFor, publish: Publish, *, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.client_for, self.publish_message, self.clock = client_for, publish, clock
        self.keep: Keep | None = None  # given by the server, from the store
        self.kept: Kept | None = None
        self._base: dict[str, str] = {}  # workspace -> its web address (auth.test's url)
        self._free: set[str] = set()  # workspaces on a free plan
        self._no_scope: dict[str, tuple[float, str]] = {}  # workspace -> (when found missing, the scope needed)
        self._unshared: set[str] = set()  # canvases Slack would not share with their channel
        self.linked: set[str] = set()  # canvases whose link is in their thread already (found after a lost answer)

    async def publish(self, d: Discussion, post: Post, *, told: bool = False, key: str = "") -> str:
        """`told`: the thread already says why there is no canvas; a refusal is not repeated. `key`: the outbox row
        the canvas id is kept on (the document's own, also when a later edit makes the canvas)."""
        key = key or post.key
        client = await self.client_for(d.workspace)
        try:
            canvas_id = await self.kept(key) if self.kept is not None else ""
            if not is_canvas(canvas_id):
                canvas_id = await self._create(client, d, post)
                if self.keep is not None:
                    await self.keep(key, canvas_id)
            shared = await self._share(client, d, canvas_id)
        except NoCanvas as known:
            return await self._refused(d, post, known.error, known.needed, told=told)
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error in PASSING:
                raise
            self._remember(d, error, str(exc.response.get("needed") or ""))
            return await self._refused(d, post, error, str(exc.response.get("needed") or ""), told=told)
        if shared and canvas_id in self.linked:
            log.info("canvas %s of %s is linked in the thread already", canvas_id, d.id)
        elif shared:
            await self._link(client, d, canvas_id, post.key, "📄 The synthesis, the stance table and the open "
                             "questions are kept in a canvas: [{title}]({url}). It is updated when a later round "
                             "revisits the discussion.", post.title)
        elif not told:
            await self.publish_message(d, Post(kind="notice", key=post.key, text=UNSHARED))
        return canvas_id

    async def update(self, d: Discussion, ref: str, post: Post) -> None:
        original = post.replaces or post.key
        if not is_canvas(ref):  # no canvas yet (the scope was missing, or the plan refused it)
            await self.publish(d, post, told=True, key=original)
            return
        client = await self.client_for(d.workspace)
        try:
            await client.canvases_edit(canvas_id=ref, changes=[
                {"operation": "replace", "document_content": {"type": "markdown", "markdown": post.text}}])
            was_unshared = ref in self._unshared
            shared = await self._share(client, d, ref) if was_unshared else True
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error == "canvas_not_found":  # deleted by someone: a new one takes its place
                if self.keep is not None:
                    await self.keep(original, "")
                await self.publish(d, post, key=original)
                return
            if error in PASSING:
                raise
            self._remember(d, error, str(exc.response.get("needed") or ""))
            log.warning("canvas %s of %s not updated: %s", ref, d.id, error)
            return
        if not shared or not was_unshared:  # one notice per discussion: its link, already in the thread, still serves
            return
        text = "📄 The synthesis, the stance table and the open questions are kept in a canvas: [{title}]({url})."
        await self._link(client, d, ref, f"{post.key}:updated", text, post.title)

    async def _create(self, client: AsyncWebClient, d: Discussion, post: Post) -> str:
        missing = self._no_scope.get(d.workspace)
        if missing is not None and self.clock() - missing[0] < SCOPE_RECHECK_S:
            raise NoCanvas("missing_scope", missing[1])
        title, content = post.title or d.topic[:120], {"type": "markdown", "markdown": post.text}
        if d.workspace not in self._free:
            try:
                return str((await client.canvases_create(title=title, document_content=content))["canvas_id"])
            except SlackApiError as exc:
                if exc.response.get("error") != FREE_PLAN:
                    raise
                self._free.add(d.workspace)
        # A tab of its own in the discussion's channel: its members have it there, whatever other tabs it has.
        created = await client.canvases_create(title=title, document_content=content, channel_id=d.channel)
        return str(created["canvas_id"])

    async def _share(self, client: AsyncWebClient, d: Discussion, canvas_id: str) -> bool:
        """The channel's members may read a standalone canvas; only the app edits it, so it stays the record. A
        canvas tabbed in the channel (a free plan) is theirs already. False: Slack answered ok but would not share it
        with the channel."""
        if d.workspace in self._free:
            return True
        resp = await client.canvases_access_set(canvas_id=canvas_id, access_level="read", channel_ids=[d.channel])
        if d.channel in (resp.get("failed_to_update_channel_ids") or []):
            log.warning("canvas %s of %s not shared with %s", canvas_id, d.id, d.channel)
            self._unshared.add(canvas_id)
            return False
        self._unshared.discard(canvas_id)
        return True

    def _remember(self, d: Discussion, error: str, needed: str) -> None:
        if error == "missing_scope":
            self._no_scope[d.workspace] = (self.clock(), needed or "canvases:write")

    async def _refused(self, d: Discussion, post: Post, error: str, needed: str, *, told: bool = False) -> str:
        """Slack will not keep the canvas: say why in the thread (once per discussion) and go on without it."""
        log.warning("no canvas for %s: %s", d.id, error)
        if told:
            return ""
        if error == "missing_scope":
            text = SCOPE_HELP.format(needed=needed or "canvases:write")
        else:
            text = (f"📄 Slack would not keep this synthesis as a canvas ({error}); canvases may be turned off in "
                    "this workspace. The synthesis is in this thread.")
        return await self.publish_message(d, Post(kind="notice", key=post.key, text=text))

    async def _link(self, client: AsyncWebClient, d: Discussion, canvas_id: str, key: str, text: str,
                    title: str) -> None:
        url = await self._url(client, d.workspace, canvas_id)
        # The title is a person's topic inside Council's own link: its links and addresses are made plain and its
        # brackets turned to parentheses, so it can neither close the label early nor link anywhere but the canvas.
        label = links.plain(" ".join(title.split())).translate(_BRACKETS)
        await self.publish_message(d, Post(kind="notice", key=key, text=text.format(title=label, url=url)))

    async def _url(self, client: AsyncWebClient, workspace: str, canvas_id: str) -> str:
        """A canvas opens at <workspace address>/docs/<team id>/<canvas id>."""
        if workspace not in self._base:
            me = await client.auth_test()
            self._base[workspace] = f"{str(me['url']).rstrip('/')}/docs/{me['team_id']}"
        return f"{self._base[workspace]}/{canvas_id}"
