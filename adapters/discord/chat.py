"""Discord as a ChatPort: a thread per discussion, personas through one webhook per channel, found again by key."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any, Literal

import discord
from discord.http import Route

from adapters.discord import document, render
from adapters.discord.indicator import Typing
from adapters.discord.places import Places
from core.models import Discussion, Persona, Post, PostFile
from core.ports import CannotPost, PlaceholderShown
from core.running.live import ChannelBudget
from core.storage.store import Store

log = logging.getLogger(__name__)
THREAD_EXISTS = 160004
TAG_REQUIRED = 40067  # a forum that requires a tag refused a post without one
UNKNOWN_CHANNEL = 10003
ARCHIVE_MINUTES: Literal[10080] = 10080  # a week: the longest Discord allows
LIVE_GAP_S = 1.0  # live-text calls per channel at most this often, whatever the number of turns writing at once
SCAN_LIMIT = 100
FILES_REFUSED = "-# (charts left out: I may not attach files in this channel; give me *Attach Files* to see them)"


REACTIONS = {"heard": "👀", "answered": "✅"}  # a mark on a person's message, by its name


@dataclass(frozen=True)
class Ref:
    """Where a post lives: `<message id>` for a header (its id is the thread's), else `<channel>:<ids>[:<hook>]`."""

    channel: str
    ids: tuple[str, ...]
    webhook: str = ""

    @classmethod
    def parse(cls, ref: str, d: Discussion) -> Ref:
        parts = ref.split(":")
        if len(parts) == 1:
            return cls(d.channel, (ref,))
        return cls(parts[0], tuple(parts[1].split(",")), parts[2] if len(parts) > 2 else "")

    def __str__(self) -> str:
        return f"{self.channel}:{','.join(self.ids)}" + (f":{self.webhook}" if self.webhook else "")


def nonce(key: str, part: int) -> str:
    """Discord nonces are at most 25 characters; with enforce_nonce a resend returns the first message."""
    return hashlib.sha256(f"{key}#{part}".encode()).hexdigest()[:25]


def with_components(body: dict[str, Any]) -> dict[str, str]:
    """Discord drops a webhook message's components unless the query asks it to use them (an edit that clears
    them must ask too)."""
    return {"with_components": "true"} if "components" in body else {}


def announcement_marker(key: str) -> str:
    """Discord keeps no message metadata: an announcement names its key in a line of subtext."""
    return f"-# ref {key}"


class DiscordChat:
    def __init__(self, client: discord.Client | None = None, store: Store | None = None) -> None:
        self.client: discord.Client | None = client
        self.store = store
        self.reply_button = False  # set when the Message Content intent is unavailable
        self.places = Places(lambda: self.client)
        self._typing = Typing(lambda: self.http)
        self._live: dict[str, tuple[str, str, str]] = {}  # turn key -> (channel, message id, webhook id)
        self._budget = ChannelBudget(LIVE_GAP_S)
        self.placeholders: PlaceholderShown | None = None  # records each live message (the wiring sets it)

    def attach(self, client: discord.Client, store: Store | None = None, *, reply_button: bool = False) -> None:
        self.client, self.reply_button = client, reply_button
        if store is not None:
            self.store = store

    @property
    def http(self) -> discord.http.HTTPClient:
        assert self.client is not None, "DiscordChat used before a client was attached"
        return self.client.http

    # ChatPort --------------------------------------------------------------------------------------
    async def publish(self, discussion: Discussion, post: Post) -> str:
        try:
            return await self._publish(discussion, post)
        except discord.Forbidden as exc:
            raise CannotPost("I may no longer see or post in that channel") from exc
        except discord.NotFound as exc:
            if exc.code == UNKNOWN_CHANNEL:
                raise CannotPost("the channel or thread was deleted") from exc
            raise
        except discord.HTTPException as exc:
            if exc.code == TAG_REQUIRED:  # only someone changing the forum's tags can help: no retry will
                raise CannotPost("the forum requires a tag on each post and has none I may apply (a tag anyone "
                                 "may use, or Manage Threads for me, lets me post)") from exc
            raise

    async def _publish(self, discussion: Discussion, post: Post) -> str:
        if post.kind == "reaction":  # a mark on a person's message (Add Reactions), no message of its own
            where = Ref.parse(post.reacts_to, discussion)
            try:
                await self.http.add_reaction(int(where.channel), int(where.ids[0]), REACTIONS[post.text])
            except (discord.NotFound, discord.Forbidden) as exc:  # deleted since, or no Add Reactions: a courtesy
                log.warning("could not mark %s as %s: %s", post.reacts_to, post.text, exc)
            return post.reacts_to
        if post.kind == "document":
            target = discussion.thread_ref or discussion.channel
            try:
                sent = await document.send(self.http, target, post, nonce(post.key, 0))
            except discord.Forbidden:  # no Attach Files here: the note and the page link stand, saying why
                log.warning("may not attach %s in %s; saying so instead", document.FILENAME, target)
                sent = await self._send(target, render.Message(content=document.refused(post)), nonce(post.key, 1))
            return str(Ref(target, (sent,)))
        self._typing.done(discussion, post)
        d = discussion
        if post.kind == "header" and not d.thread_ref:
            return await self._publish_header(d, post)
        target = d.thread_ref or d.channel
        hook = await self.places.webhook(d.channel) if post.persona is not None else None
        messages = self._render(d, post, webhook=hook is not None)
        for key in [k for k in self._live if post.kind in ("notice", "error") and post.key.startswith(k + ":")]:
            with contextlib.suppress(discord.HTTPException, LookupError):  # a failed turn's words stop growing
                await self._edit_live(d, self._live.pop(key), render.Message(content="-# (this turn did not finish)"))
        grown = self._live.pop(post.key, None)
        self._budget.forget(post.key)
        if grown is not None and hook is not None and grown[2] == hook[0] and await self._edit_live(
                d, grown, messages[0]):  # the live message becomes the finished post's first part
            ids = [grown[1], *await self._send_parts(d, target, hook, post, messages, start=1)]
            return str(Ref(target, tuple(ids), hook[0]))
        ids = await self._send_parts(d, target, hook, post, messages)
        if post.files:  # a message of their own after the post, outside its ref (recovery compares texts)
            await self.attach_files(d, target, post)
        return str(Ref(target, tuple(ids), hook[0] if hook else ""))

    async def update(self, discussion: Discussion, ref: str, post: Post) -> None:
        if post.kind == "document":  # the same message, with the new file in place of the old
            where = Ref.parse(ref, discussion)
            try:
                await document.replace(self.http, where.channel, where.ids[0], post)
            except discord.Forbidden:
                log.warning("may not attach %s in %s; the note stays as it was", document.FILENAME, where.channel)
            return
        self._typing.done(discussion, post)
        where = Ref.parse(ref, discussion)
        if ":" not in ref and await self.places.is_forum(discussion.channel):
            where = Ref(ref, where.ids)  # a forum post's first message lives in the post (the thread) itself
        messages = self._render(discussion, post, webhook=bool(where.webhook))
        for message_id, message in zip(where.ids, messages, strict=False):
            body = message.payload(editing=True)
            if where.webhook:
                hook = await self.places.hook_by_id(discussion.channel, where.webhook)
                route = Route("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}",
                              webhook_id=hook[0], webhook_token=hook[1], message_id=message_id)
                params = self._thread_param(discussion, where.channel) | with_components(body)
            else:
                route = Route("PATCH", "/channels/{channel_id}/messages/{message_id}", channel_id=where.channel,
                              message_id=message_id)
                params = {}
            try:
                await self.http.request(route, json=body, params=params)
            except discord.NotFound:
                # Someone deleted the message: there is nothing left to edit, and the thread must go on.
                log.warning("message %s of %s is gone; skipping its edit", message_id, discussion.id)

    async def find(self, discussion: Discussion, key: str) -> str | None:
        """After a crash: our unclaimed recent messages that look exactly like the post with this key.

        A split post cut short (its first parts posted, then a refusal or a crash) is completed here: only the
        parts that never landed are sent, so nothing shows twice. The core records the ref find() returns, so
        this is the one place a ref naming every part can come from (update() cannot change it)."""
        post, claimed = await self._outbox_entry(discussion, key)
        if post is None:
            return None
        header = post.kind == "header"
        if header and await self.places.is_forum(discussion.channel):
            return await self._find_forum_post(discussion, post, claimed)
        channel = discussion.channel if header else (discussion.thread_ref or discussion.channel)
        hook = await self.places.webhook(discussion.channel) if post.persona is not None else None
        messages = self._render(discussion, post, webhook=hook is not None)
        wanted = [m.signature() for m in messages]
        author = hook[0] if hook else self._bot_id()
        recent: list[dict[str, Any]] = list(await self.http.logs_from(channel, SCAN_LIMIT))  # type: ignore[arg-type]
        mine = [m for m in reversed(recent) if m["id"] not in claimed and self._authored(m, author, bool(hook))]
        ids: list[str] = []
        for m in mine:
            if len(ids) < len(wanted) and self._signature(m) == wanted[len(ids)]:
                ids.append(str(m["id"]))
        if not ids:
            return None
        if header:
            await self._open_thread(discussion, ids[0], post)
            return ids[0]
        if len(ids) < len(wanted):  # parts go out in order: the first ones landed, the rest never did
            log.info("%s was cut short after part %s of %s; sending the rest", key, len(ids), len(wanted))
            ids += await self._send_parts(discussion, channel, hook, post, messages, start=len(ids))
        return str(Ref(channel, tuple(ids), hook[0] if hook else ""))

    async def _find_forum_post(self, d: Discussion, post: Post, claimed: set[str]) -> str | None:
        """A forum post this bot started for the header (starting one takes no nonce): an active thread of the
        forum with the header's name, owned by the bot, not recorded for another post, whose first message
        carries the header's title (its other words may have changed since)."""
        message = self._render(d, post, webhook=False)[0]
        title = message.embeds[0].title if message.embeds else None
        name, bot = render.thread_name(post.title), self._bot_id()
        active = await self.http.get_active_threads(int(d.workspace))
        for thread in active.get("threads", []):
            tid = str(thread["id"])
            if (str(thread.get("parent_id")) != d.channel or str(thread.get("owner_id")) != bot
                    or thread.get("name") != name or tid in claimed):
                continue
            try:
                first: dict[str, Any] = dict(await self.http.get_message(int(tid), int(tid)))  # type: ignore[arg-type]
            except discord.NotFound:
                continue
            if ((first.get("embeds") or [{}])[0].get("title"), str(first.get("content") or "")) == (
                    title, message.content):
                return tid
        return None

    async def thinking(self, discussion: Discussion, persona: Persona, key: str) -> None:
        self._typing.start(discussion.thread_ref or discussion.channel, key)

    async def attach_files(self, d: Discussion, target: str, post: Post) -> list[str]:
        """The post's charts as attachments of one bot message right after it, each described by its alt text
        (its nonce keeps a resend from showing twice). A chart is a courtesy: if Discord refuses it, the post
        stands and the refusal is logged."""
        caption = "📊 " + " · ".join(f.title or f.name for f in post.files)
        try:
            return [await self._send(target, render.Message(content=caption[:2000]), nonce(f"{post.key}:charts", 0),
                                     post.files)]
        except discord.Forbidden:
            log.warning("may not attach the charts of %s in %s; saying so instead", post.key, target)
            try:
                return [await self._send(target, render.Message(content=f"{caption}\n{FILES_REFUSED}"[:2000]),
                                         nonce(f"{post.key}:charts", 1))]
            except discord.HTTPException:
                log.warning("could not say that the charts of %s are missing", post.key, exc_info=True)
                return []
        except discord.HTTPException:
            log.warning("could not attach the charts of %s", post.key, exc_info=True)
            return []

    async def stream(self, discussion: Discussion, persona: Persona, key: str, text: str) -> None:
        """The words so far, under the persona's name: one message, posted on the first words and edited after.
        Webhook edits share a rate limit, so after each turn's first words a channel gets one live call per
        LIVE_GAP_S, shared by its turns in turn;
        without a webhook the typing indicator is all there is."""
        d = discussion
        hook = await self.places.webhook(d.channel)
        if hook is None or not self._budget.allow(d.channel, key):
            return
        message = render.live(text)
        held = self._live.get(key)
        if held is None:
            target = d.thread_ref or d.channel
            self._live[key] = held = (target, await self._via_webhook(d, target, hook, persona, message), hook[0])
            await self._report_live(d, key, held)
        else:
            await self._edit_live(d, held, message)

    async def _report_live(self, d: Discussion, key: str, held: tuple[str, str, str]) -> None:
        """Recorded at once, so a process taking over after a crash removes it rather than leave it "writing…"."""
        if self.placeholders is None:
            return
        try:
            await self.placeholders(d, key, str(Ref(held[0], (held[1],), held[2])))
        except Exception:  # the words still show; only a crash before the post would leave this one behind
            log.warning("could not record the live message of %s", key, exc_info=True)

    async def retract(self, discussion: Discussion, ref: str) -> None:
        """Delete a live message a dead process left (through the webhook that sent it, in its thread)."""
        where = Ref.parse(ref, discussion)
        for key in [k for k, held in self._live.items() if held[1] in where.ids]:
            self._live.pop(key, None)
        hook = await self.places.hook_by_id(discussion.channel, where.webhook)
        for message_id in where.ids:
            route = Route("DELETE", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}",
                          webhook_id=hook[0], webhook_token=hook[1], message_id=message_id)
            with contextlib.suppress(discord.NotFound):  # already gone: nothing is left to remove
                await self.http.request(route, params=self._thread_param(discussion, where.channel))

    async def _edit_live(self, d: Discussion, held: tuple[str, str, str], message: render.Message) -> bool:
        channel, message_id, webhook_id = held
        hook = await self.places.hook_by_id(d.channel, webhook_id)
        route = Route("PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}",
                      webhook_id=hook[0], webhook_token=hook[1], message_id=message_id)
        body = message.payload(editing=True)
        try:
            await self.http.request(route, json=body, params=self._thread_param(d, channel) | with_components(body))
        except discord.NotFound:
            return False  # deleted meanwhile: the finished post goes out as a new message
        return True

    async def announce(self, workspace: str, channel: str, post: Post) -> str:
        """A top-level message; a small `ref` line carries its key so find_announcement can spot it later."""
        marked = post.model_copy(update={"text": f"{post.text}\n{announcement_marker(post.key)}"})
        parts = render.render(marked, webhook=False)
        # A retry of a split announcement (its words kept as written) skips the parts that landed before: a nonce
        # only protects a resend for a few minutes.
        ids = await self._landed(channel, parts[:-1]) if len(parts) > 1 else []
        for part, m in enumerate(parts[len(ids):], start=len(ids)):
            last = part == len(parts) - 1  # the charts ride on the last part: still one message per part
            ids.append(await self._send_with_files(channel, m, nonce(post.key, part), post.files if last else None))
        return str(Ref(channel, tuple(ids)))

    async def _landed(self, channel: str, parts: list[render.Message]) -> list[str]:
        """The ids of the first of these parts that are already among the channel's recent bot messages, in order."""
        try:
            recent: list[dict[str, Any]] = list(await self.http.logs_from(channel, SCAN_LIMIT))  # type: ignore[arg-type]
        except discord.HTTPException:
            log.warning("could not read %s to resume an announcement; sending all of it", channel, exc_info=True)
            return []
        bot, ids = self._bot_id(), list[str]()
        for m in reversed(recent):  # oldest first
            if len(ids) < len(parts) and self._authored(m, bot, False) and m.get("content") == parts[len(ids)].content:
                ids.append(str(m["id"]))
        return ids

    async def _send_with_files(self, channel: str, message: render.Message, nonce_value: str,
                               files: list[PostFile] | None) -> str:
        """A bot message with its files; where Discord refuses them (no Attach Files), without them, saying so."""
        try:
            return await self._send(channel, message, nonce_value, files)
        except discord.Forbidden:
            if not files:
                raise
            log.warning("may not attach files in %s; sending the message without them", channel)
        note = f"{message.content}\n{FILES_REFUSED}"
        bare = render.Message(content=note if len(note) <= render.CONTENT_MAX else message.content,
                              embeds=message.embeds, view=message.view, mentions=message.mentions)
        return await self._send(channel, bare, nonce_value)

    async def find_announcement(self, workspace: str, channel: str, key: str) -> str | None:
        marker, bot = announcement_marker(key), self._bot_id()
        recent: list[dict[str, Any]] = list(await self.http.logs_from(channel, SCAN_LIMIT))  # type: ignore[arg-type]
        found = next((m for m in recent
                      if self._authored(m, bot, False) and marker in str(m.get("content") or "").splitlines()), None)
        return str(Ref(channel, (str(found["id"]),))) if found else None

    async def tell(self, discussion: Discussion, user_id: str, post: Post) -> None:
        """A direct message (buttons included: they carry the discussion id, so they work from there too)."""
        dm = await self.http.start_private_message(int(user_id))
        for part, message in enumerate(render.render(post, webhook=False)):
            await self._send(str(dm["id"]), message, nonce(post.key, part))

    async def link(self, discussion: Discussion) -> str:
        place = discussion.thread_ref or discussion.channel
        return f"https://discord.com/channels/{discussion.workspace}/{place}" if place else ""

    async def close(self) -> None:
        self._typing.close()

    # sending ---------------------------------------------------------------------------------------
    def _render(self, d: Discussion, post: Post, *, webhook: bool) -> list[render.Message]:
        return render.render(post, webhook=webhook, reply_to=d.id if self.reply_button else "")

    async def _send(self, channel: str, message: render.Message, nonce_value: str,
                    files: list[PostFile] | None = None) -> str:
        """One bot message (with its nonce, so a resend is not shown twice); files go along as attachments."""
        body = message.payload() | {"nonce": nonce_value, "enforce_nonce": True}
        route = Route("POST", "/channels/{channel_id}/messages", channel_id=channel)
        if not files:
            return str((await self.http.request(route, json=body))["id"])
        body["attachments"] = [{"id": i, "filename": f.name, "description": f.alt[:1024]} for i, f in enumerate(files)]
        form: list[dict[str, Any]] = [{"name": "payload_json", "value": json.dumps(body)},
                *({"name": f"files[{i}]", "value": f.data, "filename": f.name, "content_type": "image/png"}
                  for i, f in enumerate(files))]
        return str((await self.http.request(route, form=form))["id"])

    async def _publish_header(self, d: Discussion, post: Post) -> str:
        message, *more = self._render(d, post, webhook=False)
        if await self.places.is_forum(d.channel):  # a forum takes no plain messages: the header starts a forum post
            body = {"name": render.thread_name(post.title), "auto_archive_duration": ARCHIVE_MINUTES,
                    "message": message.payload()}
            route = Route("POST", "/channels/{channel_id}/threads", channel_id=d.channel)
            tags = await self.places.forum_tags(d.channel)
            chosen = await self._chosen_tag(d)
            if chosen in tags.usable:  # the tag people chose for this forum, while the bot may still apply it
                body["applied_tags"] = [chosen]
            elif tags.required and tags.usable:
                body["applied_tags"] = tags.usable[:1]
            try:
                started = str((await self.http.request(route, json=body))["id"])  # its first message has its id
            except discord.HTTPException as exc:
                if exc.code != TAG_REQUIRED or "applied_tags" in body:
                    raise
                tags = await self.places.forum_tags(d.channel, fresh=True)  # the cache missed the forum's change
                if not tags.usable:
                    raise
                body["applied_tags"] = [chosen] if chosen in tags.usable else tags.usable[:1]
                started = str((await self.http.request(route, json=body))["id"])
            await self._send_rest(started, post, more)
            return started
        message_id = await self._send(d.channel, message, nonce(post.key, 0))
        await self._open_thread(d, message_id, post)
        await self._send_rest(message_id, post, more)
        return message_id  # a thread started on a message has that message's id

    async def _send_rest(self, thread: str, post: Post, more: list[render.Message]) -> None:
        """A header longer than one message's embeds allow: the rest of it, first in its thread."""
        for part, message in enumerate(more, start=1):
            await self._send(thread, message, nonce(post.key, part))

    async def _chosen_tag(self, d: Discussion) -> str:
        """The tag `/council-config tag:` chose for new posts in the discussion's forum ("" when none)."""
        if self.store is None:
            return ""
        async with self.store.tx() as tx:
            return await tx.channel_tag("discord", d.workspace, d.channel)

    async def _open_thread(self, d: Discussion, message_id: str, post: Post) -> None:
        try:
            await self.http.start_thread_with_message(d.channel, message_id, name=render.thread_name(post.title),
                                                      auto_archive_duration=ARCHIVE_MINUTES)
        except discord.HTTPException as exc:
            if exc.code != THREAD_EXISTS:
                raise

    async def _send_parts(self, d: Discussion, target: str, hook: tuple[str, str] | None, post: Post,
                          messages: list[render.Message], start: int = 0) -> list[str]:
        """Send `messages[start:]` in order: a persona's through the webhook, the rest as the bot (with nonces)."""
        ids = []
        for part, message in enumerate(messages[start:], start=start):
            if hook is not None and post.persona is not None:
                ids.append(await self._via_webhook(d, target, hook, post.persona, message))
            else:
                ids.append(await self._send(target, message, nonce(post.key, part)))
        return ids

    async def _via_webhook(self, d: Discussion, target: str, hook: tuple[str, str], persona: Persona,
                           message: render.Message) -> str:
        """One message under the persona's name. Webhooks take no nonce: a resend is never deduplicated."""
        body = message.payload() | render.identity(persona)
        route = Route("POST", "/webhooks/{webhook_id}/{webhook_token}", webhook_id=hook[0], webhook_token=hook[1])
        params = {"wait": "true", **self._thread_param(d, target), **with_components(body)}
        try:
            data = await self.http.request(route, json=body, params=params)
        except (discord.NotFound, discord.Forbidden):
            self.places.forget(d.channel)
            raise
        return str(data["id"])

    @staticmethod
    def _thread_param(d: Discussion, channel: str) -> dict[str, str]:
        return {"thread_id": channel} if channel != d.channel else {}

    def _bot_id(self) -> str:
        user = self.client.user if self.client else None
        return str(user.id) if user else ""

    # recovery --------------------------------------------------------------------------------------
    async def _outbox_entry(self, d: Discussion, key: str) -> tuple[Post | None, set[str]]:
        """The queued post with this key, and the message ids already recorded for other posts."""
        if self.store is None:
            return None, set()
        async with self.store.tx() as tx:
            rows = await tx.posts(d.id)
        post = next((p for p, _ in rows if p.key == key), None)
        claimed = {i for other, ref in rows if ref and key not in (other.key, other.replaces)
                   for i in Ref.parse(ref, d).ids}  # an edit of this post names its messages too
        return post, claimed

    @staticmethod
    def _authored(m: dict[str, Any], author: str, webhook: bool) -> bool:
        if webhook:
            return str(m.get("webhook_id") or "") == author
        return not m.get("webhook_id") and str(m.get("author", {}).get("id")) == author

    @staticmethod
    def _signature(m: dict[str, Any]) -> tuple[str, str]:
        embed = (m.get("embeds") or [{}])[0]
        return str(m.get("content") or ""), str(embed.get("title") or "") + str(embed.get("description") or "")
