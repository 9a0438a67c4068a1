"""REST handlers of the fake Discord: each validates like Discord's documented API and records its effect."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes import discord_payloads as p

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord

Match = re.Match[str]
EPHEMERAL = 1 << 6
HAS_THREAD = 1 << 5
FORBIDDEN_NAMES = ("discord", "clyde")


def invalid(fake: FakeDiscord, why: str) -> web.Response:
    return fake.error(400, 50035, f"Invalid Form Body: {why}")


def check_body(fake: FakeDiscord, body: dict[str, Any], *, webhook: bool = False) -> web.Response | None:
    content = body.get("content") or ""
    if len(content) > 2000:
        return invalid(fake, "content: Must be 2000 or fewer in length.")
    if not (content or body.get("embeds") or body.get("components") or body.get("_files")):
        return fake.error(400, 50006, "Cannot send an empty message")
    for e in body.get("embeds") or []:
        if len(e.get("description") or "") > 4096 or len(e.get("title") or "") > 256:
            return invalid(fake, "embeds: too long")
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
    limit = min(100, int(request.query.get("limit", "50")))
    newest_first = list(reversed(fake.messages.get(m["cid"], [])))
    if "before" in request.query:
        newest_first = [x for x in newest_first if int(x["id"]) < int(request.query["before"])]
    return fake.ok(newest_first[:limit])


def find_message(fake: FakeDiscord, cid: str, mid: str) -> dict[str, Any] | None:
    return next((x for x in fake.messages.get(cid, []) if x["id"] == mid), None)


async def get_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
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
    nonce = body.get("nonce")
    if nonce is not None and body.get("enforce_nonce"):
        seen = fake.nonces.get((cid, fake.app_id, str(nonce)))
        if seen is not None:
            return fake.ok(seen)
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
        fake.nonces[(cid, fake.app_id, str(nonce))] = msg
    return fake.ok(await store(fake, cid, msg))


async def edit_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    msg = find_message(fake, m["cid"], m["mid"])
    if msg is None:
        return fake.error(404, 10008, "Unknown Message")
    if msg["author"]["id"] != fake.app_id or msg.get("webhook_id"):
        return fake.error(403, 50005, "Cannot edit a message authored by another user")
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
    name = body.get("name") or ""
    if not 1 <= len(name) <= 100:
        return invalid(fake, "name: Must be between 1 and 100 in length.")
    thread = p.thread_channel(msg["id"], fake.channels[m["cid"]], fake.app_id, name,
                              int(body.get("auto_archive_duration") or 4320))
    fake.channels[thread["id"]] = thread
    fake.messages[thread["id"]] = []
    msg["thread"], msg["flags"] = thread, msg.get("flags", 0) | HAS_THREAD
    if fake.thread_events:
        await fake.dispatch("THREAD_CREATE", {**thread, "newly_created": True})
    return fake.ok(thread, 201)


async def typing(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    return fake.ok(None, 204)


async def list_webhooks(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    if not fake.manage_webhooks:
        return fake.error(403, 50013, "Missing Permissions")
    return fake.ok([w for w in fake.webhooks.values() if w["channel_id"] == m["cid"]])


async def create_webhook(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    if not fake.manage_webhooks:
        return fake.error(403, 50013, "Missing Permissions")
    channel = fake.channels.get(m["cid"])
    if channel is None or channel["type"] == 11:
        return invalid(fake, "webhooks belong to text channels, not threads")
    hook = {"id": p.snowflake(), "type": 1, "guild_id": fake.guild_id, "channel_id": m["cid"],
            "name": body["name"], "avatar": None, "token": f"wtoken-{p.snowflake()}",
            "application_id": fake.app_id, "user": fake.bot}
    fake.webhooks[hook["id"]] = hook
    return fake.ok(hook)


async def execute_webhook(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    wid, token = m["wid"], m["token"]
    if wid == fake.app_id:
        return await followup(fake, token, body)
    hook = fake.webhooks.get(wid)
    if hook is None or hook["token"] != token:
        return fake.error(404, 10015, "Unknown Webhook")
    if (bad := check_body(fake, body, webhook=True)) is not None:
        return bad
    cid = request.query.get("thread_id") or hook["channel_id"]
    target = fake.channels.get(cid)
    if target is None or (target["id"] != hook["channel_id"] and target.get("parent_id") != hook["channel_id"]):
        return fake.error(400, 10003, "Unknown Channel")
    author = {"id": wid, "username": body.get("username") or hook["name"], "discriminator": "0000",
              "avatar": None, "bot": True, "global_name": None, "public_flags": 0}
    msg = p.message(p.snowflake(), cid, author, body, webhook_id=wid, application_id=fake.app_id)
    msg["_avatar_url"] = body.get("avatar_url")
    await store(fake, cid, msg)
    if request.query.get("wait") in ("true", "True", "1"):
        return fake.ok(msg)
    return fake.ok(None, 204)


async def edit_webhook_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    wid, token, mid = m["wid"], m["token"], m["mid"]
    if wid == fake.app_id:
        record = next((i for i in fake.interactions.values() if i.token == token), None)
        if record is None:
            return fake.error(404, 10015, "Unknown Webhook")
        clicked = record.payload.get("message")
        if mid == "@original" and clicked is not None:  # a component's original response is the message it is on
            target = find_message(fake, clicked["channel_id"], clicked["id"])
            if target is None:
                return fake.error(404, 10008, "Unknown Message")
            record.edits.append(body)
            return fake.ok(await apply_edit(fake, target, body))
        record.followups.append({"original": True, **body})
        return fake.ok(p.message(p.snowflake(), record.payload["channel_id"], fake.bot, body))
    hook = fake.webhooks.get(wid)
    if hook is None or hook["token"] != token:
        return fake.error(404, 10015, "Unknown Webhook")
    cid = request.query.get("thread_id") or hook["channel_id"]
    msg = find_message(fake, cid, mid)
    if msg is None or msg.get("webhook_id") != wid:
        return fake.error(404, 10008, "Unknown Message")
    return fake.ok(await apply_edit(fake, msg, body))


async def followup(fake: FakeDiscord, token: str, body: dict[str, Any]) -> web.Response:
    record = next((i for i in fake.interactions.values() if i.token == token), None)
    if record is None:
        return fake.error(404, 10015, "Unknown Webhook")
    if not record.callbacks:
        return fake.error(404, 10015, "Unknown Webhook")  # followups need an acknowledged interaction
    record.followups.append(body)
    return fake.ok(p.message(p.snowflake(), record.payload["channel_id"], fake.bot, body))


async def callback(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    record = fake.interactions.get(m["iid"])
    if record is None or record.token != m["token"]:
        return fake.error(404, 10062, "Unknown interaction")
    if record.callbacks:
        return fake.error(400, 40060, "Interaction has already been acknowledged.")
    if (record.payload["type"] == 4) != (body.get("type") == 8):
        return invalid(fake, "type: autocomplete interactions are answered with type 8, and only they")
    if body.get("type") == 8:
        choices = (body.get("data") or {}).get("choices")
        if not isinstance(choices, list) or len(choices) > 25 or any(
                not 1 <= len(ch["name"]) <= 100 or len(str(ch["value"])) > 100 for ch in choices):
            return invalid(fake, "data.choices: at most 25, names 1-100 characters, values at most 100")
    record.callbacks.append(body)
    data = body.get("data") or {}
    ephemeral = bool(int(data.get("flags") or 0) & EPHEMERAL)
    answer: dict[str, Any] = {
        "interaction": {"id": record.id, "type": record.payload["type"], "response_message_loading":
                        body["type"] == 5, "response_message_ephemeral": ephemeral},
        "resource": {"type": body["type"]},
    }
    return fake.ok(answer)


async def open_dm(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    """A DM channel with one user (type 1), made once per user as Discord does."""
    uid = str(body.get("recipient_id") or "")
    found = next((c for c in fake.channels.values() if c["type"] == 1 and c["recipients"][0]["id"] == uid), None)
    if found is None:
        found = {"id": p.snowflake(), "type": 1, "last_message_id": None,
                 "recipients": [p.user(uid, f"user{uid[-4:]}")]}
        fake.channels[found["id"]] = found
    return fake.ok(found)


SNOW = r"\d+"
ROUTES = [
    ("POST", "/users/@me/channels", open_dm),
    ("GET", "/users/@me", me),
    ("GET", "/oauth2/applications/@me", application),
    ("GET", "/gateway/bot", gateway_bot),
    ("GET", "/users/@me/guilds", my_guilds),
    ("PUT", rf"/applications/{SNOW}/commands", put_commands),
    ("GET", rf"/channels/(?P<cid>{SNOW})", get_channel),
    ("PATCH", rf"/channels/(?P<cid>{SNOW})", edit_channel),
    ("GET", rf"/channels/(?P<cid>{SNOW})/messages", list_messages),
    ("POST", rf"/channels/(?P<cid>{SNOW})/messages", create_message),
    ("GET", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})", get_message),
    ("PATCH", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})", edit_message),
    ("POST", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})/threads", start_thread),
    ("POST", rf"/channels/(?P<cid>{SNOW})/typing", typing),
    ("GET", rf"/channels/(?P<cid>{SNOW})/webhooks", list_webhooks),
    ("POST", rf"/channels/(?P<cid>{SNOW})/webhooks", create_webhook),
    ("POST", rf"/webhooks/(?P<wid>{SNOW})/(?P<token>[^/]+)", execute_webhook),
    ("PATCH", rf"/webhooks/(?P<wid>{SNOW})/(?P<token>[^/]+)/messages/(?P<mid>{SNOW}|@original)",
     edit_webhook_message),
    ("POST", rf"/interactions/(?P<iid>{SNOW})/(?P<token>[^/]+)/callback", callback),
]
