"""The fake Discord's route table: each REST path Council's discord.py client calls, and its handler."""

from __future__ import annotations

from tests.fakes.discord_hooks import (
    callback,
    create_webhook,
    delete_webhook_message,
    edit_webhook_message,
    execute_webhook,
    list_webhooks,
    open_dm,
)
from tests.fakes.discord_routes import (
    active_threads,
    add_reaction,
    application,
    create_message,
    edit_channel,
    edit_message,
    gateway_bot,
    get_channel,
    get_message,
    list_messages,
    me,
    my_guilds,
    put_commands,
    start_forum_post,
    start_thread,
    typing,
)

SNOW = r"\d+"
ROUTES = [
    ("POST", "/users/@me/channels", open_dm),
    ("GET", "/users/@me", me),
    ("GET", "/oauth2/applications/@me", application),
    ("GET", "/gateway/bot", gateway_bot),
    ("GET", "/users/@me/guilds", my_guilds),
    ("GET", rf"/guilds/(?P<gid>{SNOW})/threads/active", active_threads),
    ("PUT", rf"/applications/{SNOW}/commands", put_commands),
    ("GET", rf"/channels/(?P<cid>{SNOW})", get_channel),
    ("PATCH", rf"/channels/(?P<cid>{SNOW})", edit_channel),
    ("GET", rf"/channels/(?P<cid>{SNOW})/messages", list_messages),
    ("POST", rf"/channels/(?P<cid>{SNOW})/messages", create_message),
    ("GET", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})", get_message),
    ("PATCH", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})", edit_message),
    ("POST", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})/threads", start_thread),
    ("POST", rf"/channels/(?P<cid>{SNOW})/threads", start_forum_post),
    ("POST", rf"/channels/(?P<cid>{SNOW})/typing", typing),
    ("PUT", rf"/channels/(?P<cid>{SNOW})/messages/(?P<mid>{SNOW})/reactions/(?P<emoji>[^/]+)/@me", add_reaction),
    ("GET", rf"/channels/(?P<cid>{SNOW})/webhooks", list_webhooks),
    ("POST", rf"/channels/(?P<cid>{SNOW})/webhooks", create_webhook),
    ("POST", rf"/webhooks/(?P<wid>{SNOW})/(?P<token>[^/]+)", execute_webhook),
    ("PATCH", rf"/webhooks/(?P<wid>{SNOW})/(?P<token>[^/]+)/messages/(?P<mid>{SNOW}|@original)",
     edit_webhook_message),
    ("DELETE", rf"/webhooks/(?P<wid>{SNOW})/(?P<token>[^/]+)/messages/(?P<mid>{SNOW})", delete_webhook_message),
    ("POST", rf"/interactions/(?P<iid>{SNOW})/(?P<token>[^/]+)/callback", callback),
]
