"""Listener glue: slash commands, buttons, modals and thread replies in; acknowledge first, then the service."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from adapters.discord import translate as t
from adapters.discord.chat import DiscordChat
from adapters.discord.views import modify_modal, reply_modal
from core import commands as c
from core.service import Service, UserError, list_text
from core.storage.store import Store

log = logging.getLogger(__name__)
Work = Callable[[discord.Interaction[Any]], Awaitable[str]]
OOPS = "Something went wrong on my side; please try again in a moment."


class Handlers:
    def __init__(self, service: Service, store: Store, chat: DiscordChat) -> None:
        self.service, self.store, self.chat = service, store, chat
        self._parents: dict[int, int | None] = {}  # thread id -> parent channel id, for uncached threads

    # interactions ----------------------------------------------------------------------------------
    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """Slash commands and modal submissions; buttons arrive through CouncilButton.callback."""
        if interaction.type == discord.InteractionType.application_command:
            await self._defer(interaction, ephemeral=True, thinking=True)
            await self._tell(interaction, await self._answer(interaction, self._command))
        elif interaction.type == discord.InteractionType.modal_submit:
            await self._defer(interaction, ephemeral=True, thinking=True)
            await self._tell(interaction, await self._answer(interaction, self._modal))

    async def on_action(self, interaction: discord.Interaction[Any], action: str, value: str) -> None:
        """A button: a modal is itself the first response; everything else is deferred before any work."""
        who = self._who(interaction)
        try:
            intent = t.component(action, value, who)
        except t.NotUnderstood as exc:
            await self._defer(interaction)
            await self._tell(interaction, str(exc))
            return
        if isinstance(intent, t.OpenModal):
            modal = reply_modal(intent.discussion_id) if intent.kind == "reply" else modify_modal(intent.discussion_id)
            try:
                await interaction.response.send_modal(modal)
            except discord.HTTPException:
                log.warning("could not open the %s form for %s", intent.kind, interaction.id, exc_info=True)
            return
        await self._defer(interaction)

        async def run(_: discord.Interaction[Any]) -> str:
            text = await self._perform(intent, who)
            return text if isinstance(intent, c.CastBallot) else ""

        await self._tell(interaction, await self._answer(interaction, run))

    async def _command(self, interaction: discord.Interaction[Any]) -> str:
        where, who = self._where(interaction), self._who(interaction)
        if not where.guild_id:
            raise t.NotUnderstood("Councils run in server channels; try `/council` there.")
        data: dict[str, Any] = dict(interaction.data or {})
        if data.get("name") == "council":
            self._check_permissions(interaction.app_permissions)
        current = ""
        if where.thread_id:
            async with self.store.tx() as tx:
                d = await tx.discussion_by_thread("discord", where.channel_id, where.thread_id)
            current = d.id if d else ""
        return await self._perform(t.slash_command(data, who, where, current), who)

    @staticmethod
    def _check_permissions(perms: discord.Permissions) -> None:
        """Without these the header or its thread could never be posted; say so now rather than stall."""
        needed = {"Send Messages": perms.send_messages, "Create Public Threads": perms.create_public_threads,
                  "Send Messages in Threads": perms.send_messages_in_threads, "Embed Links": perms.embed_links}
        missing = [name for name, ok in needed.items() if not ok]
        if missing:
            raise t.NotUnderstood(f"I need these permissions in this channel first: {', '.join(missing)}.")

    async def _modal(self, interaction: discord.Interaction[Any]) -> str:
        who = self._who(interaction)
        return await self._perform(t.modal(dict(interaction.data or {}), who, str(interaction.id)), who)

    async def _perform(self, intent: t.Intent, who: t.Who) -> str:
        if isinstance(intent, t.ListDiscussions):
            return list_text(await self.service.discussions(channel=intent.channel))
        if isinstance(intent, t.RosterEdit):
            async with self.store.tx() as tx:
                personas = await tx.personas(intent.discussion_id)
            intent = t.roster_command(intent, personas, who)
        if isinstance(intent, t.OpenModal):
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
    async def _defer(interaction: discord.Interaction[Any], **kwargs: Any) -> None:
        """Acknowledge within Discord's three seconds; a refused acknowledgement must not cost the work."""
        try:
            await interaction.response.defer(**kwargs)
        except discord.HTTPException:
            log.warning("could not acknowledge interaction %s", interaction.id, exc_info=True)
        except (KeyError, TypeError, ValueError):
            log.debug("unexpected acknowledgement answer for %s", interaction.id, exc_info=True)

    @staticmethod
    async def _tell(interaction: discord.Interaction[Any], text: str) -> None:
        if not text:
            return
        try:
            await interaction.followup.send(text[:2000], ephemeral=True,
                                            allowed_mentions=discord.AllowedMentions.none())
        except discord.HTTPException:
            log.warning("could not answer interaction %s", interaction.id, exc_info=True)

    @staticmethod
    def _who(interaction: discord.Interaction[Any]) -> t.Who:
        perms = interaction.permissions
        return t.Who(user_id=str(interaction.user.id), user_name=interaction.user.display_name,
                     is_admin=bool(perms.administrator or perms.manage_guild))

    @staticmethod
    def _where(interaction: discord.Interaction[Any]) -> t.Where:
        guild = str(interaction.guild_id or "")
        channel = interaction.channel
        if isinstance(channel, discord.Thread):
            return t.Where(guild, str(channel.parent_id), str(channel.id))
        return t.Where(guild, str(interaction.channel_id or ""))

    # thread replies --------------------------------------------------------------------------------
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
        who = t.Who(user_id=str(message.author.id), user_name=message.author.display_name)
        cmd = t.human_message(message.content, str(message.id), str(bot_id), who, d.id)
        if cmd is None:
            return
        try:
            await self.service.handle(cmd)
        except UserError as exc:
            log.info("reply in %s not taken: %s", d.id, exc)

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
