"""The OAuth installation store with every credential encrypted at rest (slack_sdk's SQLAlchemy store, sealed)."""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from slack_sdk.oauth.installation_store import Bot, Installation
from slack_sdk.oauth.installation_store.async_cacheable_installation_store import AsyncCacheableInstallationStore
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.sqlalchemy import AsyncSQLAlchemyInstallationStore
from sqlalchemy import MetaData, Table, Text, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from core.storage.sealing import KEY_VARIABLE, NEW_KEY_HINT, BadKey, Sealer, looks_sealed

log = logging.getLogger(__name__)

# What an installation holds that lets someone act as the app (or a person) in a workspace.
INSTALLATION_SECRETS = ("bot_token", "bot_refresh_token", "user_token", "user_refresh_token", "incoming_webhook_url")
BOT_SECRETS = ("bot_token", "bot_refresh_token")
TABLES = {"slack_installations": INSTALLATION_SECRETS, "slack_bots": BOT_SECRETS}


class MissingKey(BadKey):
    """OAuth installs were asked for without a key to keep their tokens under."""


def sealer_for_oauth(key: str) -> Sealer:
    """The key an OAuth deployment must have. Refused without one rather than generated beside the database: a
    key kept on the same disk (and in the same backups) as the tokens protects nothing, and one lost with a
    container's filesystem would make every installation unreadable."""
    if not key.strip():
        raise MissingKey(f"{KEY_VARIABLE} is required with SLACK_CLIENT_ID and SLACK_CLIENT_SECRET: each "
                         f"workspace's bot token is stored encrypted under it; {NEW_KEY_HINT}")
    return Sealer.from_keys(key)


def _widen(table: Table, columns: tuple[str, ...]) -> Table:
    for name in columns:  # ciphertext is longer than the token: VARCHAR(200) would cut it on PostgreSQL
        table.c[name].type = Text()
    return table


class SealedInstallations(AsyncSQLAlchemyInstallationStore):
    """Tokens are encrypted before they are written and decrypted when read; nothing else changes."""

    def __init__(self, sealer: Sealer, **kwargs: Any) -> None:
        self.sealer = sealer
        super().__init__(**kwargs)

    @classmethod
    def build_installations_table(cls, metadata: MetaData, table_name: str) -> Table:
        return _widen(super().build_installations_table(metadata, table_name), INSTALLATION_SECRETS)

    @classmethod
    def build_bots_table(cls, metadata: MetaData, table_name: str) -> Table:
        return _widen(super().build_bots_table(metadata, table_name), BOT_SECRETS)

    def _apply(self, entity: Any, fields: tuple[str, ...], how: Any) -> Any:
        out = copy.copy(entity)
        for name in fields:
            value = getattr(out, name, None)
            if value:
                setattr(out, name, how(value))
        return out

    def _seal(self, value: str) -> str:
        return value if self.sealer.sealed(value) else self.sealer.seal(value)

    async def async_save(self, installation: Installation) -> None:
        # The parent saves the bot too, from this (sealed) copy: _seal leaves ciphertext as it is.
        await super().async_save(self._apply(installation, INSTALLATION_SECRETS, self._seal))

    async def async_save_bot(self, bot: Bot) -> None:
        await super().async_save_bot(self._apply(bot, BOT_SECRETS, self._seal))

    async def async_find_bot(self, **kwargs: Any) -> Bot | None:
        found = await super().async_find_bot(**kwargs)
        return None if found is None else self._apply(found, BOT_SECRETS, self.sealer.unseal)

    async def async_version(self) -> int:
        """What this app's stored installations and bots are now, as one number: any install, reinstall, token
        refresh (written in place, under fresh ciphertext) or removal, by any process, changes it. One read of
        every row, kept by no one: cheaper than reading and decrypting each workspace's token again."""
        rows = []
        async with self.engine.connect() as conn:
            for table in (self.installations, self.bots):
                found = await conn.execute(select(table).where(table.c.client_id == self.client_id))
                rows.append(frozenset(tuple(row) for row in found))  # in any order: each row holds its id
        return hash(tuple(rows))

    async def async_find_installation(self, **kwargs: Any) -> Installation | None:
        found = await super().async_find_installation(**kwargs)
        # The parent may have copied in the latest bot's token through async_find_bot: already in clear.
        return None if found is None else self._apply(found, INSTALLATION_SECRETS, self._unseal_stored)

    def _unseal_stored(self, value: str) -> str:
        """A token in clear (stored by an older release) as it is; ciphertext decrypted, or BadKey: never sent."""
        return self.sealer.unseal(value) if looks_sealed(value) else value


class ExpiringInstallations(AsyncCacheableInstallationStore):
    """slack_sdk's in-memory cache of installations, checked every `ttl_s`. Every Web API call needs its
    workspace's token: without the cache each one is a database read and a decryption. The library's cache keeps
    entries for good, so an install, reinstall or uninstall another replica handled would never be seen here;
    checked once a minute, it is. `version`: what the stored installations are now (`async_version`); the cache is
    emptied only when that changed since the last check (without it: every time). A save or delete made through
    this process empties it at once."""

    def __init__(self, store: AsyncInstallationStore, ttl_s: float = 60.0,
                 monotonic: Callable[[], float] = time.monotonic,
                 version: Callable[[], Awaitable[Hashable]] | None = None) -> None:
        super().__init__(store)
        self.ttl_s, self._monotonic, self._version = ttl_s, monotonic, version
        self._since = monotonic()
        self._seen: Hashable = None  # the version at the last check
        self._stale = True  # the next check empties the cache whatever it finds (none yet to compare with)
        self._missing: set[tuple[tuple[str, Any], ...]] = set()
        self._forgotten = 0  # times the cache was emptied

    def _forget(self) -> None:
        self.cached_bots.clear()
        self.cached_installations.clear()
        self._missing.clear()
        self._forgotten += 1

    def _read_during(self, forgotten: int) -> None:
        """A find that began before the cache was last emptied may have put back what it read before that, and the
        rows may have changed since: the next check empties the cache whatever it finds, as it would without a
        version (emptying it here would make every find that overlaps this one empty it again)."""
        if self._forgotten != forgotten:
            self._stale = True

    async def _expire(self) -> None:
        now = self._monotonic()
        if now - self._since < self.ttl_s:
            return
        self._since = now  # before the look: finds meanwhile go by the cache, and do not look again
        if self._version is not None:
            # Whatever was cached was read from the rows as they were at the last look or later; unchanged since
            # then, every cached answer still holds. A change after this look is seen at the next.
            was, stale, self._stale = self._seen, self._stale, False  # marked stale during the look: the next
            try:
                self._seen = await self._version()
            except Exception:  # the look is a shortcut: without it, each find reads its row again
                log.warning("could not look at the stored installations; reading each token again", exc_info=True)
            else:
                if not stale and was == self._seen:
                    return
        self._forget()

    async def async_find_bot(self, **kwargs: Any) -> Bot | None:
        await self._expire()
        forgotten = self._forgotten
        found = await super().async_find_bot(**kwargs)
        self._read_during(forgotten)
        return found

    async def async_find_installation(self, **kwargs: Any) -> Installation | None:
        """Bolt looks for the installation of each person who acts (their user token): most people have none,
        and that answer is remembered too, or every click would be a database read."""
        await self._expire()
        key = tuple(sorted(kwargs.items()))
        if key in self._missing:
            return None
        forgotten = self._forgotten
        found = await super().async_find_installation(**kwargs)
        if found is None:
            self._missing.add(key)
        self._read_during(forgotten)
        return found

    # Forgotten before the write, not after: while an uninstall is being written no request may still be handed
    # the token it removes, nor an install be hidden by a miss remembered a moment earlier.
    async def async_save(self, installation: Installation) -> None:
        self._forget()
        await super().async_save(installation)

    async def async_save_bot(self, bot: Bot) -> None:
        self._forget()
        await super().async_save_bot(bot)

    # The store's own keywords, each passed on by name: which workspace (and person) a removal is for is the rule.
    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self._forget()
        await super().async_delete_bot(enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_installation(self, *, enterprise_id: str | None, team_id: str | None,
                                        user_id: str | None = None) -> None:
        self._forget()
        await super().async_delete_installation(enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        self._forget()
        await super().async_delete_all(enterprise_id=enterprise_id, team_id=team_id)


async def reseal(engine: AsyncEngine, sealer: Sealer) -> int:
    """Re-encrypt every stored credential under the first key (and encrypt any stored in clear); the rows
    changed. Run with COUNCIL_ENCRYPTION_KEY="new,old" before dropping the old key."""
    changed = 0
    async with engine.begin() as conn:
        names = await conn.run_sync(lambda sync: set(sync.dialect.get_table_names(sync)))
        for table_name, columns in TABLES.items():
            if table_name not in names:
                continue
            meta = MetaData()
            await conn.run_sync(meta.reflect, only=[table_name])
            table = meta.tables[table_name]
            for row in (await conn.execute(select(table.c.id, *(table.c[c] for c in columns)))).all():
                values = {c: v for c, v in zip(columns, row[1:], strict=True) if v}
                # Ciphertext no key here reads stops the reseal (its transaction is rolled back): sealed again as
                # if it were clear text, it would be lost for good under two layers.
                new = {c: sealer.reseal(v, f"{table_name}.{c} of row {row[0]}") if looks_sealed(v) else sealer.seal(v)
                       for c, v in values.items()}
                if new:
                    await conn.execute(update(table).where(table.c.id == row[0]).values(**new))
                    changed += 1
    return changed
