"""The work each Slack request asks for, run after ack(): look-ups, the service call, private answers.

Every entry point (what app.py spawns after ack) runs under `_guard`: a UserError is told to the person as it
is, anything else is logged and answered with OOPS, so no request ends without an answer.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack import context, extras, forms
from adapters.slack import interactions as ix
from adapters.slack import translate as tr
from adapters.slack.chat import ClientFor, add_reaction
from adapters.slack.clients import Users, dismiss, ephemeral
from adapters.slack.markup import escape, mrkdwn
from adapters.slack.member import channels_of
from adapters.slack.membership import ensure_member, has_guests
from adapters.slack.people import named
from adapters.slack.place import CoreApp, Place, facts
from adapters.slack.render import render, settled
from adapters.slack.views import notice_view, roster_view, start_view
from core.control import commands as c
from core.control.service import Reply, UserError, list_text
from core.models import Discussion, NextAction, Persona, Status
from core.showing import posts

log = logging.getLogger(__name__)
OOPS = "Sorry, something went wrong on our side; nothing was lost. Please try again in a moment."
TOPIC_FROM_THREAD = 300
SETTLE_NOTES = {"roster:start": "started the discussion", "fail:retry": "chose *Retry*",
                "fail:skip": "chose *Skip*", "fail:stop": "chose *Stop*"}


def digest_reply(text: str, channel: str) -> str:
    """The service's answer to `/council digest`, led by the channel it is about (whatever its wording): mrkdwn."""
    return f"<#{channel}>: {escape(text)}"


class Council:
    def __init__(self, core: CoreApp, users: Users, default_tz: str = "UTC", clients: ClientFor | None = None
                 ) -> None:
        self.core, self.users, self.default_tz = core, users, default_tz
        self.clients = clients  # each workspace's budgeted client (SlackChat's too): one rate budget for both

    async def client(self, team: str, given: AsyncWebClient) -> AsyncWebClient:
        """The workspace's budgeted client (its rate budget and per-channel pacing), else the one bolt gave."""
        if self.clients is None or not team:
            return given
        try:
            return await self.clients(team)
        except LookupError:
            return given

    async def tell(self, client: AsyncWebClient, place: Place, text: str, *, markup: bool = False) -> None:
        await ephemeral(client, place.channel, place.user, text, thread_ts=place.thread_ts,
                        response_url=place.response_url, replace=place.replace, markup=markup)

    async def show(self, client: AsyncWebClient, place: Place, view: dict[str, Any]) -> None:
        await forms.show(client, place, view)

    async def who(self, client: AsyncWebClient, place: Place) -> tuple[tr.Who, str]:
        user = await self.users.get(client, place.team, place.user, place.user_name)
        return tr.Who(place.user, user.name, user.is_admin, user.groups), user.tz

    async def asker(self, client: AsyncWebClient, place: Place) -> c.Command:
        """Who asks and where, for the read-only answers (status, list, usage)."""
        who, _ = await self.who(client, place)
        return c.Command(**who.fields(), **facts(place))

    async def left(self, team: str) -> None:
        """The app was uninstalled from this workspace (or lost its bot token): forget its schedules."""
        await self.core.service.handle(c.ForgetWorkspace(platform=tr.PLATFORM, workspace=team))

    # commands -------------------------------------------------------------------------------------
    async def run(self, intent: tr.Intent, place: Place, client: AsyncWebClient) -> Reply | None:
        async with self._guard(client, place, f"/council {intent.kind}"):
            if intent.kind == "help":
                await self.tell(client, place, tr.HELP)
            elif intent.kind == "modal":
                await self.show(client, place, start_view(ix.start_metadata(place.channel, place.thread_ts or "")))
            elif intent.kind == "list":
                asker = await self.asker(client, place)
                await self.tell(client, place, list_text(await self.core.service.guard.discussions(asker)))
            elif intent.kind == "status":
                asker = await self.asker(client, place)
                await self.tell(client, place, await self.core.service.guard.status_text(
                    intent.discussion_id, asker, await channels_of(client, place.user) if asker.is_admin else None))
            elif intent.kind == "usage":
                asker = await self.asker(client, place)
                await self.tell(client, place, await self.core.service.guard.usage_text(
                    asker, await channels_of(client, place.user) if asker.is_admin else None))
            elif isinstance(intent.command, c.Stop):
                await self.ask_to_stop(intent.command, place, client)
            elif intent.command is not None:
                return await self.execute(intent.command, place, client, tz_explicit=intent.tz_explicit)
        return None

    async def ask_to_stop(self, cmd: c.Stop, place: Place, client: AsyncWebClient) -> None:
        """A typed stop asks first, privately, with Confirm and Cancel; only who may stop it is asked (the
        others hear why not, or "no such discussion"). Confirm is the Stop button: checked again when pressed."""
        who, _ = await self.who(client, place)
        asker = cmd.model_copy(update={"user_name": who.user_name, "is_admin": who.is_admin,
                                       "groups": list(who.groups), **facts(place)})
        d = await self.core.service.guard.may_stop(asker)
        [question, *_] = render(posts.confirm_stop_post(d))
        await ephemeral(client, place.channel, place.user, question.text, thread_ts=place.thread_ts,
                        response_url=place.response_url, blocks=question.blocks, markup=True)

    async def execute(self, cmd: c.Command, place: Place, client: AsyncWebClient, *, tz_explicit: bool = True,
                      announce: bool = True) -> Reply | None:
        """Fill in who is asking (name, admin right, zone), hand the command to the service, answer privately.

        None when it failed (the person has been told why). Every command the translate layer builds is one the
        service handles (core/commands.py): a TypeError from it is a bug, answered like any other failure."""
        reply: Reply | None = None
        async with self._guard(client, place, type(cmd).__name__):
            who, tz = await self.who(client, place)
            update: dict[str, Any] = {"user_name": who.user_name, "is_admin": who.is_admin,
                                      "groups": list(who.groups), **facts(place)}
            if not tz_explicit and isinstance(cmd, c.StartDiscussion | c.SetDigest | c.Revisit):
                update["tz"] = tz or self.default_tz
            if isinstance(cmd, c.SearchDecisions) or (isinstance(cmd, c.StartDiscussion) and cmd.memory == "workspace"):
                update["member_of"] = await channels_of(client, place.user)
            cmd = await named(self.users, client, place.team, cmd.model_copy(update=update))
            if isinstance(cmd, c.Revisit):  # a new discussion starts here: Council must hear its replies too
                cmd = cmd.model_copy(update={"channel": cmd.channel or place.channel})
            if isinstance(cmd, c.StartDiscussion | c.Revisit) or (isinstance(cmd, c.SetDigest)
                                                                   and cmd.cadence != "off"):
                reach = await ensure_member(client, cmd.channel)  # or a UserError saying how to invite Council
                if isinstance(cmd, c.StartDiscussion | c.Revisit):
                    # Guests are looked for only when other channels' records could come in (a few calls).
                    recalls = isinstance(cmd, c.Revisit) or cmd.memory == "workspace" or bool(cmd.revisits)
                    shared = reach.shared or (recalls and await has_guests(client, self.users, place.team,
                                                                           cmd.channel))
                    cmd = cmd.model_copy(update={"private": reach.private, "shared": shared})
            reply = await self.core.service.handle(cmd)
        if reply is None:
            return None
        # Done: a failure from here on must not ask the person to try again (that would do it twice).
        if announce and reply.text and not isinstance(cmd, c.StartDiscussion | c.PostHumanMessage):
            if isinstance(cmd, c.SetDigest):
                await self._tell_anyway(client, place, digest_reply(reply.text, cmd.channel), markup=True)
            else:  # the core's answers are written in its light Markdown: Slack shows them in its own
                await self._tell_anyway(client, place, mrkdwn(reply.text), markup=True)
        return reply

    # buttons and modals ---------------------------------------------------------------------------
    async def button(self, body: dict[str, Any], client: AsyncWebClient, view_id: str | None = "") -> None:
        message = body.get("message") or {}
        user = body.get("user") or {}
        place = Place(team=(body.get("team") or {}).get("id") or user.get("team_id", ""),
                      channel=(body.get("channel") or {}).get("id", ""), user=user.get("id", ""),
                      user_name=user.get("name", ""), thread_ts=message.get("thread_ts") or message.get("ts"),
                      response_url=body.get("response_url"), trigger_id=body.get("trigger_id"),
                      replace=bool((body.get("container") or {}).get("is_ephemeral")), dm=tr.from_dm(body),
                      view_id=view_id)
        async with self._guard(client, place, "button"):
            await self._button(body, message, place, client)

    async def _button(self, body: dict[str, Any], message: dict[str, Any], place: Place,
                      client: AsyncWebClient) -> None:
        action = body["actions"][0]
        chosen = action.get("value") or (action.get("selected_option") or {}).get("value", "")  # a button, or a menu
        intent = ix.action_command(action["action_id"], chosen, tr.Who(place.user))
        if intent is None:
            await self.tell(client, place, "That button is no longer valid.")
            return
        if isinstance(intent, c.ChooseNextAction) and intent.action in (NextAction.DEEP_DIVE,
                                                                         NextAction.DIFFERENT_TOPIC):
            await extras.ask_topic(self, intent, place, client)
            return
        if isinstance(intent, ix.Dismiss):
            await dismiss(place.response_url)
            return
        if isinstance(intent, ix.ExportFiles):
            await extras.export_files(self, intent.discussion_id, place, client)
            return
        if isinstance(intent, ix.OpenRosterModal):
            d, personas = await self.core.service.guard.roster(await self.asker(client, place), intent.discussion_id)
            await self.show(client, place, roster_view(d.id, d.channel, personas))
            return
        # The thread shows everything else; the answer to a confirm step replaces its private question.
        quiet = not (isinstance(intent, c.CastBallot | c.TakeStance | c.RankPlace) or place.replace)
        reply = await self.execute(intent, place, client, announce=not quiet)
        if reply is None or not message.get("ts"):
            return
        # A round's choice is settled by the core's edit of its message (the outbox); these only here.
        note = SETTLE_NOTES.get(action["action_id"])
        if note:  # done: settling the buttons is cosmetic, and its failure must not ask for another click
            try:
                who = (await self.who(client, place))[0].user_name
                await client.chat_update(channel=place.channel, ts=message["ts"], text=message.get("text", ""),
                                         blocks=settled(message.get("blocks") or [], f"✅ {who} {note}."))
            except SlackApiError as exc:
                log.warning("could not settle the buttons: %s", exc.response.get("error"))
            except Exception:
                log.warning("could not settle the buttons", exc_info=True)

    async def roster(self, view: dict[str, Any], place: Place, client: AsyncWebClient) -> None:
        """The roster modal submitted: its changes, one command each, answered in the discussion's thread."""
        discussion_id, channel = ix.roster_metadata(view.get("private_metadata", ""))
        place = replace(place, channel=channel)  # where the form was opened, checked when it was
        found: tuple[Discussion, list[Persona]] | None = None
        async with self._guard(client, place, "roster form"):
            found = await self.core.service.guard.roster(await self.asker(client, place), discussion_id)
        if found is None:
            return
        d, personas = found
        place = replace(place, channel=d.channel, thread_ts=d.thread_ref or None)
        async with self._guard(client, place, "roster form"):
            for cmd in ix.roster_commands(view["state"]["values"], d.id, personas, tr.Who(place.user)):
                if await self.execute(cmd, place, client, announce=False) is None:
                    return

    # threads: shortcut, mentions, replies --------------------------------------------------------------
    async def from_thread(self, place: Place, message: dict[str, Any], text: str, client: AsyncWebClient) -> None:
        """Start a discussion in an existing thread (message shortcut or @mention), the thread as context."""
        thread_ts = message.get("thread_ts") or message.get("ts") or place.thread_ts or ""
        place = replace(place, thread_ts=thread_ts or None)
        async with self._guard(client, place, "start from a thread"):
            await self._from_thread(place, message, text, thread_ts, client)

    async def _from_thread(self, place: Place, message: dict[str, Any], text: str, thread_ts: str,
                           client: AsyncWebClient) -> None:
        existing = await self._by_thread(place.channel, thread_ts)
        if existing is not None and existing.status not in (Status.DONE, Status.STOPPED):
            await self.tell(client, place, f"This thread already hosts a council (`{existing.id}`): reply here to "
                                           "join it, or `@Council status`.")
            return
        read = await context.read(client, place.channel, thread_ts, newest=str(message.get("ts") or ""),
                                   parent_needed=not tr.has_topic(text))
        thread = read.messages or [message]
        ctx = tr.thread_context(thread, await self._names(client, place.team, thread), unread=read.unread)
        who, _ = await self.who(client, place)
        if not tr.has_topic(text):  # only the mention (and options): the thread's first message is the topic
            text = f"{text} -- {self.topic_of(read.parent or thread[0])}"
        try:
            intent = tr.parse_council(text, who=who, team_id=place.team, channel_id=place.channel,
                                      default_tz=self.default_tz, thread_ref=thread_ts, context=ctx)
        except tr.BadInput as exc:
            await self.tell(client, place, str(exc))
            return
        await self.run(intent, place, client)

    async def prefill(self, place: Place, message: dict[str, Any], client: AsyncWebClient) -> None:
        """The message shortcut: the start form, its topic taken from the message, to review before starting."""
        thread_ts = message.get("thread_ts") or message.get("ts") or ""
        async with self._guard(client, replace(place, thread_ts=thread_ts or None), "shortcut"):
            existing = await self._by_thread(place.channel, thread_ts)
            if existing is not None and existing.status not in (Status.DONE, Status.STOPPED):
                await self.show(client, place, notice_view(
                    f"This thread already hosts a council ({existing.id}): reply in it to join."))
                return
            await self.show(client, place, start_view(ix.start_metadata(place.channel, thread_ts),
                                                      topic=self.topic_of(message)))

    async def start_from_form(self, cmd: c.StartDiscussion, place: Place, client: AsyncWebClient) -> None:
        """The start form submitted; started from a thread (the shortcut), that thread is the context."""
        if cmd.thread_ref and not cmd.context:
            async with self._guard(client, place, "start form"):
                read = await context.read(client, place.channel, cmd.thread_ref)
                cmd = cmd.model_copy(update={"context": tr.thread_context(
                    read.messages, await self._names(client, place.team, read.messages), unread=read.unread)})
        await self.execute(cmd, place, client, tz_explicit=False)

    @staticmethod
    def topic_of(message: dict[str, Any]) -> str:
        text = " ".join(tr.unescape(message.get("text") or "").split())
        if len(text) > TOPIC_FROM_THREAD:
            text = text[:TOPIC_FROM_THREAD].rsplit(" ", 1)[0] + "…"
        return text or "The question discussed in this thread"

    async def mention(self, event: dict[str, Any], event_id: str, team: str, bot_user_id: str,
                      client: AsyncWebClient) -> None:
        place = Place(team=team, channel=event.get("channel", ""), user=event.get("user", ""),
                      thread_ts=event.get("thread_ts") or event.get("ts"))
        async with self._guard(client, place, "mention"):
            await self._mention(event, event_id, team, bot_user_id, place, client)

    async def _mention(self, event: dict[str, Any], event_id: str, team: str, bot_user_id: str, place: Place,
                       client: AsyncWebClient) -> None:
        if not await self._first_sight(f"{event_id}:mention"):
            return  # the same message through the other event, or Slack's retry
        text = tr.strip_mention(event.get("text") or "", bot_user_id)
        d = await self._by_thread(place.channel, event["thread_ts"]) if event.get("thread_ts") else None
        if d is None:
            if not event.get("thread_ts") and not tr.has_topic(text):
                await self.tell(client, place, tr.HELP)
                return
            if tr.control(text, "", tr.Who(place.user)) is not None:
                await self.tell(client, place, "Use that inside a discussion's thread, or `/council stop ID` here.")
                return
            await self.from_thread(place, event, text, client)
            return
        intent = tr.control(text, d.id, tr.Who(place.user))
        if intent is None:  # talking to the council: a human message
            await self.reply(event, event_id, team, bot_user_id, client, mentioned=True)
            return
        await self.run(intent, place, client)

    async def reply(self, event: dict[str, Any], event_id: str, team: str, bot_user_id: str,
                    client: AsyncWebClient, *, mentioned: bool = False) -> None:
        """A person's reply in a discussion's thread becomes a human message the next turns hear."""
        if not tr.is_human_reply(event):
            return
        place = Place(team=team or event.get("team", ""), channel=event.get("channel", ""), user=event["user"],
                      thread_ts=event["thread_ts"])
        async with self._guard(client, place, "thread reply"):
            d = await self._by_thread(place.channel, event["thread_ts"])
            if d is None:
                return
            who, _ = await self.who(client, place)
            text = tr.strip_mention(event.get("text") or "", bot_user_id) if mentioned else event.get("text") or ""
            cmd = tr.human_message({**event, "text": text}, event_id, d.id, who)
            if cmd is not None:
                reply = await self.execute(cmd, place, client, announce=False)
                if reply is not None and not reply.duplicate and reply.discussion_id:  # queued for a turn: 👀
                    try:  # a courtesy: the message is stored whatever becomes of its mark
                        await add_reaction(client, place.channel, cmd.ref, "heard")
                    except Exception:
                        log.warning("could not mark a reply as heard", exc_info=True)

    # beyond the thread (adapters/slack/extras.py) ------------------------------------------------------
    async def home(self, team: str, user: str, client: AsyncWebClient) -> None:
        await extras.home(self, team, user, client)

    async def home_action(self, body: dict[str, Any], client: AsyncWebClient) -> None:
        await extras.home_action(self, body, client)

    # failures ---------------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def _guard(self, client: AsyncWebClient, place: Place, what: str) -> AsyncIterator[None]:
        """Nothing a request runs into ends it unanswered: the person hears a UserError, or OOPS for the rest.

        Guards nest (a mention starts a discussion); the innermost answers and the outer ones see no error."""
        try:
            yield
        except UserError as exc:
            await self._tell_anyway(client, place, mrkdwn(str(exc)), markup=True)
        except Exception as exc:
            # The request's body is not logged: it carries tokens and what people wrote.
            log.exception("%s from %s in %s failed: %s", what, place.user, place.channel, type(exc).__name__)
            await self._tell_anyway(client, place, OOPS)

    async def _tell_anyway(self, client: AsyncWebClient, place: Place, text: str, *, markup: bool = False) -> None:
        if place.view_id:  # the form the listener opened says it too, instead of loading forever
            try:
                await client.views_update(view_id=place.view_id, view=notice_view(text))
            except Exception:
                log.warning("could not show the answer in the form", exc_info=True)
        try:
            await self.tell(client, place, text, markup=markup)
        except Exception:
            log.warning("could not tell %s what happened", place.user, exc_info=True)

    # look-ups ---------------------------------------------------------------------------------------
    async def _by_thread(self, channel: str, thread_ts: str) -> Discussion | None:
        async with self.core.store.tx() as tx:
            return await tx.discussion_by_thread(tr.PLATFORM, channel, thread_ts)

    async def discussion(self, discussion_id: str) -> Discussion | None:
        async with self.core.store.tx() as tx:
            return await tx.discussion(discussion_id)

    async def _first_sight(self, event_id: str) -> bool:
        if not event_id:
            return True
        async with self.core.store.tx() as tx:
            return await tx.first_sight(event_id, self.core.clock.now())

    async def _names(self, client: AsyncWebClient, team: str, messages: list[dict[str, Any]]) -> dict[str, str]:
        ids = {m.get("user", "") for m in messages if m.get("user")}
        return {i: (await self.users.get(client, team, i)).name for i in sorted(ids)[:20]}
