"""Removed from a guild: its schedules and digests go; its discussions stay."""

from __future__ import annotations

from tests.adapters.discord.conftest import Council, settled


async def test_guild_removal_forgets_its_schedules(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council-digest", cadence="daily")
    await fake.wait_for(lambda: i.followups)
    i = await fake.slash(dana, "council", topic="Should we move to trunk-based development?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()

    async def schedules() -> list[str]:
        async with council.app.store.tx() as tx:
            return [s.workspace for s in await tx.schedules(enabled_only=False)]

    assert await schedules() == [fake.guild_id]
    await fake.dispatch("GUILD_DELETE", {"id": fake.guild_id})  # kicked: no "unavailable" flag

    async def gone() -> bool:
        return await schedules() == []

    await settled(council, gone)
    assert (await council.discussion()).workspace == fake.guild_id, "discussions are kept"
