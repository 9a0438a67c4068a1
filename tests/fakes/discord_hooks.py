"""Webhook and interaction routes of the fake Discord: webhooks (15 a channel), follow-ups and callbacks within
Discord's time windows, and direct-message channels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes import discord_payloads as p
from tests.fakes import discord_rules as r
from tests.fakes.discord_routes import (
    EPHEMERAL,
    Match,
    apply_edit,
    check_body,
    check_limits,
    find_message,
    invalid,
    refused,
    store,
    truthy,
)

if TYPE_CHECKING:
    from tests.fakes.discord_api import FakeDiscord


async def list_webhooks(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    if m["cid"] not in fake.channels:
        return fake.error(404, 10003, "Unknown Channel")
    if (no := refused(fake, m["cid"], r.MANAGE_WEBHOOKS)) is not None:
        return no
    return fake.ok([w for w in fake.webhooks.values() if w["channel_id"] == m["cid"]])


async def create_webhook(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    channel = fake.channels.get(m["cid"])
    if channel is None:
        return fake.error(404, 10003, "Unknown Channel")
    if (no := refused(fake, m["cid"], r.MANAGE_WEBHOOKS)) is not None:
        return no
    if channel["type"] in (*r.THREADS, r.DM):
        return invalid(fake, "webhooks belong to channels, not threads")
    if sum(1 for w in fake.webhooks.values() if w["channel_id"] == m["cid"]) >= r.MAX_WEBHOOKS:
        return fake.error(400, 30007, "Maximum number of webhooks reached (15)")
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
    if target["type"] == r.FORUM:
        return fake.error(400, 220001, "Webhooks posted to forum channels must have a thread_name or thread_id")
    if not truthy(request.query.get("with_components")):
        body.pop("components", None)  # Discord ignores a webhook's components unless asked to use them
        if (bad := check_body(fake, body, webhook=True)) is not None:
            return bad
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
    if (bad := check_limits(fake, body)) is not None:  # an edit keeps the limits a new message keeps
        return bad
    if wid == fake.app_id:
        record = next((i for i in fake.interactions.values() if i.token == token), None)
        if record is None:
            return fake.error(404, 10015, "Unknown Webhook")
        if fake.clock() - record.created_at > r.INTERACTION_TOKEN_S:
            return fake.error(401, 50027, "Invalid Webhook Token")
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
    if not truthy(request.query.get("with_components")):
        body.pop("components", None)
    return fake.ok(await apply_edit(fake, msg, body))


async def followup(fake: FakeDiscord, token: str, body: dict[str, Any]) -> web.Response:
    record = next((i for i in fake.interactions.values() if i.token == token), None)
    if record is None:
        return fake.error(404, 10015, "Unknown Webhook")
    if not record.callbacks:
        return fake.error(404, 10015, "Unknown Webhook")  # followups need an acknowledged interaction
    if fake.clock() - record.created_at > r.INTERACTION_TOKEN_S:
        return fake.error(401, 50027, "Invalid Webhook Token")
    record.followups.append(body)
    return fake.ok(p.message(p.snowflake(), record.payload["channel_id"], fake.bot, body))


async def callback(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    record = fake.interactions.get(m["iid"])
    if record is None or record.token != m["token"]:
        return fake.error(404, 10062, "Unknown interaction")
    if record.callbacks:
        return fake.error(400, 40060, "Interaction has already been acknowledged.")
    if fake.clock() - record.created_at > r.INTERACTION_ACK_S:
        return fake.error(404, 10062, "Unknown interaction")
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


async def delete_webhook_message(fake: FakeDiscord, request: web.Request, m: Match, body: Any) -> web.Response:
    """A message the webhook sent, deleted with the webhook's token (`thread_id` when it is in a thread): 204."""
    hook = fake.webhooks.get(m["wid"])
    if hook is None or hook["token"] != m["token"]:
        return fake.error(404, 10015, "Unknown Webhook")
    cid = request.query.get("thread_id") or hook["channel_id"]
    msg = find_message(fake, cid, m["mid"])
    if msg is None or msg.get("webhook_id") != m["wid"]:
        return fake.error(404, 10008, "Unknown Message")
    fake.messages[cid].remove(msg)
    await fake.dispatch("MESSAGE_DELETE", {"id": msg["id"], "channel_id": cid, "guild_id": fake.guild_id})
    return fake.ok(None, 204)
