"""Entry-point bodies: each builds the app through wiring, runs its platform, and shuts down cleanly."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from adapters.console.app import ConsoleSession, Interrupted
from adapters.console.chat import ConsoleChat
from bot.settings import Settings
from bot.wiring import App, build_app, web_pages
from core.control import commands as c
from core.control.service import UserError
from core.models import Status
from core.ports import ChatPort
from core.storage.db import is_sqlite, make_engine, migrate, normalize_url
from core.storage.store import Store

if TYPE_CHECKING:
    from adapters.slack.server import SlackConfig


def settle_heap() -> None:
    """Once a server is built: keep what start-up made (modules, schemas, the app) out of the garbage collector's
    full passes, which otherwise walk all of it every few seconds under load and stall the loop ~200 ms each; and
    collect the young generation every 10,000 allocations instead of 700 (a turn allocates tens of thousands of
    short-lived objects that reference counting frees anyway)."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(10_000, older, oldest)


async def open_store(settings: Settings) -> Store:
    engine = make_engine(settings.database_url)
    await migrate(engine, settings.encryption_key)
    return Store(engine)


def _journal(settings: Settings) -> Path:
    """Keys the terminal already printed, beside the SQLite file (or in the working folder)."""
    url = normalize_url(settings.database_url)
    if is_sqlite(url):
        from sqlalchemy.engine import make_url

        db = make_url(url).database
        if db and db != ":memory:":
            return Path(db).expanduser().with_suffix(".console-journal")
    return Path("council.console-journal")


def _rounds(rounds: int | None, no_input: bool, flow_options: dict[str, Any]) -> int | None:
    """Unattended, a moderated discussion runs one round; the other flows keep their own default length."""
    if rounds or flow_options.get("flow", "moderated") != "moderated":
        return rounds
    return 1 if no_input else None


def _unasked(options: dict[str, Any], rounds: int | None, no_input: bool) -> dict[str, Any]:
    """The start's options, with a final poll nobody at the terminal will be asked about (unattended, or after
    `--rounds` in a flow other than a council or a meeting) closing with the discussion, unless `--poll-hours`
    was given: the program ends with it, and nobody is left to vote."""
    asked = not no_input and (options.get("flow", "moderated") in ("council", "meeting") or rounds is None)
    return options if asked or "poll_hours" in options else options | {"poll_hours": 0}


async def run_console(
    settings: Settings, *, topic: str, rounds: int | None, experts: int, no_input: bool, confirm: bool,
    resume: str | None, exports: Path, user_name: str, flow_options: dict[str, Any] | None = None,
) -> int:
    """Runs one discussion in the terminal. The first Ctrl-C stops it at the next safe point, exports it and
    prints how to resume; a second quits at once (exit 130 either way, as a shell expects of an interrupt)."""
    import asyncio
    import signal

    out = Console(highlight=False)
    # The person at the terminal is the operator, spending their own key: the per-person start limit guards a
    # shared workspace from one member, not the operator from themselves.
    settings = settings.model_copy(update={"council_starts_per_user_per_hour": 0})
    chat = ConsoleChat(out, journal=_journal(settings), voting=not no_input, exports=exports)
    app = await build_app(settings, {"console": chat})
    session = ConsoleSession(app.service, app.driver, app.store, out, user_name, bottom=chat.bottom)
    interactive = not no_input
    main, loop = asyncio.current_task(), asyncio.get_running_loop()
    discussion_id = ""

    def ctrl_c() -> None:
        session.interrupt()
        if session.interrupts > 1 and main is not None:
            main.cancel()  # the second: quit at once, turns cut short (a resume runs them again)

    loop.add_signal_handler(signal.SIGINT, ctrl_c)
    grace = 60.0
    try:
        if resume:
            discussion_id = await session.resume(resume.strip())
        else:
            discussion_id = await session.start(
                c.StartDiscussion(topic=topic, platform="console", channel="console", in_channel="console",
                                  user_id="console-user",
                                  user_name=user_name, rounds=_rounds(rounds, no_input, flow_options or {}),
                                  experts=experts, confirm=confirm and interactive,
                                  **_unasked(flow_options or {}, rounds, no_input))
            )
        try:
            status = await session.run(discussion_id, interactive=interactive)
        except Interrupted:
            status = await session.stop_here(discussion_id)
        session.close()
        chat.bottom.close()
        if status == Status.DONE:
            folder = await session.write_exports(discussion_id, exports)
            out.print(f"[bold green]Done.[/] Exported to {folder}/ (artifacts/synthesis.md, "
                      "artifacts/open-questions.md, context/summary.md, transcript.json)", soft_wrap=True)
        elif session.interrupts:
            folder = await session.write_exports(discussion_id, exports)
            out.print(f"[bold]Stopped.[/] Exported to {folder}/. Resume with: python -m bot console --resume "
                      f"{discussion_id}", soft_wrap=True)
            return 130
        elif status == Status.PAUSED:
            out.print(f"[bold]Paused.[/] Continue later with: python -m bot console --resume {discussion_id}")
        elif status == Status.BLOCKED:
            out.print(f"[bold red]Blocked.[/] Fix the cause, then: python -m bot console --resume {discussion_id}")
            return 1
        return 0
    except asyncio.CancelledError:
        if session.interrupts < 2:
            raise
        grace = 0.0  # quitting at once: nothing waits for the turns being written
        session.close()
        chat.bottom.close()  # the live lines go first: the driver's warning below is written past rich, to stderr
        await app.driver.shutdown()  # before the last line: nothing a turn cut short prints lands after it
        out.print("[bold]Stopped.[/] " + (f"Resume with: python -m bot console --resume {discussion_id}"
                                          if discussion_id else "The discussion had not started."), soft_wrap=True)
        return 130
    except UserError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    finally:
        session.close()
        loop.remove_signal_handler(signal.SIGINT)
        await app.close(grace)


def slack_config(settings: Settings) -> SlackConfig:
    """The Slack app's configuration, from the settings."""
    from adapters.slack.server import SlackConfig

    def secret(name: str) -> str:
        value = getattr(settings, name)
        return value.get_secret_value() if value is not None else ""

    return SlackConfig(
        signing_secret=secret("slack_signing_secret"), bot_token=secret("slack_bot_token"),
        app_token=secret("slack_app_token"), api_url=settings.slack_api_url, client_id=settings.slack_client_id or "",
        client_secret=secret("slack_client_secret"), port=settings.port,
        sweep_interval_s=settings.sweep_interval_s, default_tz=settings.council_default_tz,
        admin_groups=frozenset(i for i in settings.admins if i.startswith("S")),  # Slack user groups are S…
        read_limited=settings.slack_read_limited, time_scale=settings.slack_time_scale,
        rate_budget=settings.slack_rate_budget,
        encryption_key=settings.encryption_key,
    )


async def run_slack(settings: Settings) -> int:
    """Serve Slack until SIGINT/SIGTERM: HTTP on $PORT (or Socket Mode), migrating the database first."""
    from adapters.slack.server import SlackServer

    config = slack_config(settings)
    pages = web_pages(settings)

    async def build(chats: Mapping[str, ChatPort]) -> App:
        app = await build_app(settings, chats, scheduler=True)
        pages.attach(app.store)
        settle_heap()
        return app

    try:
        await SlackServer(config, build, routes=pages.routes()).serve_forever()
    except ValueError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}")
        return 2
    return 0


async def run_discord(settings: Settings) -> int:
    """Serve Discord until the gateway connection ends or SIGTERM, migrating the database first."""
    import asyncio
    import signal

    import discord

    from adapters.discord.chat import DiscordChat
    from adapters.discord.client import DiscordConfig, serve

    if settings.discord_token is None:
        Console(stderr=True).print("[bold red]error:[/] set DISCORD_TOKEN to the bot token.")
        return 2
    chat = DiscordChat()
    app = await build_app(settings, {"discord": chat}, scheduler=True)
    settle_heap()
    config = DiscordConfig(token=settings.discord_token.get_secret_value(), api_url=settings.discord_api_url,
                           sweep_interval_s=settings.sweep_interval_s,
                           shard_guilds=settings.council_discord_shard_guilds,
                           default_tz=settings.council_default_tz)
    loop, task = asyncio.get_running_loop(), asyncio.current_task()
    if task is not None:
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        await serve(config, app.service, app.driver, app.store, chat)
    except discord.LoginFailure:
        Console(stderr=True).print("[bold red]error:[/] Discord refused DISCORD_TOKEN.")
        return 2
    except asyncio.CancelledError:
        return 0
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
        await app.close()
    return 0


async def run_web(settings: Settings) -> int:
    """Serve the discussion pages (GET /d/{id}, GET /healthz) on $PORT until SIGINT/SIGTERM."""
    import asyncio
    import contextlib
    import signal

    from adapters.web.page import serve

    if not (settings.council_public_url and settings.council_web_secret):
        Console(stderr=True).print("[bold red]error:[/] set COUNCIL_PUBLIC_URL and COUNCIL_WEB_SECRET to serve pages.")
        return 2
    store = await open_store(settings)
    pages = web_pages(settings)
    pages.attach(store)
    runner = await serve(pages, "0.0.0.0", settings.port)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stopping.set)
    try:
        await stopping.wait()
    finally:
        await runner.cleanup()
        await store.close()
    return 0
