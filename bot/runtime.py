"""Entry-point bodies: each builds the app through wiring, runs its platform, and shuts down cleanly."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from adapters.console.app import ConsoleSession
from adapters.console.chat import ConsoleChat
from bot.settings import Settings
from bot.wiring import build_app
from core import commands as c
from core.models import Status
from core.service import UserError
from core.storage.db import is_sqlite, make_engine, migrate, normalize_url
from core.storage.store import Store


async def open_store(settings: Settings) -> Store:
    engine = make_engine(settings.database_url)
    await migrate(engine)
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


async def run_console(
    settings: Settings, *, topic: str, rounds: int | None, experts: int, no_input: bool, confirm: bool,
    resume: str | None, exports: Path, user_name: str,
) -> int:
    out = Console(highlight=False)
    chat = ConsoleChat(out, journal=_journal(settings))
    app = await build_app(settings, {"console": chat})
    session = ConsoleSession(app.service, app.driver, app.store, out, user_name)
    interactive = not no_input
    try:
        if resume:
            discussion_id = await session.resume(resume.strip())
        else:
            discussion_id = await session.start(
                c.StartDiscussion(topic=topic, platform="console", channel="console", user_id="console-user",
                                  user_name=user_name, rounds=rounds if rounds else (1 if no_input else None),
                                  experts=experts, confirm=confirm and interactive)
            )
        status = await session.run(discussion_id, interactive=interactive)
        if status == Status.DONE:
            folder = await session.write_exports(discussion_id, exports)
            out.print(f"[bold green]Done.[/] Exported to {folder}/ (synthesis.md, open-questions.md, transcript.json)")
        elif status == Status.PAUSED:
            out.print(f"[bold]Paused.[/] Continue later with: python -m bot console --resume {discussion_id}")
        elif status == Status.BLOCKED:
            out.print(f"[bold red]Blocked.[/] Fix the cause, then: python -m bot console --resume {discussion_id}")
            return 1
        return 0
    except UserError as exc:
        Console(stderr=True).print(f"[bold red]error:[/] {exc}")
        return 2
    finally:
        await app.close()
