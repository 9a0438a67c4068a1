"""Discord API object shapes for the fake server: snowflakes, users, guilds, channels, messages, interactions."""

from __future__ import annotations

import itertools
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

DISCORD_EPOCH_MS = 1420070400000
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "discord"
ALL_PERMISSIONS = str((1 << 50) - 1)
# What the README's invite grants: View Channel, Send Messages, Embed Links, Attach Files, Read Message History,
# Manage Webhooks, Create Public Threads, Send Messages in Threads.
INVITE_PERMISSIONS = 309774634048  # the README's invite, Add Reactions (1 << 6) included
MESSAGE_CONTENT_INTENT = 1 << 15
FLAG_MESSAGE_CONTENT_LIMITED = 1 << 19
_counter = itertools.count(1)


def snowflake() -> str:
    """A fresh, increasing snowflake: milliseconds since the Discord epoch, then a sequence number."""
    ms = int(time.time() * 1000) - DISCORD_EPOCH_MS
    return str((ms << 22) | (next(_counter) & 0x3FFFFF))


def iso_now() -> str:
    return datetime.now(UTC).isoformat()


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def user(user_id: str, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {"id": user_id, "username": name.lower().replace(" ", "_"), "global_name": name, "discriminator": "0",
            "avatar": None, "bot": bot, "public_flags": 0}


def member(u: dict[str, Any], permissions: str = "0") -> dict[str, Any]:
    return {"user": u, "roles": [], "joined_at": iso_now(), "nick": None, "avatar": None, "deaf": False,
            "mute": False, "flags": 0, "pending": False, "permissions": permissions}


def text_channel(channel_id: str, guild_id: str, name: str) -> dict[str, Any]:
    return {"id": channel_id, "type": 0, "guild_id": guild_id, "name": name, "position": 0,
            "permission_overwrites": [], "parent_id": None, "topic": None, "nsfw": False, "last_message_id": None,
            "rate_limit_per_user": 0, "flags": 0}


def thread_channel(thread_id: str, parent: dict[str, Any], owner_id: str, name: str,
                   archive_minutes: int) -> dict[str, Any]:
    return {"id": thread_id, "type": 11, "guild_id": parent["guild_id"], "parent_id": parent["id"],
            "owner_id": owner_id, "name": name, "last_message_id": None, "message_count": 0, "member_count": 1,
            "rate_limit_per_user": 0, "flags": 0, "total_message_sent": 0,
            "thread_metadata": {"archived": False, "auto_archive_duration": archive_minutes,
                                "archive_timestamp": iso_now(), "locked": False}}


def guild(guild_id: str, owner_id: str, channels: list[dict[str, Any]], members: list[dict[str, Any]],
          threads: list[dict[str, Any]]) -> dict[str, Any]:
    everyone = {"id": guild_id, "name": "@everyone", "permissions": "1071698660929", "position": 0, "color": 0,
                "hoist": False, "managed": False, "mentionable": False, "flags": 0}
    return {"id": guild_id, "name": "Council Test Guild", "icon": None, "splash": None, "discovery_splash": None,
            "owner_id": owner_id, "afk_channel_id": None, "afk_timeout": 300, "verification_level": 0,
            "default_message_notifications": 0, "explicit_content_filter": 0, "roles": [everyone], "emojis": [],
            "features": [], "mfa_level": 0, "application_id": None, "system_channel_id": None,
            "system_channel_flags": 0, "rules_channel_id": None, "vanity_url_code": None, "description": None,
            "banner": None, "premium_tier": 0, "preferred_locale": "en-US", "public_updates_channel_id": None,
            "nsfw_level": 0, "premium_progress_bar_enabled": False, "stickers": [], "joined_at": iso_now(),
            "large": False, "unavailable": False, "member_count": len(members), "voice_states": [],
            "members": members, "channels": channels, "threads": threads, "presences": [],
            "stage_instances": [], "guild_scheduled_events": [], "soundboard_sounds": []}


def message(message_id: str, channel_id: str, author: dict[str, Any], body: dict[str, Any], *,
            webhook_id: str | None = None, application_id: str | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": message_id, "channel_id": channel_id, "type": 0, "author": author,
        "content": body.get("content") or "", "timestamp": iso_now(), "edited_timestamp": None, "tts": False,
        "mention_everyone": False, "mentions": [], "mention_roles": [], "attachments": [],
        "embeds": body.get("embeds") or [], "components": body.get("components") or [], "pinned": False,
        "flags": int(body.get("flags") or 0),
    }
    if body.get("nonce") is not None:
        data["nonce"] = body["nonce"]
    if webhook_id:
        data["webhook_id"] = webhook_id
    if application_id:
        data["application_id"] = application_id
    return data


def interaction(kind: int, interaction_id: str, app_id: str, token: str, guild_id: str,
                channel: dict[str, Any], who: dict[str, Any], data: dict[str, Any],
                msg: dict[str, Any] | None = None, app_permissions: str = ALL_PERMISSIONS) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": interaction_id, "application_id": app_id, "type": kind, "token": token, "version": 1,
        "guild_id": guild_id, "channel_id": channel["id"], "channel": channel, "member": who,
        "app_permissions": app_permissions, "locale": "en-US", "guild_locale": "en-US", "entitlements": [],
        "authorizing_integration_owners": {"0": guild_id}, "context": 0, "data": data,
        "attachment_size_limit": 10485760,
    }
    if msg is not None:
        payload["message"] = msg
    return payload


def dm_interaction(kind: int, interaction_id: str, app_id: str, token: str, channel: dict[str, Any],
                   who: dict[str, Any], data: dict[str, Any], msg: dict[str, Any] | None = None,
                   app_permissions: str = ALL_PERMISSIONS) -> dict[str, Any]:
    """An interaction from the bot's direct message with a person: no guild_id and no member, the person is
    `user`, and the context is BOT_DM (1)."""
    payload: dict[str, Any] = {
        "id": interaction_id, "application_id": app_id, "type": kind, "token": token, "version": 1,
        "channel_id": channel["id"], "channel": channel, "user": who, "app_permissions": app_permissions,
        "locale": "en-US", "entitlements": [], "authorizing_integration_owners": {"0": "0"}, "context": 1,
        "data": data, "attachment_size_limit": 10485760,
    }
    if msg is not None:
        payload["message"] = msg
    return payload
