"""REST handlers of the fake Discord: each validates like Discord's documented API and records its effect."""

from __future__ import annotations

import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes import discord_rules as r

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord

Match = re.Match[str]
EPHEMERAL = 1 << 6
HAS_THREAD = 1 << 5
FORBIDDEN_NAMES = ("discord", "clyde")


def invalid(fake: FakeDiscord, why: str) -> web.Response:
    return fake.error(400, 50035, f"Invalid Form Body: {why}")


def refused(fake: FakeDiscord, cid: str, *needed: int) -> web.Response | None:
    """403 unless the bot holds these permissions in the channel: Missing Access without View Channel,
    else Missing Permissions."""
    perms = fake.permissions_in(cid)
    if not perms & r.VIEW_CHANNEL:
        return fake.error(403, 50001, "Missing Access")
    if r.missing(perms, *needed):
        return fake.error(403, 50013, "Missing Permissions")
    return None


def send_permission(fake: FakeDiscord, cid: str) -> int:
    return r.SEND_MESSAGES_IN_THREADS if fake.channels[cid]["type"] in r.THREADS else r.SEND_MESSAGES


def embeds_refused(fake: FakeDiscord, cid: str, body: dict[str, Any]) -> web.Response | None:
    """Without Embed Links a bot's embeds are dropped; a message of embeds alone is refused."""
    if body.get("embeds") and not fake.permissions_in(cid) & r.EMBED_LINKS:
        if not (body.get("content") or body.get("components") or body.get("_files")):
            return fake.error(403, 50013, "Missing Permissions")
        body["embeds"] = []
    return None


def truthy(value: str | None) -> bool:
    return value in ("true", "True", "1")


def check_limits(fake: FakeDiscord, body: dict[str, Any]) -> web.Response | None:
    """What a new message and an edit alike must keep within: content, every embed limit, select menus' options."""
    if len(body.get("content") or "") > 2000:
        return invalid(fake, "content: Must be 2000 or fewer in length.")
    if errors := r.embed_errors(body.get("embeds") or []) or r.select_errors(body.get("components") or []):
        return fake.error(400, 50035, "Invalid Form Body", errors)
    return None


def check_body(fake: FakeDiscord, body: dict[str, Any], *, webhook: bool = False) -> web.Response | None:
    content = body.get("content") or ""
    if (bad := check_limits(fake, body)) is not None:
        return bad
    if not (content or body.get("embeds") or body.get("components") or body.get("_files")):
        return fake.error(400, 50006, "Cannot send an empty message")
    rows = body.get("components") or []
    if len(rows) > 5:
        return invalid(fake, "components: Must be 5 or fewer in length.")
    for row in rows:
        items = row.get("components", [])
        if len(items) > 5:
            return invalid(fake, "components.components: Must be 5 or fewer in length.")
        for item in items:
            if len(item.get("custom_id", "")) > 100 or len(item.get("label", "")) > 80:
                return invalid(fake, "custom_id or label too long")
    if webhook and "username" in body:
        name = body["username"]
        if not 1 <= len(name) <= 80 or any(w in name.lower() for w in FORBIDDEN_NAMES) or name.lower() in (
                "everyone", "here"):
            return invalid(fake, "username: invalid")
    if body.get("nonce") is not None and len(str(body["nonce"])) > 25:
        return invalid(fake, "nonce: Must be 25 or fewer in length.")
    return None


async def me(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    return fake.ok(fake.bot)


async def application(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    return fake.ok({"id": fake.app_id, "name": "Council", "icon": None, "description": "", "rpc_origins": [],
                    "bot_public": True, "bot_require_code_grant": False, "bot": fake.bot, "verify_key": "0" * 64,
                    "owner": p.user(fake.owner_id, "Owner"), "team": None, "flags": fake.app_flags,
                    "summary": "", "tags": [], "interactions_endpoint_url": None})


async def gateway_bot(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    return fake.ok({"url": f"ws://127.0.0.1:{fake.port}/gateway", "shards": fake.shards,
                    "session_start_limit": {"total": 1000, "remaining": 999, "reset_after": 0,
                                            "max_concurrency": 1}})


async def my_guilds(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    after = int(request.query.get("after", "0"))
    guilds = [{"id": fake.guild_id, "name": "Council Test Guild", "icon": None, "owner": False,
               "permissions": p.ALL_PERMISSIONS, "features": []}]
    return fake.ok([g for g in guilds if int(g["id"]) > after])


NAME = re.compile(r"^[-_\w]{1,32}$")


def command_error(command: dict[str, Any]) -> str | None:
    """Discord's checks on an application command (chat input), as its API documents them."""
    names = [command.get("name", ""), *[o.get("name", "") for o in command.get("options") or []]]
    if any(not NAME.match(n) or n != n.lower() for n in names):
        return "name: must be 1-32 lowercase letters, digits, - or _"
    options = command.get("options") or []
    if not 1 <= len(command.get("description") or "") <= 100 or len(options) > 25:
        return "description must be 1-100 characters; at most 25 options"
    if len(set(names[1:])) != len(options):
        return "options: names must be unique"
    required = [bool(o.get("required")) for o in options]
    if required != sorted(required, reverse=True):
        return "options: required options must be placed before non-required options"
    for o in options:
        if not 1 <= len(o.get("description") or "") <= 100:
            return f"options.{o['name']}.description: must be 1-100 characters"
        if o.get("choices") and (o.get("autocomplete") or len(o["choices"]) > 25):
            return f"options.{o['name']}: at most 25 choices, and never with autocomplete"
    return None


async def put_commands(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    for c in body:
        if (why := command_error(c)) is not None:
            return invalid(fake, why)
    # Each command that is new or changed counts as a create: at most 200 a day, then a 429 until the day ends.
    before = {c["name"]: {k: c.get(k) for k in ("description", "options")} for c in fake.commands}
    creates = sum(1 for c in body if before.get(c["name"]) != {k: c.get(k) for k in ("description", "options")})
    day = int(fake.clock() // 86400)
    if creates and fake.command_creates.get(day, 0) + creates > r.COMMAND_CREATES_PER_DAY:
        fake.limits.answered_429 += 1
        return fake.limited((day + 1) * 86400 - fake.clock(), fake.limits.bucket("PUT", request.path), scope="shared")
    fake.command_creates[day] = fake.command_creates.get(day, 0) + creates
    fake.commands = [{**c, "id": p.snowflake(), "application_id": fake.app_id, "version": p.snowflake(),
                      "default_member_permissions": c.get("default_member_permissions"), "type": c.get("type", 1)}
                     for c in body]
    return fake.ok(fake.commands)


async def get_channel(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    channel = fake.channels.get(m["cid"])
    return fake.ok(channel) if channel else fake.error(404, 10003, "Unknown Channel")


async def edit_channel(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    channel = fake.channels.get(m["cid"])
    if channel is None:
        return fake.error(404, 10003, "Unknown Channel")
    if "archived" in body and "thread_metadata" in channel:
        channel["thread_metadata"]["archived"] = bool(body["archived"])
    return fake.ok(channel)


async def list_messages(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    if m["cid"] not in fake.channels:
        return fake.error(404, 10003, "Unknown Channel")
    if (no := refused(fake, m["cid"], r.READ_MESSAGE_HISTORY)) is not None:
        return no
    if fake.channels[m["cid"]]["type"] == r.FORUM:
        return fake.error(400, 50024, "Cannot execute action on this channel type")
    limit = min(100, int(request.query.get("limit", "50")))
    newest_first = list(reversed(fake.messages.get(m["cid"], [])))
    if "before" in request.query:
        newest_first = [x for x in newest_first if int(x["id"]) < int(request.query["before"])]
    return fake.ok(newest_first[:limit])


def find_message(fake: FakeDiscord, cid: str, mid: str) -> dict[str, Any] | None:
    return next((x for x in fake.messages.get(cid, []) if x["id"] == mid), None)


async def get_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    if m["cid"] in fake.channels and (no := refused(fake, m["cid"], r.READ_MESSAGE_HISTORY)) is not None:
        return no
    msg = find_message(fake, m["cid"], m["mid"])
    return fake.ok(msg) if msg else fake.error(404, 10008, "Unknown Message")


async def store(fake: FakeDiscord, cid: str, msg: dict[str, Any]) -> dict[str, Any]:
    fake.messages.setdefault(cid, []).append(msg)
    channel = fake.channels[cid]
    channel["last_message_id"] = msg["id"]
    if "thread_metadata" in channel:
        channel["thread_metadata"]["archived"] = False  # a new message unarchives (the thread is not locked)
    await fake.dispatch("MESSAGE_CREATE", {**msg, "guild_id": fake.guild_id})
    return msg


async def create_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    cid = m["cid"]
    if cid not in fake.channels:
        return fake.error(404, 10003, "Unknown Channel")
    if (bad := check_body(fake, body)) is not None:
        return bad
    kind = fake.channels[cid]["type"]
    if kind == r.FORUM:
        return fake.error(400, 50008, "Cannot send messages in a non-text channel")
    if kind != r.DM and (no := refused(fake, cid, send_permission(fake, cid))) is not None:
        return no
    if kind != r.DM and body.get("attachments") and (no := refused(fake, cid, r.ATTACH_FILES)) is not None:
        return no
    if kind != r.DM and (no := embeds_refused(fake, cid, body)) is not None:
        return no
    nonce = body.get("nonce")
    if nonce is not None and body.get("enforce_nonce"):
        seen = fake.nonces.get((cid, fake.app_id, str(nonce)))
        if seen is not None and fake.clock() - seen[0] < r.NONCE_WINDOW_S:
            return fake.ok(seen[1])
    msg = p.message(p.snowflake(), cid, fake.bot, body)
    files = body.get("_files") or {}
    for a in body.get("attachments") or []:
        f = files.get(str(a.get("id")))
        if f is None:
            return invalid(fake, f"attachments.{a.get('id')}: no file part for this attachment")
        if len(a.get("description") or "") > 1024:
            return invalid(fake, "attachments.description: Must be 1024 or fewer in length.")
        aid = p.snowflake()
        fake.files[aid] = bytes(f["data"])
        msg["attachments"].append({"id": aid, "filename": f["filename"], "size": len(f["data"]),
                                   "description": a.get("description"), "url": f"https://cdn.invalid/{f['filename']}",
                                   "proxy_url": f"https://cdn.invalid/{f['filename']}"})
    if nonce is not None:
        fake.nonces[(cid, fake.app_id, str(nonce))] = (fake.clock(), msg)
    return fake.ok(await store(fake, cid, msg))


async def edit_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    msg = find_message(fake, m["cid"], m["mid"])
    if msg is None:
        return fake.error(404, 10008, "Unknown Message")
    if msg["author"]["id"] != fake.app_id or msg.get("webhook_id"):
        return fake.error(403, 50005, "Cannot edit a message authored by another user")
    if (bad := check_limits(fake, body)) is not None:
        return bad
    if fake.channels[m["cid"]]["type"] != r.DM and ((no := refused(fake, m["cid"])) is not None or
                                                     (no := embeds_refused(fake, m["cid"], body)) is not None):
        return no
    if fake.channels[m["cid"]]["type"] != r.DM and body.get("_files") and \
            (no := refused(fake, m["cid"], r.ATTACH_FILES)) is not None:  # a new file needs Attach Files too
        return no
    return fake.ok(await apply_edit(fake, msg, body))


async def apply_edit(fake: FakeDiscord, msg: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    for key in ("content", "embeds", "components"):
        if key in body:
            msg[key] = body[key] if body[key] is not None else ([] if key != "content" else "")
    if "attachments" in body:  # kept by id, new ones from file parts; any left out of the list are removed
        kept = {str(a["id"]): a for a in msg["attachments"]}
        files = body.get("_files") or {}
        edited = []
        for a in body["attachments"]:
            if str(a.get("id")) in kept:
                edited.append(kept[str(a["id"])])
            elif (f := files.get(str(a.get("id")))) is not None:
                aid = p.snowflake()
                fake.files[aid] = bytes(f["data"])
                edited.append({"id": aid, "filename": f["filename"], "size": len(f["data"]),
                               "description": a.get("description"), "url": f"https://cdn.invalid/{f['filename']}",
                               "proxy_url": f"https://cdn.invalid/{f['filename']}"})
        msg["attachments"] = edited
    msg["edited_timestamp"] = p.iso_now()
    await fake.dispatch("MESSAGE_UPDATE", {**msg, "guild_id": fake.guild_id})
    return msg


async def start_thread(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    msg = find_message(fake, m["cid"], m["mid"])
    if msg is None:
        return fake.error(404, 10008, "Unknown Message")
    if msg["id"] in fake.channels:
        return fake.error(400, 160004, "A thread has already been created for this message")
    parent = fake.channels[m["cid"]]
    if parent["type"] not in (r.TEXT, r.ANNOUNCEMENT):  # voice and stage chats have no threads
        return fake.error(400, 50024, "Cannot execute action on this channel type")
    if (no := refused(fake, m["cid"], r.CREATE_PUBLIC_THREADS)) is not None:
        return no
    name = body.get("name") or ""
    if not 1 <= len(name) <= 100:
        return invalid(fake, "name: Must be between 1 and 100 in length.")
    thread = p.thread_channel(msg["id"], parent, fake.app_id, name, int(body.get("auto_archive_duration") or 4320))
    if parent["type"] == r.ANNOUNCEMENT:
        thread["type"] = r.ANNOUNCEMENT_THREAD
    fake.channels[thread["id"]] = thread
    fake.messages[thread["id"]] = []
    msg["thread"], msg["flags"] = thread, msg.get("flags", 0) | HAS_THREAD
    if fake.thread_events:
        await fake.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
    return fake.ok(thread, 201)


async def start_forum_post(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    """A forum post: a thread and its first message at once (the message's id is the thread's). Only forums
    (and media channels) take this with a message; voice and stage chats have no threads."""
    parent = fake.channels.get(m["cid"])
    if parent is None:
        return fake.error(404, 10003, "Unknown Channel")
    if parent["type"] != r.FORUM:
        return fake.error(400, 50024, "Cannot execute action on this channel type")
    if (no := refused(fake, m["cid"], r.SEND_MESSAGES)) is not None:
        return no
    name, first = body.get("name") or "", body.get("message")
    if not 1 <= len(name) <= 100:
        return invalid(fake, "name: Must be between 1 and 100 in length.")
    if not isinstance(first, dict):
        return invalid(fake, "message: a forum post starts with a message")
    if (bad := tags_refused(fake, parent, body.get("applied_tags"))) is not None:
        return bad
    if (bad := check_body(fake, first)) is not None or (bad := embeds_refused(fake, m["cid"], first)) is not None:
        return bad
    tid = p.snowflake()
    thread = p.thread_channel(tid, parent, fake.app_id, name, int(body.get("auto_archive_duration") or 4320))
    thread["applied_tags"] = [str(t) for t in body.get("applied_tags") or []]
    fake.channels[tid] = thread
    fake.messages[tid] = []
    if fake.thread_events:
        await fake.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
    msg = await store(fake, tid, p.message(tid, tid, fake.bot, first))
    return fake.ok({**thread, "message": msg}, 201)


def tags_refused(fake: FakeDiscord, forum: dict[str, Any], applied: Any) -> web.Response | None:
    """A forum post's `applied_tags`: ids of the forum's own tags, at most five; a moderated tag needs Manage
    Threads; a forum flagged REQUIRE_TAG refuses a post without one (40067)."""
    applied = [str(t) for t in applied or []]
    tags = {str(t["id"]): t for t in forum.get("available_tags") or []}
    if len(applied) > r.MAX_APPLIED_TAGS or any(t not in tags for t in applied):
        return invalid(fake, "applied_tags: tags must be among the forum's available tags, at most five")
    if any(tags[t]["moderated"] for t in applied) and not fake.permissions_in(forum["id"]) & r.MANAGE_THREADS:
        return fake.error(403, 50013, "Missing Permissions")
    if int(forum.get("flags") or 0) & r.REQUIRE_TAG and not applied:
        return fake.error(400, r.TAG_REQUIRED, "A tag is required to create a forum post in this channel")
    return None


async def active_threads(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    """The guild's threads that are not archived (forum posts among them), public ones the bot can see."""
    if m["gid"] != fake.guild_id:
        return fake.error(404, 10004, "Unknown Guild")
    threads = [c for c in fake.channels.values() if c["type"] in r.THREADS
               and not c["thread_metadata"]["archived"] and fake.permissions_in(c["id"]) & r.VIEW_CHANNEL]
    return fake.ok({"threads": threads, "members": []})


async def add_reaction(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    """PUT .../reactions/{emoji}/@me: needs Read Message History, and Add Reactions unless someone already put
    this emoji there; 204 whether or not the bot had already reacted (Create Reaction)."""
    msg = find_message(fake, m["cid"], m["mid"])
    if m["cid"] not in fake.channels:
        return fake.error(404, 10003, "Unknown Channel")
    if (no := refused(fake, m["cid"], r.READ_MESSAGE_HISTORY)) is not None:
        return no
    if msg is None:
        return fake.error(404, 10008, "Unknown Message")
    emoji = urllib.parse.unquote(m["emoji"])
    reactions: list[dict[str, Any]] = msg.setdefault("reactions", [])
    there = next((x for x in reactions if x["emoji"]["name"] == emoji), None)
    if there is None and (no := refused(fake, m["cid"], r.ADD_REACTIONS)) is not None:
        return no
    if there is None:
        reactions.append({"emoji": {"id": None, "name": emoji}, "count": 1, "me": True})
    elif not there["me"]:
        there["count"] += 1
        there["me"] = True
    return fake.ok(None, 204)


async def typing(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    if m["cid"] not in fake.channels:
        return fake.error(404, 10003, "Unknown Channel")
    if (no := refused(fake, m["cid"], send_permission(fake, m["cid"]))) is not None:
        return no
    return fake.ok(None, 204)
