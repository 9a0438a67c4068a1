"""Bolt listeners: ack() at once (errors in the ack body when pure parsing finds them), the rest in the background."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from slack_bolt.async_app import AsyncAck, AsyncApp, AsyncBoltContext
from slack_bolt.listener.async_builtins import AsyncTokenRevocationListeners
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import forms
from adapters.slack import interactions as ix
from adapters.slack import translate as tr
from adapters.slack.clients import Tasks
from adapters.slack.handlers import Council
from adapters.slack.home import NEW_ACTION
from adapters.slack.markup import escape
from adapters.slack.place import Place
from adapters.slack.views import start_view

ACTIONS = re.compile("^(" + "|".join(re.escape(p) for p in ix.ACTION_PREFIXES) + ")")


def _team(body: dict[str, Any]) -> str:
    team = body.get("team_id") or (body.get("team") or {}).get("id") or (body.get("user") or {}).get("team_id")
    return str(team or "")


def register(bolt: AsyncApp, council: Council, tasks: Tasks) -> None:
    """Attach every listener of the app to `bolt`."""

    @bolt.command("/council")
    async def slash(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        tasks.hold_current()
        place = Place(team=_team(body), channel=body.get("channel_id", ""), user=body.get("user_id", ""),
                      user_name=body.get("user_name", ""), response_url=body.get("response_url"),
                      trigger_id=body.get("trigger_id"))
        try:
            intent = tr.parse_council(body.get("text") or "", who=tr.Who(place.user, place.user_name),
                                      team_id=place.team, channel_id=place.channel, default_tz=council.default_tz)
        except tr.BadInput as exc:
            await ack(response_type="ephemeral", text=escape(str(exc)))
            return
        if intent.kind == "help":
            await ack(response_type="ephemeral", text=escape(tr.HELP))
            return
        await ack()
        client = await council.client(_team(body), client)
        if intent.kind == "modal":  # the form first: nothing to look up, and its trigger_id lasts 3 s
            place = replace(place, view_id=await forms.loading(client, place.trigger_id))
        tasks.spawn(council.run(intent, place, client), "slack:command")

    @bolt.action(ACTIONS)
    async def button(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        tasks.hold_current()
        await ack()
        client = await council.client(_team(body), client)
        action = (body.get("actions") or [{}])[0]
        chosen = action.get("value") or (action.get("selected_option") or {}).get("value", "")
        # A form opens now, before the database and behind no earlier click: its trigger_id lasts 3 s.
        view_id = (await forms.loading(client, body.get("trigger_id"))
                   if ix.opens_modal(action.get("action_id", ""), chosen) else "")
        clicked = (_team(body), (body.get("user") or {}).get("id"), (body.get("container") or {}).get("message_ts"))
        tasks.spawn_in_order(clicked, council.button(body, client, view_id), "slack:action")

    @bolt.event("app_home_opened")
    async def home_opened(body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient) -> None:
        tasks.hold_current()
        client = await council.client(_team(body), client)
        if event.get("tab", "home") == "home" and event.get("user"):
            tasks.spawn(council.home(_team(body), event["user"], client), "slack:home")

    @bolt.action(re.compile("^home:"))
    async def home_button(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        tasks.hold_current()
        await ack()
        client = await council.client(_team(body), client)
        if ((body.get("actions") or [{}])[0]).get("action_id") == NEW_ACTION:  # the start form, at once
            await council.show(client, Place(team=_team(body), channel="", user="", trigger_id=body.get("trigger_id")),
                               start_view(ix.start_metadata(""), ask_channel=True))
            return
        tasks.spawn(council.home_action(body, client), "slack:home-action")

    @bolt.view(ix.START_VIEW)
    async def start_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                              client: AsyncWebClient) -> None:
        tasks.hold_current()
        user = body.get("user") or {}
        who = tr.Who(user.get("id", ""), user.get("name", ""))
        try:
            cmd = ix.start_from_view(view["state"]["values"], view.get("private_metadata", ""), who, _team(body),
                                     council.default_tz)
        except tr.BadInput as exc:
            await ack(response_action="errors", errors=ix.view_errors(exc))
            return
        await ack()
        client = await council.client(_team(body), client)
        place = Place(team=_team(body), channel=cmd.channel, user=who.user_id, user_name=who.user_name,
                      thread_ts=cmd.thread_ref or None)
        tasks.spawn(council.start_from_form(cmd, place, client), "slack:start")

    @bolt.view(ix.TOPIC_VIEW)
    async def topic_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                              client: AsyncWebClient) -> None:
        tasks.hold_current()
        user = body.get("user") or {}
        try:
            cmd = ix.next_from_view(view["state"]["values"], view.get("private_metadata", ""),
                                    tr.Who(user.get("id", ""), user.get("name", "")))
        except (tr.BadInput, ValueError) as exc:
            await ack(response_action="errors", errors=ix.view_errors(tr.BadInput(str(exc))))
            return
        await ack()
        client = await council.client(_team(body), client)
        meta = json.loads(view.get("private_metadata") or "{}")
        place = Place(team=_team(body), channel=meta.get("channel", ""), user=cmd.user_id, user_name=cmd.user_name,
                      thread_ts=meta.get("thread_ts") or None)
        tasks.spawn(council.execute(cmd, place, client), "slack:next-topic")

    @bolt.view(ix.ROSTER_VIEW)
    async def roster_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any],
                               client: AsyncWebClient) -> None:
        tasks.hold_current()
        await ack()
        client = await council.client(_team(body), client)
        user = body.get("user") or {}
        place = Place(team=_team(body), channel="", user=user.get("id", ""), user_name=user.get("name", ""))
        tasks.spawn(council.roster(view, place, client), "slack:roster")

    @bolt.shortcut(ix.SHORTCUT)
    async def shortcut(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient) -> None:
        tasks.hold_current()
        await ack()
        client = await council.client(_team(body), client)
        message = body.get("message") or {}
        place = Place(team=_team(body), channel=(body.get("channel") or {}).get("id", ""),
                      user=(body.get("user") or {}).get("id", ""), user_name=(body.get("user") or {}).get("name", ""),
                      response_url=body.get("response_url"), trigger_id=body.get("trigger_id"))
        place = replace(place, view_id=await forms.loading(client, place.trigger_id))  # the form first
        tasks.spawn(council.prefill(place, message, client), "slack:shortcut")

    # Leaving a workspace: its installation (OAuth), schedules and digests go; discussions and exports stay.
    revocations = (AsyncTokenRevocationListeners(bolt.installation_store)
                   if bolt.installation_store is not None else None)

    @bolt.event("app_uninstalled")
    async def uninstalled(body: dict[str, Any], context: AsyncBoltContext) -> None:
        tasks.hold_current()
        if revocations is not None:
            await revocations.handle_app_uninstalled_events(context)
        tasks.spawn(council.left(_team(body)), "slack:uninstalled")

    @bolt.event("tokens_revoked")
    async def revoked(body: dict[str, Any], event: dict[str, Any], context: AsyncBoltContext) -> None:
        tasks.hold_current()
        if revocations is not None:
            await revocations.handle_tokens_revoked_events(event, context)
        if (event.get("tokens") or {}).get("bot"):  # without its bot token the app can post nothing there
            tasks.spawn(council.left(_team(body)), "slack:tokens_revoked")

    # A message that mentions the app arrives twice (app_mention and message, with different event ids):
    # both go to council.mention, deduplicated on the message itself.
    @bolt.event("app_mention")
    async def mention(body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient,
                      context: AsyncBoltContext) -> None:
        tasks.hold_current()
        client = await council.client(_team(body), client)
        key = f"slack:{event.get('channel', '')}:{event.get('ts', '')}"
        tasks.spawn(council.mention(event, key, _team(body), context.bot_user_id or "", client), "slack:mention")

    @bolt.event("message")
    async def message(body: dict[str, Any], event: dict[str, Any], client: AsyncWebClient,
                      context: AsyncBoltContext) -> None:
        tasks.hold_current()
        client = await council.client(_team(body), client)
        bot = context.bot_user_id or ""
        if tr.is_human_reply(event) or not event.get("thread_ts"):
            if event.get("user") and not event.get("subtype") and tr.mentions(event.get("text") or "", bot):
                key = f"slack:{event.get('channel', '')}:{event.get('ts', '')}"
                tasks.spawn(council.mention(event, key, _team(body), bot, client), "slack:mention")
                return
        tasks.spawn(council.reply(event, body.get("event_id", ""), _team(body), bot, client), "slack:reply")
