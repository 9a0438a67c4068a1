"""The slash commands as a discord.py CommandTree: typed options, choices and autocomplete, each ending in Handlers.

Discord lets a command have options or subcommands, not both: `/council` takes the topic and its options, and
the other verbs are sibling commands (`/council-status`, `/council-schedule`, ...).
"""

from typing import Any, Literal, Protocol

import discord
from discord import app_commands
from discord.app_commands import Choice, Range

from adapters.discord import tags
from adapters.discord import translate as t

Topic = Range[str, 1, 4000]
Zone = Range[str, 1, 64]
Id = Range[str, 1, 40]
Cadence = Literal["daily", "weekly", "cron", "off"]
FlowChoice = Literal["moderated", "council", "meeting", "open"]
Style = Literal["parallel", "sequential", "debate"]
TierChoice = Literal["light", "medium", "heavy"]
Memory = Literal["channel", "workspace", "off"]


class CommandHandler(Protocol):
    async def command(self, interaction: discord.Interaction[Any], name: str, opts: dict[str, Any]) -> None: ...

    async def discussion_choices(self, interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]: ...


def _handler(interaction: discord.Interaction[Any]) -> CommandHandler:
    handler: CommandHandler = interaction.client.handlers  # type: ignore[attr-defined]
    return handler


async def _ids(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
    return await _handler(interaction).discussion_choices(interaction, current)


async def _zones(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
    return [Choice(name=z, value=z) for z in t.zone_choices(current)]


async def _every(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
    return [Choice(name=s, value=s) for s in t.suggestion_choices(current, t.EVERY_SUGGESTIONS)]


async def _when(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
    return [Choice(name=s, value=s) for s in t.suggestion_choices(current, (*t.NEXT_SUGGESTIONS, "off"))]


def _guild_command(**kwargs: Any) -> Any:
    """A chat-input command usable in servers only (councils live in channels and threads)."""
    def wrap(func: Any) -> app_commands.Command[Any, ..., None]:
        cmd: Any = app_commands.command(**kwargs)(func)
        cmd = app_commands.guild_only()(cmd)
        return app_commands.allowed_installs(guilds=True, users=False)(cmd)
    return wrap


@_guild_command(name="council", description="Start a moderated AI council on a topic")
@app_commands.describe(
    topic="What the council should deliberate",
    rounds="Run this many rounds unattended, then synthesize",
    experts="How many topic experts (2-8)",
    confirm="Show the roster with Start / Modify before it begins",
    debate="Experts argue assigned sides instead of open statements",
    roles="Extra perspectives to include, comma separated (security, finance)",
    anonymous="Polls record who voted but do not show it",
    hidden="Poll counts stay hidden until the poll closes",
    every="Run a follow-up round on a cadence: 12h, 1d, 1w",
    next_at="Run the next round at a time: tomorrow 09:00, in 1 hour, monday",
    tz="Time zone for the times you give, e.g. Europe/Berlin",
    flow="How they deliberate: moderated rounds, a council, a meeting that ranks, or an open floor",
    style="Council only: parallel, sequential, or debate",
    tier="Council and meeting: light (default model), medium (stronger referee/moderator), heavy (strongest for all)",
    lang="Language to speak, e.g. German (default: the topic's language)",
    hints="Open floor: controversy axes, comma separated (cost, privacy)",
    check="A Fact-checker checks claims against web sources (default: the server's setting)",
    peer_review="After each round's statements every persona ranks the others', authors hidden",
    memory="Earlier decisions to open with: this channel's (default), the server's, or off",
    seat="A person who takes a seat themselves: asked in the thread when it is their turn",
    models="Providers and models dealt to the speakers: openai:gpt-5.1 anthropic:claude-sonnet-5-5",
    poll_hours="How many hours the final poll stays open after the discussion (1-720; default 24)",
)
@app_commands.rename(next_at="next", poll_hours="poll-hours", peer_review="peer-review")
@app_commands.autocomplete(every=_every, next_at=_when, tz=_zones)
async def council(interaction: discord.Interaction[Any], topic: Topic, rounds: Range[int, 1, 10] | None = None,
                  experts: Range[int, 2, 8] | None = None, confirm: bool = False, debate: bool = False,
                  roles: Range[str, 1, 300] | None = None, anonymous: bool = False, hidden: bool = False,
                  every: Range[str, 1, 10] | None = None, next_at: Range[str, 1, 60] | None = None,
                  tz: Zone | None = None, flow: FlowChoice | None = None, style: Style | None = None,
                  tier: TierChoice | None = None, lang: Range[str, 1, 30] | None = None,
                  hints: Range[str, 1, 300] | None = None, check: bool | None = None, peer_review: bool = False,
                  memory: Memory | None = None, seat: discord.Member | None = None,
                  models: Range[str, 1, 300] | None = None,
                  poll_hours: Range[int, 1, 720] | None = None) -> None:
    await _handler(interaction).command(interaction, "council", {"check": check, "peer_review": peer_review,
        "topic": topic, "rounds": rounds, "experts": experts, "confirm": confirm, "debate": debate, "roles": roles,
        "anonymous": anonymous, "hidden": hidden, "every": every, "next": next_at, "tz": tz, "flow": flow,
        "style": style, "tier": tier, "lang": lang, "hints": hints, "memory": memory,
        "seat": f"{seat.id}|{seat.display_name}" if seat is not None else None, "models": models,
        "poll_hours": poll_hours})


@_guild_command(name="council-decisions", description="Search the decisions of the channels you can see")
@app_commands.describe(words="Words to look for (none: the most recent)")
async def council_decisions(interaction: discord.Interaction[Any], words: Range[str, 1, 200] | None = None) -> None:
    await _handler(interaction).command(interaction, "council-decisions", {"words": words})


@_guild_command(name="council-list", description="List this channel's councils")
async def council_list(interaction: discord.Interaction[Any]) -> None:
    await _handler(interaction).command(interaction, "council-list", {})


@_guild_command(name="council-help", description="How to use Council")
async def council_help(interaction: discord.Interaction[Any]) -> None:
    await _handler(interaction).command(interaction, "council-help", {})


def _verb(verb: str, description: str) -> app_commands.Command[Any, ..., None]:
    name = f"council-{verb}"

    @_guild_command(name=name, description=description)
    @app_commands.describe(id="Discussion id (defaults to the thread you are in)")
    @app_commands.autocomplete(id=_ids)
    async def run(interaction: discord.Interaction[Any], id: Id | None = None) -> None:
        await _handler(interaction).command(interaction, name, {"id": id})

    return run  # type: ignore[no-any-return]


@_guild_command(name="council-schedule", description="Run a council's next round later, or on a cadence")
@app_commands.describe(id="Discussion id (defaults to the thread you are in)",
                       when="tomorrow 09:00, in 1 hour, monday 10:00, or off to cancel",
                       every="Then on this cadence: 12h, 1d, 1w", tz="Time zone for `when`, e.g. Europe/Berlin")
@app_commands.autocomplete(id=_ids, when=_when, every=_every, tz=_zones)
async def council_schedule(interaction: discord.Interaction[Any], id: Id | None = None,
                           when: Range[str, 1, 60] | None = None, every: Range[str, 1, 10] | None = None,
                           tz: Zone | None = None) -> None:
    await _handler(interaction).command(interaction, "council-schedule",
                                        {"id": id, "when": when, "every": every, "tz": tz})


@_guild_command(name="council-digest", description="Post a digest of this channel's councils on a schedule")
@app_commands.describe(cadence="How often (off stops the digest)", cron="5-field cron expression when cadence is cron",
                       tz="Time zone, e.g. Europe/Berlin")
@app_commands.autocomplete(tz=_zones)
async def council_digest(interaction: discord.Interaction[Any], cadence: Cadence,
                         cron: Range[str, 9, 100] | None = None, tz: Zone | None = None) -> None:
    await _handler(interaction).command(interaction, "council-digest", {"cadence": cadence, "cron": cron, "tz": tz})


async def _tags(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
    return tags.choices(interaction.channel, current)


@_guild_command(name="council-config", description="Set this channel's meeting owners or its discussions' defaults")
@app_commands.describe(owners='"Dana: Billing; Eli: Mobile app" (2 to 8), or off to generate them for each topic',
                       defaults="flow=meeting rounds=3 tier=medium lang=German, or off: what new discussions here use",
                       tag="Forums: the tag each new post here carries (off: the first tag I may apply)")
@app_commands.autocomplete(tag=_tags)
async def council_config(interaction: discord.Interaction[Any], owners: Range[str, 2, 1000] | None = None,
                         defaults: Range[str, 2, 500] | None = None, tag: Range[str, 1, 100] | None = None) -> None:
    await _handler(interaction).command(interaction, "council-config",
                                        {"owners": owners, "defaults": defaults, "tag": tag})


VERBS = [("status", "Show a council's status"), ("pause", "Pause a council"), ("resume", "Resume a council"),
         ("stop", "Stop a council"), ("synthesize", "Ask for a council's final synthesis now"),
         ("revoke-links", "Stop every link to a council's page given out so far (its starter or an admin)")]


def build_tree(client: discord.Client) -> app_commands.CommandTree[Any]:
    """The client's command tree (command objects hold no state of their own, so trees may share them)."""
    tree: app_commands.CommandTree[Any] = app_commands.CommandTree(client)
    for cmd in (council, council_list, *(_verb(v, d) for v, d in VERBS), council_schedule, council_digest,
                council_config, council_decisions, council_help):
        tree.add_command(cmd)
    return tree
