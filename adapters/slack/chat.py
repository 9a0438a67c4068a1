"""Slack as a ChatPort on AsyncWebClient: persona identities, thinking placeholders, pacing, crash recovery."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack.announce import announcement
from adapters.slack.budgeted import PRIORITY, Skipped, idle
from adapters.slack.canvas import Canvases, is_canvas
from adapters.slack.clients import ephemeral
from adapters.slack.landed import After, known, post_once
from adapters.slack.leftovers import Leftovers, Remove
from adapters.slack.markup import escape
from adapters.slack.plain import edit_plain, post_plain
from adapters.slack.render import EVENT_TYPE, THINKING_EVENT, Message, live, note, render, thinking
from core.models import Discussion, Persona, Post, Status
from core.ports import CannotPost, PlaceholderShown
from core.running.live import ChannelBudget

log = logging.getLogger(__name__)
ClientFor = Callable[[str], Awaitable[AsyncWebClient]]  # workspace (team id) -> a client with its bot token
BLOCK_ERRORS = {"invalid_blocks", "invalid_blocks_format", "msg_too_long", "msg_blocks_too_long"}
GONE = {"message_not_found", "cant_update_message"}  # deleted, or no longer ours to edit: nothing to update
PAGE = 15  # messages per read: the most Slack gives an app outside its Marketplace
HEADER_WITHIN_S = 600.0  # a discussion's header goes out within minutes of its start, or its start failed
# Refusals that no retry can change, in words for the person who started the discussion.
FOREVER = {
    "is_archived": "the channel is archived",
    "channel_not_found": "the channel is gone, or I was removed from it",
    "not_in_channel": "I was removed from the channel",
    "method_not_supported_for_channel_type": "I was removed from the channel and may not rejoin it by myself",
    "account_inactive": "the app was uninstalled",
    "token_revoked": "the app's token was revoked",
    "invalid_auth": "the app's token is no longer valid",
}
REACTIONS = {"heard": "eyes", "answered": "white_check_mark"}  # a mark on a person's message, by its name
LIVE_GAP_S = 1.0  # live-text edits per channel at most this often, whatever the number of turns writing at once
# Live-text edits a turn at most: its first words, shown at once. A turn then costs Slack one new message (its
# placeholder), this edit and the edit that fills the placeholder with the post: about 1.7 chat.update a model call
# where most calls are streamed turns, so that a discussion's Slack calls stay within 3 a model call. Every later
# edit of a growing turn was another chat.update from the workspace's 50 a minute, and left fewer there for the
# edits that fill placeholders (each one missed costs a new message and a delete).
LIVE_EDITS = 1
LEFT = ":left"  # a placeholder Slack would not delete, recorded under its turn's key and this: no post settles it
Taken = tuple[str, str, str]  # a placeholder taken by the post that replaces it: turn key, persona name, ts


@contextlib.asynccontextmanager
async def _for_good() -> AsyncIterator[None]:
    """Turn Slack's refusals that no retry can change into CannotPost, so the outbox stops trying."""
    try:
        yield
    except SlackApiError as exc:
        error = str(exc.response.get("error") or "")
        if error in FOREVER:
            raise CannotPost(FOREVER[error]) from exc
        raise


async def add_reaction(client: AsyncWebClient, channel: str, ts: str, mark: str) -> None:
    """A mark on a person's message (reactions.add, scope reactions:write); one already there is no error, nor a
    message deleted since or an install from before the scope (logged: the mark is a courtesy)."""
    try:
        async with _for_good():
            await client.reactions_add(channel=channel, timestamp=ts, name=REACTIONS[mark])
    except SlackApiError as exc:
        error = exc.response.get("error")
        if error == "already_reacted":
            return
        if error in ("message_not_found", "no_item_specified", "missing_scope"):
            log.warning("could not mark %s in %s as %s: %s", ts, channel, mark, error)
            return
        raise


def caption(post: Post) -> str:
    """A chart message's one line: what its charts are (their titles); each chart's alt text stays on its file."""
    return escape("📊 " + " · ".join(f.title or f.name for f in post.files))[:300]


def as_app(args: dict[str, Any]) -> dict[str, Any]:
    """A post under the app's own name and face (no chat:write.customize): the persona it speaks for is named at
    its top instead."""
    out = {k: v for k, v in args.items() if k not in ("username", "icon_emoji", "icon_url")}
    name = args.get("username")
    if name:
        who = f"{args.get('icon_emoji') or ''} *{escape(str(name))}*".strip()
        out["text"] = f"{escape(str(name))}: {args.get('text') or ''}"[:40000]
        if out.get("blocks"):
            out["blocks"] = [{"type": "context", "elements": [{"type": "mrkdwn", "text": who}]}, *out["blocks"]]
    return out


@dataclass
class ThreadIndex:
    """What a thread already holds, read once from Slack (message metadata) when recovering."""

    posts: dict[str, dict[int, str]] = field(default_factory=dict)  # post key -> part -> ts
    placeholders: dict[str, str] = field(default_factory=dict)  # turn key -> ts
    read_at: float = 0.0


class SlackChat:
    def __init__(self, client_for: ClientFor, *, time_scale: float = 1.0,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        """`client_for` gives each workspace's client; new messages are paced per channel there (BudgetedClient).
        `time_scale`: Slack's seconds run this much faster (benches), the live-edit gap with them; `monotonic`:
        the seconds that gap is measured in (tests give virtual time)."""
        self.client_for = client_for
        self._fresh: set[str] = set()  # discussions whose header this process posted: nothing to recover
        self._index: dict[str, ThreadIndex] = {}  # what the last look for a post of unknown fate found
        self._reading: dict[str, asyncio.Future[ThreadIndex]] = {}
        # The newest ref the database recorded as sent for a discussion (the wiring gives it the store).
        self.last_ref: Callable[[str], Awaitable[str]] | None = None
        # discussion -> turn key -> (persona name, the placeholder's ts): a post looks among its discussion's only
        self._thinking: dict[str, dict[str, tuple[str, asyncio.Future[str | None]]]] = {}
        self._leftovers = Leftovers()  # placeholders a delete failed to remove: removed before the next message
        self._links: dict[str, str] = {}
        self._live = ChannelBudget(LIVE_GAP_S / time_scale, monotonic)
        self._live_edits: dict[str, int] = {}  # turn key -> live edits Slack took for it (LIVE_EDITS at most)
        self.placeholders: PlaceholderShown | None = None  # records each placeholder posted (the wiring sets it)
        self.canvases = Canvases(client_for, self.publish)
        self._as_app: set[str] = set()  # bot tokens without chat:write.customize: posts go out under the app's name

    # ChatPort ---------------------------------------------------------------------------------------
    async def publish(self, discussion: Discussion, post: Post) -> str:
        if post.kind == "reaction":  # a mark on a person's message, no message of its own
            await self.react(discussion, post.reacts_to, post.text)
            return post.reacts_to
        if post.kind == "document":
            return await self.canvases.publish(discussion, post)
        client = await self.client_for(discussion.workspace)
        messages = render(post, discussion.topic)
        thread = discussion.thread_ref or None
        if post.kind == "header":
            self._fresh.add(discussion.id)
        if discussion.status == Status.STOPPED:  # turns still being written were cut short: no half sentences
            await self._settle_placeholders(discussion, "⏹️ {name} was stopped before finishing.")
        if self._leftovers.any(discussion.id):  # placeholders a delete left: gone before anything else is posted
            await self._leftovers.retry(discussion.id, self._remover(client, discussion.channel))
        taken = await self._take_placeholder(discussion, post)
        ref = ""
        after = self._after(discussion)
        try:
            for i, message in enumerate(messages):
                if i == 0 and taken and await self._fill(client, discussion.channel, taken[2], message):
                    ts, taken = taken[2], None
                else:  # no placeholder, no edit to spare, or someone deleted it: the post itself must still be seen
                    ts = await self._post(client, discussion.channel, thread, message, after)
                    if i == 0 and taken:
                        await self._discard(discussion, client, taken)
                        taken = None
                after = known(ts)
                ref = ref or ts
        except BaseException:
            if taken:  # neither filled nor removed: the post's next try (the outbox retries it) still finds it
                self._restore(discussion.id, taken)
            raise
        if post.kind == "error":
            await self._settle_placeholders(discussion, "{name} did not respond to this step.")
        if post.files:
            await self.upload(discussion, post)
        return ref

    def _after(self, discussion: Discussion) -> After:
        """The newest post the database knows was sent in the discussion's thread (asked only when needed)."""
        async def newest() -> str:
            return await self.last_ref(discussion.id) if self.last_ref is not None else ""
        return newest

    async def upload(self, discussion: Discussion, post: Post) -> None:
        await self._upload(discussion.workspace, discussion.channel, discussion.thread_ref, post)

    async def _upload(self, workspace: str, channel: str, thread_ts: str, post: Post) -> None:
        """The post's charts into a thread (files_upload_v2, scope files:write), alt text on each. A chart is a
        courtesy: if Slack refuses it, the post stands and the refusal is logged."""
        client = await self.client_for(workspace)
        uploads = [{"content": f.data, "filename": f.name, "title": f.title or f.name, "alt_txt": f.alt[:1000]}
                   for f in post.files]
        try:
            await client.files_upload_v2(channel=channel, thread_ts=thread_ts or None, file_uploads=uploads,
                                         initial_comment=caption(post))
        except SlackApiError as exc:
            log.warning("could not upload the charts of %s: %s", post.key, exc.response.get("error"))
        except Exception:
            log.warning("could not upload the charts of %s", post.key, exc_info=True)

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        if post.kind == "document":
            if not post.replaces and is_canvas(ref):  # the document itself, sent again: its canvas (find) goes on
                await self.canvases.publish(discussion, post)
                return
            return await self.canvases.update(discussion, ref, post)
        client = await self.client_for(discussion.workspace)
        messages = render(post, discussion.topic)
        try:
            await self._edit(client, discussion.channel, ref, messages[0])
        except SlackApiError as exc:
            if exc.response.get("error") not in BLOCK_ERRORS:
                raise
            log.warning("Slack refused the blocks of %s (%s); editing in its lines as plain sections", post.key,
                        exc.response.get("error"))
            await edit_plain(client, discussion.channel, discussion.thread_ref or ref, ref, messages[0].args())
        if post.kind == "header":  # a roster turn's result is the header itself: its placeholder just goes
            await self._settle_placeholders(discussion, "", named_by=post.key)
        parts = self._index.get(discussion.id, ThreadIndex()).posts.pop(post.key, None)
        if parts is None:
            return
        for i, message in enumerate(messages[1:], start=1):  # a split post interrupted by a crash
            if i in parts:
                await self._edit(client, discussion.channel, parts[i], message)
            else:
                await self._post(client, discussion.channel, discussion.thread_ref or None, message,
                                 self._after(discussion))

    async def find(self, discussion: Discussion, key: str) -> str | None:
        """Called only for a post whose fate is unknown: one page read from Slack, never a whole thread. A document
        whose canvas was made is that canvas (its link, carrying the document's key, is then in the page or not)."""
        index = await self._read_thread(discussion)
        parts = index.posts.get(key)
        found = parts.get(0) if parts else None
        kept = await self.canvases.kept(key) if self.canvases.kept is not None else ""
        if is_canvas(kept):
            if found:
                self.canvases.linked.add(kept)
            return kept
        return found

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        held = self._thinking.get(discussion.id, {}).get(key)
        if held is not None and not (held[1].done() and held[1].result() is None):
            return
        # Posted in the background: pacing must not delay the model call.
        task = asyncio.create_task(self._show_thinking(discussion, persona, key), name=f"thinking:{key}")
        self._thinking.setdefault(discussion.id, {})[key] = (persona.name, task)

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        """Grow the turn's placeholder with the words so far, LIVE_EDITS times at most. chat.update is rate limited
        per workspace, so after each turn's first words a channel gets one live edit per LIVE_GAP_S, shared by its
        turns in turn; a skipped update is carried by the next."""
        held = self._thinking.get(discussion.id, {}).get(key)
        if held is None or self._live_edits.get(key, 0) >= LIVE_EDITS:
            return
        ts = await held[1]
        first = not self._live.shown(key)
        if not ts or key not in self._thinking.get(discussion.id, {}) or not self._live.allow(discussion.channel, key):
            return
        client = await self.client_for(discussion.workspace)
        marked = PRIORITY.set("first" if first else "live")  # from what the budget leaves: skipped, never waited for
        try:
            if await self._edit(client, discussion.channel, ts, live(persona, key, text)):
                self._live_edits[key] = self._live_edits.get(key, 0) + 1
        except Skipped:
            log.debug("live text of %s skipped: no chat.update left in the budget", key)
        finally:
            PRIORITY.reset(marked)

    async def react(self, discussion: Discussion, ts: str, mark: str) -> None:
        """A reaction on a person's message (reactions.add, scope reactions:write): "heard" (👀) as it is queued,
        "answered" (✅, through the outbox) once a turn answered it. One already there is no error."""
        await add_reaction(await self.client_for(discussion.workspace), discussion.channel, ts, mark)

    async def retract(self, discussion: Discussion, ref: str) -> None:
        """Delete a placeholder a dead process left (chat.delete: the app's own message)."""
        client = await self.client_for(discussion.workspace)
        try:
            await client.chat_delete(channel=discussion.channel, ts=ref)
        except SlackApiError as exc:
            if exc.response.get("error") not in GONE:
                raise

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        """One new top-level message carrying the key in its metadata; an overflow goes into its thread."""
        client = await self.client_for(workspace)
        top, replies = announcement(post)
        ref = await self._post(client, channel, None, top)
        for i, message in enumerate(replies, start=1):
            try:
                await self._post(client, channel, ref, message, known(ref))
            except Exception:  # the top-level message names everything: it stands without its details
                log.warning("announcement %s: part %s of %s not posted", post.key, i, len(replies), exc_info=True)
                break
        if post.files:  # into the announcement's thread: a digest stays one top-level message
            await self._upload(workspace, channel, ref, post)
        return ref

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        """The top-level message among the channel's newest page whose metadata carries this key (its sender
        died, or its answer was lost, moments ago: one page, never a scan of the channel)."""
        client = await self.client_for(workspace)
        try:
            resp = await self._history(client, channel, PAGE)
        except SlackApiError as exc:  # posting again beats never posting: the caller goes on as if not found
            log.warning("could not search %s for %s: %s", channel, key, exc.response.get("error"))
            return None
        for message in resp.get("messages") or []:
            meta = message.get("metadata") or {}
            payload = meta.get("event_payload") or {}
            top = message.get("thread_ts") in (None, message.get("ts"))
            if top and meta.get("event_type") == EVENT_TYPE and payload.get("key") == key:
                return str(message["ts"])
        return None

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        """A message in the app's direct messages with the person (posting to a user id opens it); a whisper is
        an ephemeral message in the discussion's thread instead (a direct message if Slack refuses it there)."""
        client = await self.client_for(discussion.workspace)
        if post.whisper and discussion.channel:
            for message in render(post, discussion.topic):
                args = message.args()
                await ephemeral(client, discussion.channel, user_id, str(args.get("text") or ""), markup=True,
                                thread_ts=discussion.thread_ref or None, blocks=args.get("blocks"))
            return
        for message in render(post, discussion.topic):
            await self._post(client, user_id, None, message)

    async def link(self, discussion: Discussion) -> str:
        if not discussion.thread_ref:
            return ""
        cached = self._links.get(discussion.id)
        if cached:
            return cached
        try:
            client = await self.client_for(discussion.workspace)
            resp = await client.chat_getPermalink(channel=discussion.channel, message_ts=discussion.thread_ref)
        except SlackApiError as exc:
            log.warning("no permalink for %s: %s", discussion.id, exc.response.get("error"))
            return ""
        self._links[discussion.id] = url = str(resp.get("permalink") or "")
        return url

    async def drain(self) -> None:
        """Wait for thinking placeholders still being posted (tests, shutdown)."""
        tasks = [task for held in list(self._thinking.values()) for _, task in list(held.values())]
        await asyncio.gather(*tasks, return_exceptions=True)

    # posting ----------------------------------------------------------------------------------------
    @staticmethod
    async def _history(client: AsyncWebClient, channel: str, limit: int) -> AsyncSlackResponse:
        args: dict[str, Any] = {"channel": channel, "include_all_metadata": True, "limit": limit}
        try:
            return await client.conversations_history(**args)
        except SlackApiError as exc:
            if exc.response.get("error") != "not_in_channel":
                raise
        await client.conversations_join(channel=channel)  # a channel it was removed from, or never joined
        return await client.conversations_history(**args)

    async def _post(self, client: AsyncWebClient, channel: str, thread: str | None, message: Message,
                    after: After | None = None) -> str:
        """A new message, exactly once (landed.post_once). `after`: the newest message known to be in the thread
        before this one, where a post whose answer was lost is looked for from."""
        args: dict[str, Any] = {"channel": channel, **message.args(), "unfurl_links": False, "unfurl_media": False}
        if thread:
            args["thread_ts"] = thread
        if client.token in self._as_app:
            args = as_app(args)
        async with _for_good():
            try:
                return await post_once(client, args, after)
            except SlackApiError as exc:
                error = exc.response.get("error")
                if error == "missing_scope" and exc.response.get("needed") == "chat:write.customize":
                    log.warning("the app lacks chat:write.customize: personas post as the app, named in the message")
                    self._as_app.add(client.token or "")
                    args = as_app(args)
                elif error == "not_in_channel":
                    await client.conversations_join(channel=channel)
                elif error == "invalid_metadata_format":
                    log.warning("Slack refused the metadata; posting without it")
                    args.pop("metadata", None)
                elif error in BLOCK_ERRORS:
                    log.warning("Slack refused the blocks (%s); posting its lines as plain sections", error)
                    return await post_plain(client, args, after)
                else:
                    raise
                return await post_once(client, args, after)

    @staticmethod
    async def _edit(client: AsyncWebClient, channel: str, ts: str, message: Message) -> bool:
        """False when the message is gone (deleted, or not ours to edit): the thread goes on without the edit."""
        args = {k: v for k, v in message.args().items() if k not in ("username", "icon_emoji", "icon_url")}
        try:
            async with _for_good():
                await client.chat_update(channel=channel, ts=ts, **args)
        except SlackApiError as exc:
            error = exc.response.get("error")
            if error not in GONE:
                raise
            log.warning("message %s in %s cannot be edited (%s); skipping the edit", ts, channel, error)
            return False
        return True

    # thinking placeholders -------------------------------------------------------------------------
    async def _fill(self, client: AsyncWebClient, channel: str, ts: str, message: Message) -> bool:
        """Edit a placeholder into what replaces it, only with a chat.update the workspace has to spare right now
        (Slack counts an edit when it is made: one paid for earlier lands in a minute others' edits may have
        filled). False: no call to spare, Slack refused it, or the placeholder is gone; a new message will do."""
        marked = PRIORITY.set("spare")
        try:
            return await self._edit(client, channel, ts, message)
        except Skipped:
            log.debug("no chat.update to spare for %s in %s: posted anew", ts, channel)
            return False
        except SlackApiError as exc:
            if exc.response.get("error") not in BLOCK_ERRORS:
                raise
            return False  # a new message, whose refused blocks are re-rendered plain there (_post)
        finally:
            PRIORITY.reset(marked)

    def _remover(self, client: AsyncWebClient, channel: str) -> Remove:
        async def remove(ts: str) -> None:
            await self._remove(client, channel, ts)
        return remove

    async def _discard(self, discussion: Discussion, client: AsyncWebClient, taken: Taken) -> None:
        """Remove a placeholder whose post went out as a new message. Refused, it is kept and removed before the
        thread's next message, and recorded as never settled, so a process taking over after a crash removes it."""
        key, _, ts = taken
        if not await self._leftovers.remove(discussion.id, key, ts, self._remover(client, discussion.channel)):
            await self._report(discussion, key + LEFT, ts)

    def _restore(self, discussion_id: str, taken: Taken) -> None:
        """A placeholder taken by a post that failed before filling or removing it: its turn's again."""
        key, name, ts = taken
        shown: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        shown.set_result(ts)
        self._thinking.setdefault(discussion_id, {})[key] = (name, shown)

    async def _remove(self, client: AsyncWebClient, channel: str, ts: str) -> None:
        """A placeholder whose post went out as a new message (chat.delete: its own budget, not chat.update's)."""
        try:
            await client.chat_delete(channel=channel, ts=ts)
        except SlackApiError as exc:
            if exc.response.get("error") not in GONE:
                raise

    async def _show_thinking(self, discussion: Discussion, persona: Persona, key: str) -> str | None:
        try:
            index = await self._taken_over(discussion)
            if index is not None and key in index.placeholders:
                return index.placeholders.pop(key)
            client = await self.client_for(discussion.workspace)
            # chat.update is limited per workspace (Tier 3): a placeholder is shown only while no work spends the
            # workspace's edits, so that its post can likely fill it. In a busy workspace the post comes as a new
            # message instead, paced per channel: every edit a placeholder took would delay the edits of posts
            # (headers, polls) that only an edit can do.
            if not await idle(client, "chat.update"):
                log.debug("no placeholder for %s: no chat.update to spare in %s", key, discussion.workspace)
                return None
            ts = await self._post(client, discussion.channel, discussion.thread_ref or None, thinking(persona, key),
                                  self._after(discussion))
            await self._report(discussion, key, ts)
            return ts
        except Exception:
            log.warning("could not show that %s is thinking", persona.name, exc_info=True)
            return None

    async def _report(self, discussion: Discussion, key: str, ts: str) -> None:
        """Recorded at once, so a process taking over after a crash removes it rather than leave it "thinking"."""
        if self.placeholders is None:
            return
        try:
            await self.placeholders(discussion, key, ts)
        except Exception:  # the placeholder still serves; only a crash before the post would leave it behind
            log.warning("could not record the placeholder of %s", key, exc_info=True)

    async def _take_placeholder(self, discussion: Discussion, post: Post) -> Taken | None:
        """The placeholder this post replaces: its turn's, or the one of a turn it reports as failed."""
        suffix = post.key + ":"
        mine = self._thinking.get(discussion.id, {})
        for key, (name, task) in list(mine.items()):
            if key == post.key or (post.kind in ("notice", "error") and (key + ":") in suffix):
                self._forget_placeholder(discussion.id, key)
                with contextlib.suppress(Exception):
                    ts = await task
                    return (key, name, ts) if ts else None
                return None
        index = self._index.get(discussion.id)
        found = index.placeholders.pop(post.key, None) if index is not None else None
        return (post.key, "", found) if found else None

    async def _settle_placeholders(self, discussion: Discussion, text: str, named_by: str | None = None) -> None:
        """Placeholders whose turns bring no post of their own: a blocked step (its note), the roster in the header
        (no `text`: removed, the header says it; only the turn a header's key names: a header redrawn for a pause
        leaves the turns being written alone)."""
        client = await self.client_for(discussion.workspace)
        for key, (name, task) in list(self._thinking.get(discussion.id, {}).items()):
            if named_by is not None and not named_by.endswith(f":{key}"):
                continue
            self._forget_placeholder(discussion.id, key)
            ts: str | None = None
            try:
                ts = await task
                filled = bool(ts and text) and await self._fill(client, discussion.channel, str(ts),
                                                                note(text.format(name=name)))
            except Exception:  # never shown; or the note refused, when the placeholder itself must still go
                filled = False
            if ts and not filled:  # no edit to spare: the note is a courtesy
                await self._discard(discussion, client, (key, name, ts))

    def _forget_placeholder(self, discussion_id: str, key: str) -> None:
        mine = self._thinking.get(discussion_id, {})
        mine.pop(key, None)
        if not mine:
            self._thinking.pop(discussion_id, None)
        self._live.forget(key)
        self._live_edits.pop(key, None)

    # recovery ---------------------------------------------------------------------------------------
    async def _taken_over(self, discussion: Discussion) -> ThreadIndex | None:
        """A discussion this process did not start: the placeholders a dead driver left are posts of unknown fate
        too, looked for once per process in the one page after the newest post the database knows was sent
        (its turns' placeholders went out after it), if the workspace's budget has that read to spare right now:
        a takeover never waits for it (a replica that died with many discussions would wait minutes for reads
        Slack allows once a minute). None for a discussion this process started."""
        if discussion.id in self._fresh:
            return None
        index = self._index.get(discussion.id)
        if index is not None:
            return index
        reading = self._reading.get(discussion.id)
        if reading is None:  # parallel turns share the one read
            reading = self._reading[discussion.id] = asyncio.ensure_future(self._read_thread(discussion, "spare"))
        try:
            return await asyncio.shield(reading)
        finally:
            if reading.done():
                self._reading.pop(discussion.id, None)

    async def _read_thread(self, discussion: Discussion, priority: str = "final") -> ThreadIndex:
        """One page of the thread after the newest post the database knows was sent: a post whose fate is
        unknown (its sender died, or its answer was lost) went out after it, if at all."""
        index = ThreadIndex(read_at=time.monotonic())
        marked = PRIORITY.set(priority)
        try:
            client = await self.client_for(discussion.workspace)
            after = await self.last_ref(discussion.id) if self.last_ref is not None else ""
            for message in await self._page(client, discussion, after):
                meta = message.get("metadata") or {}
                payload = meta.get("event_payload") or {}
                key = str(payload.get("key") or "")
                if int(payload.get("piece") or 0):  # a later piece of a part re-rendered plain: the part is its first
                    continue
                if meta.get("event_type") == EVENT_TYPE and key:
                    index.posts.setdefault(key, {})[int(payload.get("part") or 0)] = str(message["ts"])
                elif meta.get("event_type") == THINKING_EVENT and key:
                    index.placeholders[key] = str(message["ts"])
        except Skipped:
            log.info("no thread read to spare for %s; its placeholders are posted anew", discussion.id)
        except SlackApiError as exc:
            log.warning("could not read thread of %s: %s", discussion.id, exc.response.get("error"))
        except Exception:
            log.warning("could not read thread of %s", discussion.id, exc_info=True)
        finally:
            PRIORITY.reset(marked)
        self._index[discussion.id] = index
        return index

    @staticmethod
    async def _page(client: AsyncWebClient, discussion: Discussion, after: str) -> list[dict[str, Any]]:
        if discussion.thread_ref:
            resp = await client.conversations_replies(channel=discussion.channel, ts=discussion.thread_ref,
                                                      oldest=after or discussion.thread_ref, inclusive=not after,
                                                      include_all_metadata=True, limit=PAGE)
        else:  # the header itself is what went missing: it went out soon after the discussion started
            start = discussion.created_at.timestamp()
            resp = await client.conversations_history(channel=discussion.channel, oldest=str(start - 5),
                                                      latest=str(start + HEADER_WITHIN_S), include_all_metadata=True,
                                                      limit=PAGE)
        return list(resp.get("messages") or [])
