"""Test databases copied from one migrated template per test process: migrating costs far more than copying."""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from core.storage.db import make_engine, migrate

T = TypeVar("T")

_sqlite_template: Path | None = None


def blocking(coro: Coroutine[object, object, T]) -> T:
    """Run a coroutine to its end from synchronous code, even while a test's event loop runs in this thread."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coro).result()


async def migrated(url: str) -> None:
    engine = make_engine(url)
    try:
        await migrate(engine)
    finally:
        await engine.dispose()  # nothing may stay open on a template: SQLite folds its WAL in, PostgreSQL copies


def sqlite_template() -> Path:
    """This process's migrated SQLite file (each xdist worker is a process of its own), made on first use."""
    global _sqlite_template
    if _sqlite_template is None:
        folder = Path(tempfile.mkdtemp(prefix="council-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        path = folder / "council.db"
        blocking(migrated(f"sqlite+aiosqlite:///{path}"))
        leftovers = [p.name for p in folder.iterdir() if p != path]
        assert not leftovers, f"the template is not one file: {leftovers}"
        _sqlite_template = path
    return _sqlite_template


def migrated_sqlite_url(folder: Path, name: str = "council.db") -> str:
    """A migrated SQLite database in `folder`, as an async URL: a copy of the template, unless the folder has one
    already (an app restarted on the same folder finds what it wrote)."""
    path = folder / name
    if not path.exists():
        shutil.copyfile(sqlite_template(), path)
    return f"sqlite+aiosqlite:///{path}"
