"""Listener glue: slash commands, buttons, modals and thread replies in; acknowledge first, then the service."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
from discord.app_commands import Choice

from adapters.discord import access, tags
from adapters.discord import translate as t
from adapters.discord.chat import REACTIONS, DiscordChat
from adapters.discord.inflight import InFlight, counted
from adapters.discord.render import times
from adapters.discord.views import confirm_view, modify_modal, reply_modal, settled_view, settles
from core.control import commands as c
from core.control.permissions import check_configure
from core.control.service import Service, UserError, list_text
from core.showing import posts
from core.showing.posts import CANCELLED
from core.storage.store import Store

log = logging.getLogger(__name__)
Work = Callable[[discord.Interaction[Any]], Awaitable[str]]
OOPS = "Something went wrong on my side; please try again in a moment."
UNKNOWN_INTERACTION = 10062  # not acknowledged within 3 s: Discord has dropped it
def visible_channels(interaction: discord.Interaction[Any]) -> list[str]:
    """The server's text channels this member can see (from the gateway's cache): whose decision records they may
    search."""
    guild, member = interaction.guild, interaction.user
    if guild is None or not isinstance(member, discord.Member):
        return []
    return [str(ch.id) for ch in guild.text_channels if ch.permissions_for(member).view_channel]


def private_channel(interaction: discord.Interaction[Any]) -> bool:
    """Whether the channel (a thread's parent) is hidden from @everyone: its decision records then stay in it.
    A channel the cache does not know counts as private."""
    guild, channel = interaction.guild, interaction.channel
    parent = getattr(channel, "parent", None) or channel
    if guild is None or not isinstance(parent, discord.abc.GuildChannel):
        return True
    return not parent.permissions_for(guild.default_role).view_channel


def shared_channel(interaction: discord.Interaction[Any]) -> bool:
    """Whether people outside this server read the channel (a thread's parent): an announcement channel can be
    followed by other servers, whose channels then receive its published messages. Unknown counts as shared."""
    channel = interaction.channel
    parent = getattr(channel, "parent", None) or channel
    if not isinstance(parent, discord.abc.GuildChannel):
        return True
    return parent.type == discord.ChannelType.news


class Handlers:
    def __init__(self, service: Service, store: Store, chat: DiscordChat, default_tz: str = "UTC") -> None:
        self.service, self.store, self.chat, self.default_tz = service, store, chat, default_tz
        self._parents: dict[int, int | None] = {}  # thread id -> parent channel id, for uncached threads
        # One person's clicks on one message, done in the order Discord delivered them: each waits for the one
        # before it after acknowledging (Discord wants that within 3 s), whichever acknowledgement returns first.
        self._clicks: dict[tuple[int | None, int, int | None], asyncio.Future[None]] = {}
        self.in_flight = InFlight()

    # interactions ----------------------------------------------------------------------------------
    @counted
    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """Modal submissions; slash commands arrive through the command tree, buttons through CouncilButton."""
        if interaction.type == discord.InteractionType.modal_submit:
            if not await self._defer(interaction, ephemeral=True, thinking=True):
                return
            await self._tell(interaction, await self._answer(interaction, self._modal))

    @counted
    async def on_action(self, interaction: discord.Interaction[Any], action: str, value: str) -> None:
        """A button: a modal is itself the first response; everything else is deferred before any work."""
        who = self._who(interaction)
        try:
            intent = t.component(action, value, who)
        except t.NotUnderstood as exc:
            await self._defer(interaction)
            await self._tell(interaction, str(exc))
            return
        if isinstance(intent, t.AskConfirm):
            try:
                await interaction.response.send_message(intent.question, view=confirm_view(
                    intent.action, intent.value, intent.label), ephemeral=True)
            except discord.HTTPException:
                log.warning("could not ask to confirm %s for %s", intent.action, interaction.id, exc_info=True)
            return
        if isinstance(intent, t.Dismiss):
            try:
                await interaction.response.edit_message(content=CANCELLED, view=None)
            except discord.HTTPException:
                log.warning("could not withdraw the question of %s", interaction.id, exc_info=True)
            return
        if isinstance(intent, t.OpenModal):
            modal = reply_modal(intent.discussion_id) if intent.kind == "reply" else modify_modal(intent.discussion_id)
            try:
                await interaction.response.send_modal(modal)
            except discord.HTTPException:
                log.warning("could not open the %s form for %s", intent.kind, interaction.id, exc_info=True)
            return
        if isinstance(intent, c.Revisit):
            intent = intent.model_copy(update={"private": private_channel(interaction),
                                               "shared": shared_channel(interaction)})
        key = (interaction.guild_id, interaction.user.id, interaction.message.id if interaction.message else None)
        before, mine = self._clicks.get(key), asyncio.get_running_loop().create_future()
        self._clicks[key] = mine
        try:
            if not await self._defer(interaction):
                return
            if before is not None:
                await asyncio.wait({before})
            await self._act(interaction, intent, who, action, value)
        finally:
            mine.set_result(None)
            if self._clicks.get(key) is mine:
                del self._clicks[key]

    async def _act(self, interaction: discord.Interaction[Any], intent: t.Intent, who: t.Who, action: str,
                   value: str) -> None:
        """A deferred click's command, answered privately; a final choice settles its buttons."""
        done = ""
        # A confirm step's own button: the answer takes the place of the private question.
        asked = interaction.message is not None and interaction.message.flags.ephemeral

        async def run(_: discord.Interaction[Any]) -> str:
            nonlocal done
            text = await self._perform(intent, who, interaction)
            done = text or "Done."
            return text if isinstance(intent, c.CastBallot | c.TakeStance | c.RankPlace) else ""

        await self._tell(interaction, await self._answer(interaction, run))
        if done and asked:
            await self._answer_in_place(interaction, done)
        elif done and settles(action):
            await self._settle(interaction, action, value)

    @staticmethod
    async def _answer_in_place(interaction: discord.Interaction[Any], text: str) -> None:
        try:
            await interaction.edit_original_response(content=times(text)[:2000], view=None)
        except discord.HTTPException:
            log.warning("could not answer in place of the question of %s", interaction.id, exc_info=True)

    async def _settle(self, interaction: discord.Interaction[Any], action: str, value: str) -> None:
        """A final choice: the clicked button turns green and every button on that post is disabled. Cosmetic:
        the choice is recorded, so a failure here is logged and nobody is asked to click again."""
        if interaction.message is None:
            return
        try:
            await interaction.edit_original_response(view=settled_view(interaction.message, t.custom_id(action,
                                                                                                        value)))
        except (discord.HTTPException, ValueError):
            log.warning("could not disable the buttons of %s", interaction.message.id, exc_info=True)

    # slash commands (from the command tree) ----------------------------------------------------------
    @counted
    async def command(self, interaction: discord.Interaction[Any], name: str, opts: dict[str, Any]) -> None:
        """A slash command with its typed options: acknowledge privately, do it, answer privately."""
        if not await self._defer(interaction, ephemeral=True, thinking=True):
            return
        asks: list[t.AskConfirm] = []

        async def run(_: discord.Interaction[Any]) -> str:
            return await self._command(interaction, name, opts, asks)

        text = await self._answer(interaction, run)
        if asks:
            await self._ask(interaction, asks[0])
        else:
            await self._tell(interaction, text)

    async def _ask(self, interaction: discord.Interaction[Any], ask: t.AskConfirm) -> None:
        try:
            await interaction.followup.send(ask.question[:2000], view=confirm_view(ask.action, ask.value, ask.label),
                                            ephemeral=True, allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException:
            log.warning("could not ask to confirm %s for %s", ask.action, interaction.id, exc_info=True)

    async def _command(self, interaction: discord.Interaction[Any], name: str, opts: dict[str, Any],
                       asks: list[t.AskConfirm]) -> str:
        where, who = self._where(interaction), self._who(interaction)
        if not where.guild_id:
            raise t.NotUnderstood("Councils run in server channels; try `/council` there.")
        if name == "council-config" and opts.get("tag"):
            if opts.get("owners") or opts.get("defaults"):
                raise t.NotUnderstood("Set the owners, the defaults or the tag, one at a time.")
            return await self._set_tag(interaction, str(opts["tag"]), where, who)
        note = ""
        try:
            access.place(getattr(interaction.channel, "type", None), name)
        except PermissionError as exc:
            raise t.NotUnderstood(str(exc)) from exc
        if name == "council":
            try:  # never start a discussion whose replies Council cannot hear, or that it could never post
                place = access.starts_in(interaction.channel)
                note = access.hearing(interaction.app_permissions, message_content=not self.chat.reply_button,
                                      forum=isinstance(place, discord.ForumChannel))
                access.tagging(place)
            except PermissionError as exc:
                raise t.NotUnderstood(str(exc)) from exc
        current = await self._current(where)
        intent = t.slash_command(name, opts, who, where, current, self.default_tz)
        if isinstance(intent, c.SearchDecisions) or (isinstance(intent, c.StartDiscussion) and
                                                     intent.memory == "workspace"):
            intent = intent.model_copy(update={"member_of": visible_channels(interaction)})
        if isinstance(intent, c.StartDiscussion | c.Revisit):
            intent = intent.model_copy(update={"private": private_channel(interaction),
                                               "shared": shared_channel(interaction)})
        if isinstance(intent, c.Stop):  # asks first, privately; only who may stop it is asked
            d = await self.service.guard.may_stop(intent)
            stop = posts.confirm_stop_post(d)
            confirm = stop.actions[0]
            asks.append(t.AskConfirm(action=confirm.id, value=confirm.value, question=stop.text, label=confirm.label))
            return ""
        text = await self._perform(intent, who, interaction)
        return f"{text}\n{note}" if note and text else text

    async def _set_tag(self, interaction: discord.Interaction[Any], value: str, where: t.Where, who: t.Who) -> str:
        """`/council-config tag:` in a forum: the tag each new post there carries (configuring, so for whom the
        workspace's policy lets configure this channel)."""
        check_configure(self.service.config.policy, c.Command(**who.fields()), where.channel_id)
        try:
            tag = tags.pick(interaction.channel, value)
        except ValueError as exc:
            raise t.NotUnderstood(str(exc)) from exc
        async with self.store.tx() as tx:
            await tx.set_channel_tag("discord", where.guild_id, where.channel_id, str(tag.id) if tag else "",
                                     who.user_id, self.service.clock.now())
        if tag is None:
            return "New posts in this forum carry no chosen tag (where the forum requires one: the first I may apply)."
        return f"New posts in this forum will carry the tag “{tag.name}”."

    @counted
    async def discussion_choices(self, interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
        """Autocomplete for `id`: this channel's discussions (the thread's own first), never another channel's."""
        where = self._where(interaction)
        if not where.guild_id:
            return []
        try:
            here = await self._current(where)
            found = await self.service.guard.discussions(c.Command(**self._who(interaction).fields()))
        except Exception:
            log.exception("autocomplete for %s failed", interaction.id)
            return []
        return [Choice(name=n, value=v) for n, v in t.discussion_choices(
            [d for d in found if d.platform == "discord" and d.workspace == where.guild_id], current, here)]

    async def _current(self, where: t.Where) -> str:
        """The discussion of the thread a command was typed in, if any."""
        if not where.thread_id:
            return ""
        async with self.store.tx() as tx:
            d = await tx.discussion_by_thread("discord", where.channel_id, where.thread_id)
        return d.id if d else ""

    async def _modal(self, interaction: discord.Interaction[Any]) -> str:
        who = self._who(interaction)
        return await self._perform(t.modal(dict(interaction.data or {}), who, str(interaction.id)), who, interaction)

    async def _perform(self, intent: t.Intent, who: t.Who, interaction: discord.Interaction[Any]) -> str:
        if isinstance(intent, t.ListDiscussions):
            return list_text(await self.service.guard.discussions(c.Command(**who.fields())))
        if isinstance(intent, t.ShowHelp):
            return t.HELP
        if isinstance(intent, t.ShowStatus):
            return await self.service.guard.status_text(intent.discussion_id, c.Command(**who.fields()),
                                                        visible_channels(interaction))
        if isinstance(intent, t.RosterEdit):  # the roster is read only for who may edit it
            _, personas = await self.service.guard.roster(c.Command(**who.fields()), intent.discussion_id)
            intent = t.roster_command(intent, personas, who)
        if isinstance(intent, t.OpenModal | t.AskConfirm | t.Dismiss):
            raise t.NotUnderstood("Use the button for that.")
        return (await self.service.handle(intent)).text

    async def _answer(self, interaction: discord.Interaction[Any], work: Work) -> str:
        """The sentence for the person: the reply, a friendly refusal, or an apology (and a log) for a bug."""
        try:
            return await work(interaction)
        except (UserError, t.NotUnderstood) as exc:
            return str(exc)
        except Exception:
            log.exception("interaction %s failed", interaction.id)
            return OOPS

    @staticmethod
    async def _defer(interaction: discord.Interaction[Any], **kwargs: Any) -> bool:
        """Acknowledge within Discord's three seconds; a refused acknowledgement must not cost the work. False
        when Discord no longer knows the interaction (it came too late): the person was told it failed and will
        try again, so the work must not be done twice."""
        try:
            await interaction.response.defer(**kwargs)
        except discord.NotFound as exc:
            if exc.code == UNKNOWN_INTERACTION:
                log.warning("interaction %s arrived too late to acknowledge; not acting on it", interaction.id)
                return False
            log.warning("could not acknowledge interaction %s", interaction.id, exc_info=True)
        except discord.HTTPException:
            log.warning("could not acknowledge interaction %s", interaction.id, exc_info=True)
        except (KeyError, TypeError, ValueError):
            log.debug("unexpected acknowledgement answer for %s", interaction.id, exc_info=True)
        return True

    @staticmethod
    async def _tell(interaction: discord.Interaction[Any], text: str) -> None:
        if not text:
            return
        try:
            await interaction.followup.send(times(text)[:2000], ephemeral=True,
                                            allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException:
            log.warning("could not answer interaction %s", interaction.id, exc_info=True)

    @classmethod
    def _who(cls, interaction: discord.Interaction[Any]) -> t.Who:
        """The facts the core decides permissions from: Manage Server makes a guild admin; roles for
        COUNCIL_ADMINS."""
        perms, where = interaction.permissions, cls._where(interaction)
        roles = tuple(str(r.id) for r in getattr(interaction.user, "roles", ()))
        return t.Who(user_id=str(interaction.user.id), user_name=interaction.user.display_name,
                     is_admin=bool(perms.administrator or perms.manage_guild), guild_id=where.guild_id,
                     channel_id=where.channel_id, roles=roles, in_dm=interaction.guild_id is None)

    @staticmethod
    def _where(interaction: discord.Interaction[Any]) -> t.Where:
        guild = str(interaction.guild_id or "")
        channel = interaction.channel
        if isinstance(channel, discord.Thread):
            return t.Where(guild, str(channel.parent_id), str(channel.id))
        return t.Where(guild, str(interaction.channel_id or ""))

    # thread replies --------------------------------------------------------------------------------
    @counted
    async def on_guild_remove(self, guild_id: str) -> None:
        """Removed from a guild (kicked, or the guild deleted): its schedules and digests go; discussions stay."""
        try:
            await self.service.handle(c.ForgetWorkspace(platform="discord", workspace=guild_id))
        except Exception:
            log.exception("could not forget guild %s", guild_id)

    @counted
    async def on_message(self, message: discord.Message, bot_id: int) -> None:
        """A human's reply in a council thread; never the bot's own or a webhook's (the personas') messages."""
        if message.author.bot or message.webhook_id is not None or message.guild is None:
            return
        if not message.content.strip():
            return  # without the Message Content intent only @mentions carry text
        parent = await self._parent(message.channel)
        if parent is None:
            return
        async with self.store.tx() as tx:
            d = await tx.discussion_by_thread("discord", str(parent), str(message.channel.id))
        if d is None:
            return
        who = t.Who(user_id=str(message.author.id), user_name=message.author.display_name,
                    guild_id=str(message.guild.id), channel_id=str(parent),
                    roles=tuple(str(r.id) for r in getattr(message.author, "roles", ())))
        cmd = t.human_message(message.content, str(message.id), str(bot_id), who, d.id, str(message.channel.id))
        if cmd is None:
            return
        try:
            reply = await self.service.handle(cmd)
        except UserError as exc:
            log.info("reply in %s not taken: %s", d.id, exc)
            return
        if not reply.duplicate and reply.discussion_id:  # queued for a turn: 👀 at once (Add Reactions)
            try:
                await message.add_reaction(REACTIONS["heard"])
            except discord.HTTPException as exc:  # a courtesy: the message is stored whatever becomes of its mark
                log.warning("could not mark a reply in %s as heard: %s", d.id, exc)

    async def _parent(self, channel: Any) -> int | None:
        """The text channel a thread belongs to (None when this is not a thread)."""
        if isinstance(channel, discord.Thread):
            return channel.parent_id
        if isinstance(channel, discord.TextChannel):
            return None
        if channel.id not in self._parents:
            try:
                data = await channel._state.http.get_channel(channel.id)
            except discord.HTTPException:
                return None
            is_thread = data.get("type") in (10, 11, 12)
            self._parents[channel.id] = int(data["parent_id"]) if is_thread and data.get("parent_id") else None
        return self._parents[channel.id]
