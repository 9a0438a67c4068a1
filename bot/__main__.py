"""Command line: console, slack, discord, migrate, list, export (typer); logs go to stderr."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from bot.logs import redact_settings
from bot.settings import Settings, unknown_variables

cli = typer.Typer(add_completion=False, no_args_is_help=True, help="Council: moderated AI deliberation.")
err = Console(stderr=True)


def _settings(*, quiet: bool = False) -> Settings:
    """Every command starts here: settings from the environment, logging to stderr with secrets masked.

    `quiet` (the console without --verbose, and the operator's commands that print a result): only warnings, so
    library chatter (alembic's INFO lines) never mixes with what the command prints, unless COUNCIL_LOG_LEVEL
    asks for more."""
    try:
        settings = Settings()
    except ValidationError as exc:  # a setting that cannot work: one clear line per problem, no traceback
        for problem in exc.errors():
            err.print(f"[bold red]error:[/] {str(problem['msg']).removeprefix('Value error, ')}")
        raise typer.Exit(2) from None
    level = settings.council_log_level.upper()
    plain = quiet and "council_log_level" not in settings.model_fields_set
    if plain:
        level = "WARNING"
    logging.basicConfig(
        level=level, stream=sys.stderr,
        # Quiet, a warning is a line said to the person at the terminal; asked for, a log record with its time.
        format="%(levelname)s: %(message)s" if plain else "%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    redact_settings(settings)  # on the root's handlers: every record, from every library, passes through them
    logging.getLogger("apscheduler").setLevel(logging.WARNING)  # a line per job run; our timer logs firings
    # slack_sdk asks its Web API client's logger for its own level, not the level it inherits, before writing out
    # a whole request and response for a debug line: left unset, every call did that work for a line the root
    # logger then dropped.
    logging.getLogger("slack_sdk.web.async_base_client").setLevel(level)
    for name, close in unknown_variables(os.environ):
        logging.getLogger("bot").warning("%s is not a Council setting and is ignored%s", name,
                                         f" (did you mean {close}?)" if close else "")
    return settings


def _login_name() -> str:
    """Who is at the terminal, as the system names them: the personas address a person by name, and "You" read
    as one ("Thanks, You")."""
    import getpass

    try:
        return getpass.getuser() or "Operator"
    except (KeyError, OSError):  # no user name for this uid (a bare container)
        return "Operator"


# The offline model's pace on a terminal, a step at a time (the experts' statements are written together): a
# round takes under a minute (45 s measured), time to read a post and type a question before the next turn answers it.
PACE_S = 4.0


def _pace(settings: Settings, pace: float | None, *, attended: bool) -> float:
    """The offline model's seconds a step: --pace, else COUNCIL_OFFLINE_DELAY_S when set, else PACE_S when a person
    sits at a terminal to take part, else none (unattended, piped, or a test's)."""
    if pace is not None:
        return pace
    if "council_offline_delay_s" in settings.model_fields_set:
        return settings.council_offline_delay_s
    return PACE_S if attended and sys.stdin.isatty() and sys.stdout.isatty() else 0.0


def _fail(message: str) -> None:
    err.print(f"[bold red]error:[/] {escape(message)}")  # a message may quote the topic: "[core]" is words
    raise typer.Exit(2)


@cli.command()
def console(
    topic: Annotated[str, typer.Argument(help="What the council should deliberate")] = "",
    rounds: Annotated[int | None, typer.Option(help="Run this many rounds unattended, then synthesize")] = None,
    experts: Annotated[int, typer.Option(min=2, max=8, help="Number of topic experts")] = 4,
    no_input: Annotated[bool, typer.Option("--no-input", help="Never ask: run unattended")] = False,
    confirm: Annotated[bool, typer.Option("--confirm", help="Show the roster before starting")] = False,
    resume: Annotated[str | None, typer.Option("--resume", help="Continue a paused or crashed discussion")] = None,
    exports: Annotated[Path, typer.Option(help="Folder for synthesis.md, open-questions.md, transcript.json")] = Path(
        "exports"),
    name: Annotated[str, typer.Option(help="Your name in the discussion (default: your login name)")] = "",
    flow: Annotated[str, typer.Option(help="moderated, council, meeting or open")] = "moderated",
    style: Annotated[str, typer.Option(help="Council: parallel, sequential or debate")] = "parallel",
    tier: Annotated[str, typer.Option(help="Council and meeting: light, medium or heavy (default: the flow's)")] = "",
    lang: Annotated[str, typer.Option(help="Language to speak (default: the topic's)")] = "",
    hints: Annotated[str, typer.Option(help="Open floor: controversy axes, comma separated")] = "",
    check: Annotated[bool | None, typer.Option("--check/--no-check", help="A Fact-checker checks claims with web "
                                                                       "search (default: COUNCIL_FACT_CHECK)")] = None,
    peer_review: Annotated[bool, typer.Option("--peer-review", help="After each round's statements every persona "
                                                                    "ranks the others', authors hidden")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Log progress (INFO) to stderr, not only warnings")] = (
        False),
    memory: Annotated[str, typer.Option(help="Earlier decisions to open with: channel, workspace or off")] = "channel",
    no_memory: Annotated[bool, typer.Option("--no-memory", help="Open without earlier decisions")] = False,
    seat: Annotated[str, typer.Option(help="Take this seat yourself (e.g. 'Billing'): you are asked on its turns")]
    = "",
    models: Annotated[str, typer.Option(help=(
        "Providers and models: 'openai:gpt-5.1 anthropic:claude-sonnet-5-5' dealt to the speaking seats in turn, "
        "'heavy=anthropic:claude-opus-5-5' for a tier, 'Skeptic=ollama:llama3.3' for one persona"))] = "",
    poll_hours: Annotated[str, typer.Option(help="Hours the final poll stays open after the discussion (1-720; "
                                                 "default 24): /close closes it sooner")] = "",
    pace: Annotated[float | None, typer.Option(min=0, max=30, help=(
        "Offline model only: seconds each step takes, so a person can read and join in (default: "
        f"{PACE_S:g} on a terminal, 0 unattended or piped, or COUNCIL_OFFLINE_DELAY_S)"))] = None,
) -> None:
    """Run a discussion in this terminal."""
    from bot.runtime import run_console
    from core.control import commands as c
    from core.deliberation import flows

    if resume is None:
        from core.control.service import UserError, validate_topic

        try:
            validate_topic(topic)
        except UserError as exc:
            _fail(str(exc))
    if rounds is not None and not 1 <= rounds <= 10:
        _fail("--rounds must be between 1 and 10.")
    name = name.strip() or _login_name()
    if seat.strip() and no_input:
        _fail("--seat makes you take part in person; it needs the terminal, so drop --no-input.")
    try:
        flow, style = flows.choice("flow", flow, c.FLOW_NAMES), flows.choice("style", style, flows.STYLES)
        chosen: dict[str, Any] = {"flow": flow, "style": style,
                                  "tier": flows.choice("tier", tier, flows.TIERS) if tier else "",
                                  "lang": flows.language(lang) if lang else "",
                                  "hints": [h.strip() for h in hints.split(",") if h.strip()][:8], "check": check,
                                  "peer_review": peer_review,
                                  "memory": "off" if no_memory else flows.choice("memory", memory,
                                                                                 ("channel", "workspace", "off")),
                                  "models": models}
        if poll_hours.strip():
            from core.control.defaults import poll_hours as hours

            chosen["poll_hours"] = hours(poll_hours, "--poll-hours")
        if seat.strip():
            from adapters.console.translate import USER_ID
            from core.models import SeatHolder

            chosen["seats"] = [SeatHolder(user_id=USER_ID, name=name, title=seat.strip()[:120])]
        flows.planned_rounds(flow, rounds, style)
    except (flows.BadFlow, ValueError) as exc:
        _fail(str(exc).replace("`", "").rstrip(".") + ".")
    settings = _settings(quiet=not verbose)
    settings = settings.model_copy(update={"council_offline_delay_s": _pace(settings, pace, attended=not no_input)})
    code = asyncio.run(run_console(settings, topic=topic, rounds=rounds, experts=experts,
                                   no_input=no_input, confirm=confirm, resume=resume, exports=exports, user_name=name,
                                   flow_options=chosen))
    raise typer.Exit(code)


def _serve(main: Coroutine[Any, Any, int]) -> int:
    """Servers run on uvloop where it is installed (Linux, macOS): the same asyncio, with the loop itself in C,
    which under 100 concurrent discussions leaves more of a core for the discussions."""
    try:
        import uvloop
    except ImportError:  # Windows: the standard loop
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


@cli.command()
def slack() -> None:
    """Serve Slack: POST /slack/events and GET /healthz on $PORT, or Socket Mode with SLACK_APP_TOKEN."""
    from bot.runtime import run_slack

    raise typer.Exit(_serve(run_slack(_settings())))


@cli.command()
def discord() -> None:
    """Serve Discord: /council in servers, personas in threads (REST and gateway via DISCORD_API_URL)."""
    from bot.runtime import run_discord

    raise typer.Exit(_serve(run_discord(_settings())))


@cli.command()
def web() -> None:
    """Serve discussion pages (GET /d/{id}) on $PORT: for Discord and console deployments."""
    from bot.runtime import run_web

    raise typer.Exit(_serve(run_web(_settings())))


@cli.command()
def migrate() -> None:
    """Create or upgrade the database schema."""
    from core.storage.db import make_engine
    from core.storage.db import migrate as run

    settings = _settings()

    async def go() -> None:
        engine = make_engine(settings.database_url)
        try:
            await run(engine, settings.encryption_key)
        finally:
            await engine.dispose()

    asyncio.run(go())
    err.print("database schema is current")


@cli.command()
def reseal() -> None:
    """Re-encrypt every stored credential under the first key of COUNCIL_ENCRYPTION_KEY ("new,old")."""
    from adapters.slack.installs import reseal as run
    from core.storage.db import make_engine
    from core.storage.db import migrate as upgrade
    from core.storage.sealing import BadKey, Sealer

    settings = _settings()
    try:
        sealer = Sealer.from_keys(settings.encryption_key)
    except BadKey as exc:
        _fail(str(exc))

    async def go() -> int:
        engine = make_engine(settings.database_url)
        try:
            await upgrade(engine, settings.encryption_key)
            return await run(engine, sealer)
        finally:
            await engine.dispose()

    try:
        changed = asyncio.run(go())
    except BadKey as exc:
        _fail(str(exc))
    err.print(f"{changed} stored installation(s) now encrypted under the first key; the others may be dropped.")


@cli.command("list")
def list_(
    format: Annotated[str, typer.Option("--format", help="text or json")] = "text",
    channel: Annotated[str | None, typer.Option(help="Only this channel")] = None,
) -> None:
    """List discussions, newest first."""
    from bot.runtime import open_store

    if format not in ("text", "json"):
        _fail("--format must be text or json.")
    settings = _settings(quiet=True)

    async def go() -> list[dict[str, object]]:
        store = await open_store(settings)
        try:
            async with store.tx() as tx:
                items = await tx.discussions(channel=channel)
        finally:
            await store.close()
        return [d.model_dump(mode="json", include={"id", "topic", "status", "flow", "platform", "channel",
                                                   "round", "created_by", "created_at", "cost_usd"}) for d in items]

    rows = asyncio.run(go())
    if format == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    if not rows:
        print("No discussions yet.")
    for r in rows:
        print(f"{r['id']}  {r['status']:<22} round {r['round']}  {r['created_at']}  {r['topic']}")


@cli.command()
def decisions(
    words: Annotated[str, typer.Argument(help="Words to look for (none: the most recent)")] = "",
    format: Annotated[str, typer.Option("--format", help="text or json")] = "text",
) -> None:
    """Search every workspace's decision records (the operator's view), best match first."""
    from bot.runtime import open_store

    if format not in ("text", "json"):
        _fail("--format must be text or json.")
    settings = _settings(quiet=True)

    async def go() -> list[dict[str, object]]:
        store = await open_store(settings)
        try:
            async with store.tx() as tx:
                found = []
                for place in await tx.decision_places():
                    found += await tx.decisions_found(*place, None, words, limit=20)
        finally:
            await store.close()
        return [d.model_dump(mode="json") for d in found]

    rows = asyncio.run(go())
    if format == "json":
        sys.stdout.write(json.dumps(rows, indent=2, ensure_ascii=False) + "\n")
        return
    if not rows:
        print("No decisions" + (f" matching {words!r}" if words else "") + ".")
    for r in rows:
        print(f"{r['id']:>4}  {str(r['decided_at'])[:10]}  {r['flow']:<9} {r['topic']}\n      {r['decided']}")


@cli.command()
def export(
    discussion_id: Annotated[str | None, typer.Argument(help="Discussion id")] = None,
    latest: Annotated[bool, typer.Option("--latest", help="The most recently created discussion")] = False,
    format: Annotated[str, typer.Option("--format", help="json, md, html, or dir (a folder: manifest.json, "
                                                          "personas/, rounds/, artifacts/, context/)")] = "json",
    out: Annotated[Path | None, typer.Option(help="Also write transcript.json, synthesis.md, open-questions.md and "
                                                  "the charts here (and discussion.html with --format html); with "
                                                  "--format dir, the folder (default: exports/ID)")]
    = None,
) -> None:
    """Print a discussion's full record (JSON), its synthesis (Markdown) or its page as one offline HTML file."""
    from adapters.console.app import write_files
    from adapters.web.page import render
    from bot.runtime import open_store
    from bot.wiring import page_links
    from core.models import PostFile
    from core.showing import filing
    from core.showing.export import export as build
    from core.showing.extras import chart_files

    if format not in ("json", "md", "html", "dir"):
        _fail("--format must be json, md, html or dir.")
    if not discussion_id and not latest:
        _fail("give a discussion id or --latest.")
    settings = _settings(quiet=True)
    written = format in ("dir", "html") or out is not None  # the charts go where files are written, or in the page

    async def go() -> tuple[dict[str, Any] | None, list[PostFile]]:
        store = await open_store(settings)
        try:
            target = discussion_id
            if latest:
                async with store.tx() as tx:
                    target = await tx.latest_discussion_id()
            if not target:
                return None, []
            # The operator sees the ballots of a poll whose results are hidden, marked as such.
            doc = await build(store, target, operator=True, pages=page_links(settings), now=datetime.now(UTC))
            return doc, (await chart_files(store, target) if doc is not None and written else [])
        finally:
            await store.close()

    doc, charts = asyncio.run(go())
    if doc is None:
        _fail("no discussion found" + (f" with id {discussion_id!r}" if discussion_id else "") + ".")
        return
    if format == "dir":
        folder = out if out is not None else Path("exports") / str(doc["discussion"]["id"])
        write_files(folder, filing.folder(doc, charts))
        print(f"Exported to {folder}/ (manifest.json, personas/, rounds/, artifacts/, context/summary.md, "
              "transcript.json)")
        return
    if out is not None:
        write_files(out, filing.flat(doc, charts))
        if format == "html":
            (out / "discussion.html").write_text(render(doc, charts=charts), encoding="utf-8")
    if format == "html":
        sys.stdout.write(render(doc, charts=charts))
    elif format == "json":
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    else:
        files = filing.artifacts(doc)  # printed: no chart files beside it to show
        sys.stdout.write(files["synthesis.md"] + "\n" + files["open-questions.md"])


def main() -> None:
    cli()


if __name__ == "__main__":
    main()
