"""The discord.py client: REST and gateway through DISCORD_API_URL, commands synced, persistent buttons, sweeper."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import discord
import yarl
from discord import app_commands
from discord.gateway import DiscordWebSocket
from discord.http import Route

from adapters.discord.chat import DiscordChat
from adapters.discord.commands import build_tree
from adapters.discord.handlers import Handlers
from adapters.discord.views import CouncilButton, CouncilRankSelect, CouncilSelect
from core.control.service import Service
from core.running.driver import Driver
from core.storage.store import Store

log = logging.getLogger(__name__)
MAX_RATELIMIT_WAIT_S = 30.0  # discord.py's minimum; a longer 429 raises and the outbox retries later


@dataclass
class DiscordConfig:
    token: str
    api_url: str = "https://discord.com/api/v10"
    sweep_interval_s: float = 15.0
    default_tz: str = "UTC"  # reads the times people type when they name no zone (Discord does not share theirs)
    shard_guilds: int = 1000  # above this many guilds, run an AutoShardedClient


def use_api(api_url: str) -> None:
    """Every REST, webhook and interaction call of discord.py is built from Route.BASE."""
    Route.BASE = api_url.rstrip("/")


def intents(message_content: bool) -> discord.Intents:
    value = discord.Intents.none()
    value.guilds = True
    value.guild_messages = True
    value.message_content = message_content
    return value


class CouncilClient(discord.Client):
    def __init__(self, *, handlers: Handlers, driver: Driver, sweep_interval_s: float, **options: Any) -> None:
        options.setdefault("max_ratelimit_timeout", MAX_RATELIMIT_WAIT_S)
        super().__init__(**options)
        self.handlers, self.driver, self.sweep_interval_s = handlers, driver, sweep_interval_s
        self._sweeper: asyncio.Task[None] | None = None
        self.tree = build_tree(self)

    async def setup_hook(self) -> None:
        self.add_dynamic_items(CouncilButton, CouncilSelect, CouncilRankSelect)
        await self.sync_commands()
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="council-sweeper")

    async def sync_commands(self) -> None:
        """Write the slash commands to Discord only when their definitions changed since the last sync (Discord
        limits command writes a day, and a restart loop would spend them); a refusal never stops start-up."""
        store, app = self.handlers.store, str(self.application_id or "")
        digest = commands_hash(self.tree)
        try:
            async with store.tx() as tx:
                if await tx.command_hash("discord", app) == digest:
                    log.info("slash commands unchanged since the last sync; not syncing")
                    return
            await self.tree.sync()
            async with store.tx() as tx:
                await tx.set_command_hash("discord", app, digest, datetime.now(UTC))
        except discord.RateLimited as exc:
            log.warning("slash command sync rate-limited for %.0f s; the commands registered before still work, "
                        "and the next start tries again", exc.retry_after)
        except discord.HTTPException:
            log.exception("could not sync the slash commands; the ones registered before still work")

    async def connect(self, *, reconnect: bool = True) -> None:
        """A plain Client would dial a fixed gateway host: ask GET {DISCORD_API_URL}/gateway/bot first."""
        _, url, _ = await self.http.get_bot_gateway()
        DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        await super().connect(reconnect=reconnect)

    async def close(self) -> None:
        """Stop sweeping, give running turns a moment to post (their leases hand the rest over), then close."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
        await self.driver.shutdown()  # at once: leases are released for another replica or the restart
        await self.handlers.chat.close()
        await super().close()

    async def _sweep_forever(self) -> None:
        """Pick up discussions whose driver died or whose posts are still queued (429s, crashes)."""
        while True:
            try:
                await self.driver.sweep()
            except Exception:
                log.exception("sweep failed")
            await asyncio.sleep(self.sweep_interval_s)

    async def settled(self) -> None:
        """Wait until every gateway event handed to the handlers is handled and every discussion driver is idle
        (tests). A driver's post may bring an event and an event may wake a driver: until both are quiet
        at once. Events still unread on the gateway are not known here."""
        while True:
            await self.handlers.in_flight.quiet()
            await self.driver.idle()
            if not self.handlers.in_flight.count:  # no await since idle() returned: both quiet at this instant
                return

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        await self.handlers.on_interaction(interaction)

    async def on_message(self, message: discord.Message) -> None:
        if self.user is not None:
            await self.handlers.on_message(message, self.user.id)

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self.handlers.on_guild_remove(str(guild.id))


def commands_hash(tree: app_commands.CommandTree[Any]) -> str:
    """A hash of the command definitions as discord.py would send them."""
    payload = [command.to_dict(tree) for command in tree.get_commands()]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


class ShardedCouncilClient(CouncilClient, discord.AutoShardedClient):
    """The same client, sharded by discord.py itself (it asks /gateway/bot for the shard count)."""


async def count_guilds(token: str, *, stop_after: int) -> int:
    """How many guilds the bot is in, counted up to `stop_after` (pages of 200); 0 when Discord won't say."""
    http = discord.http.HTTPClient(asyncio.get_running_loop(), max_ratelimit_timeout=MAX_RATELIMIT_WAIT_S)
    count = 0
    try:
        await http.static_login(token)
        after = None
        while count <= stop_after:
            page = await http.get_guilds(200, after=after, with_counts=False)
            count += len(page)
            if len(page) < 200:
                break
            after = int(page[-1]["id"])
    except discord.HTTPException:
        log.warning("could not count guilds; starting unsharded", exc_info=True)
    finally:
        await http.close()
    return count


def build_client(config: DiscordConfig, service: Service, driver: Driver, store: Store, chat: DiscordChat, *,
                 sharded: bool, message_content: bool, **options: Any) -> CouncilClient:
    use_api(config.api_url)
    cls = ShardedCouncilClient if sharded else CouncilClient
    client = cls(handlers=Handlers(service, store, chat, config.default_tz), driver=driver,
                 sweep_interval_s=config.sweep_interval_s, intents=intents(message_content), **options)
    chat.attach(client, store, reply_button=not message_content)
    return client


async def serve(config: DiscordConfig, service: Service, driver: Driver, store: Store, chat: DiscordChat,
                **options: Any) -> None:
    """Run until the connection ends; without the Message Content intent, reconnect with the Reply button."""
    use_api(config.api_url)
    sharded = await count_guilds(config.token, stop_after=config.shard_guilds) > config.shard_guilds
    for message_content in (True, False):
        client = build_client(config, service, driver, store, chat, sharded=sharded,
                              message_content=message_content, **options)
        try:
            async with client:
                await client.start(config.token)
            return
        except discord.PrivilegedIntentsRequired:
            log.warning("the Message Content intent is not enabled for this app: humans reply through the "
                        "Reply button or by @mentioning the bot")
