"""Channel configuration through the service: meeting owners are set by admins (or by the channel's members when
COUNCIL_MEMBERS_CONFIGURE=true), and every name seated, typed or generated, is cleaned of mentions and markup."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.permissions import Refused
from core.deliberation.roster import clean_name
from core.deliberation.schemas import RosterSpec
from core.models import Phase
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

Make = Callable[..., Any]
HOSTILE = ["<!here>: Billing", "<@U1> Dana: Mobile <!channel>", "@everyone Eli: <#C1> Platform",
           "<@123456789> Fay: *Ops* <@&42>"]


@pytest.fixture
async def make_app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM) -> AsyncIterator[Make]:
    apps: list[App] = []

    async def make(**settings: Any) -> App:
        s = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}", **settings)  # type: ignore[call-arg]
        apps.append(await build_app(s, {"console": chat}, llm=llm))
        return apps[-1]

    yield make
    for app in apps:
        await app.close()


def owners(lines: list[str], user: str = "U2", **kw: Any) -> c.SetOwners:
    return c.SetOwners(**{"platform": "console", "workspace": "T1", "channel": "C1", "in_channel": "C1",
                          "user_id": user, "owners": lines, **kw})


async def stored(app: App) -> list[str]:
    async with app.store.tx() as tx:
        return await tx.channel_owners("console", "T1", "C1")


async def test_a_member_cannot_seat_here_or_anyone_else(make_app: Make) -> None:
    app = await make_app()
    with pytest.raises(Refused, match="Only workspace admins can configure this channel"):
        await app.service.handle(owners(["<!here>: Everyone", "Bob: Billing"]))
    with pytest.raises(Refused, match="Only workspace admins"):
        await app.service.handle(owners([]))  # nor turn the admins' owners off
    assert await stored(app) == []


async def test_an_admins_owners_are_cleaned_of_mentions_and_markup(make_app: Make) -> None:
    app = await make_app()
    reply = await app.service.handle(owners(HOSTILE, is_admin=True))
    saved = await stored(app)
    for text in (reply.text, *saved):
        for bad in ("<!", "<#", "<@&", "@everyone", "@here", "*"):
            assert bad not in text, (bad, text)
    assert "<@" not in reply.text, "the reply is plain words: a seated person is named, not mentioned"
    # A line whose name was nothing but a mention seats nobody; a person's mention seats them (issue 20), kept as
    # one mention rebuilt from their id alone.
    assert saved == ["Dana <@U1>: Mobile", "Eli: Platform", "Fay <@123456789>: Ops"]


async def test_members_configure_their_own_channel_when_the_operator_allows_it(make_app: Make) -> None:
    app = await make_app(council_members_configure=True)
    await app.service.handle(owners(["Dana: Billing", "Eli: Mobile"]))
    assert await stored(app) == ["Dana: Billing", "Eli: Mobile"]
    with pytest.raises(Refused, match="the channel you are in"):
        await app.service.handle(owners(["Dana: Billing", "Eli: Mobile"], in_channel="C2"))


async def test_persona_names_the_model_generates_are_cleaned(make_app: Make, llm: ScriptedLLM) -> None:
    def hostile(spec: RosterSpec) -> RosterSpec:
        names = ["<!here> Priya", "<@U0001|boss> Omar", "@everyone", "<#C9|general> Lin **Bold**"]
        for expert, name in zip(spec.experts, names, strict=False):
            expert.name = name
            expert.title = f"{name} title <!channel>"
        return spec

    llm.rewrite[Phase.ROSTER] = hostile
    app = await make_app()
    did = (await app.service.handle(c.StartDiscussion(topic="Trunk-based development?", platform="console",
                                                      workspace="T1", channel="C1", in_channel="C1", user_id="U1",
                                                      rounds=1, experts=4))).discussion_id
    await app.driver.idle()
    async with app.store.tx() as tx:
        personas = await tx.personas(did)
    names = {p.name for p in personas}
    assert {"Priya", "Omar", "Lin Bold"} <= names
    for p in personas:
        for bad in ("<", ">", "@", "*"):
            assert bad not in p.name and bad not in p.title, p


@pytest.mark.parametrize("raw,clean", [
    ("<!here>", ""), ("<!subteam^S1|@devs> Ann", "Ann"), ("<@U1|dana>", ""), ("Dana <@U1>", "Dana"),
    ("<#C1|general> Bo", "Bo"), ("<https://evil.example|click> Cy", "Cy"), ("<@!123> Di", "Di"),
    ("`Ed` ~Fi~ _Gu_", "Ed Fi Gu"), ("@channel Hal", "Hal"), ("#general Jo", "Jo"), ("C# Guru", "C# Guru"),
    ("Ivy\u202e\u200b", "Ivy"),
    ("José Núñez", "José Núñez"), ("O'Brien-Smith", "O'Brien-Smith"),
])
def test_clean_name(raw: str, clean: str) -> None:
    assert clean_name(raw) == clean
