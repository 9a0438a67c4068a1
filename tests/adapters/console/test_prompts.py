"""Numbered prompts at the terminal: a number picks the choice shown with it, any other number is refused, and
the roster can be modified (rename, drop, add) before the start."""

from __future__ import annotations

import io
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console

from adapters.console.app import ConsoleSession
from adapters.console.chat import ConsoleChat
from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Role, Status
from tests.fakes.llm import ScriptedLLM


class Script(io.StringIO):
    """The terminal: waits for each prompt in turn, after the previous answer, and types its line."""

    def __init__(self, fd: int, steps: list[tuple[str, str]]) -> None:
        super().__init__()
        self.fd, self.steps, self.after = fd, list(steps), 0

    def write(self, s: str) -> int:
        n = super().write(s)
        while self.steps:
            prompt, line = self.steps[0]
            at = self.getvalue().find(prompt, self.after)
            if at < 0:
                break
            self.steps.pop(0)
            self.after = at + len(prompt)
            os.write(self.fd, line.encode() + b"\n")
        return n


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[tuple[App, int, int]]:
    r, w = os.pipe()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    app = await build_app(settings, {"console": ConsoleChat(Console(file=io.StringIO()))}, llm=ScriptedLLM())
    yield app, r, w
    await app.close()
    os.close(w)
    os.close(r)


async def session_for(app: App, r: int, script: Script, *, confirm: bool) -> tuple[ConsoleSession, str]:
    console = Console(file=script, width=120)
    app.driver.chats["console"].console = console  # type: ignore[attr-defined]
    session = ConsoleSession(app.service, app.driver, app.store, console, "Dana", stdin_fd=r)
    did = await session.start(c.StartDiscussion(topic="Should we adopt trunk-based development?",
                                                platform="console", channel="console", user_id="console-user",
                                                confirm=confirm))
    return session, did


async def test_the_roster_is_modified_by_numbers_before_the_start(parts: tuple[App, int, int]) -> None:
    app, r, w = parts
    script = Script(w, [
        ("Type 1-2", "3"),  # not a choice shown: refused, and not a message to the council
        ("Type 1-2", "2"),  # Modify roster
        ("Type 1-4", "9"),  # refused
        ("Please type a number from 1 to 4", "1"),  # rename
        ("Rename whom?", "2"),  # the first expert (the moderator sits first)
        ("New name for", "Ada Lovelace"),
        ("New title for Ada Lovelace", ""),
        ("Type 1-4", "2"),  # drop an expert
        ("Drop which expert?", "4"),
        ("Type 1-4", "3"),  # add one
        ("new expert's name", "Grace Hopper"),
        ("Grace Hopper's field", "Compilers"),
        ("Type 1-4", "4"),  # done
        ("Type 1-2", "1"),  # start
        ("Type 1-5", "7"),  # out of range at the next-step prompt: refused
        ("There is no choice 7", ""),
        ("Type 1-5", "/stop"),
    ])
    session, did = await session_for(app, r, script, confirm=True)
    assert await session.run(did, interactive=True) == Status.STOPPED
    async with app.store.tx() as tx:
        experts = [p for p in await tx.personas(did) if p.role == Role.EXPERT]
        humans = await tx.human_messages(did)
    assert script.steps == [], f"the session stopped asking at {script.steps[0]}"
    shown = script.getvalue()
    # The experts as the rename menu listed them (after the moderator): "  [2] 💡 Name — title".
    listed = shown[shown.index("Rename whom?"):shown.index("New name for")]
    before = [tuple(m) for m in re.findall(r"\[\d\] \S+ (.+?) — (.+)", listed)][1:5]
    assert [p.name for p in experts] == ["Ada Lovelace", before[1][0], before[2][0], "Grace Hopper"], before
    assert experts[0].title == before[0][1], "Enter kept the title"
    assert experts[-1].title == "Compilers"
    assert humans == [], "no number became a message to the council"
    assert "Roster updated." in shown and "Added Grace Hopper." in shown


async def test_a_number_at_the_vote_prompt_is_checked_against_the_poll(parts: tuple[App, int, int]) -> None:
    app, r, w = parts
    script = Script(w, [
        ("Type 1-5", "4"),  # synthesize
        ("Vote on", "9"),
        ("Please type a number from 1 to", "/help"),
        ("/vote POLL N", "1"),
        ("The poll stays open until", ""),  # Enter: left open until its deadline
    ])
    session, did = await session_for(app, r, script, confirm=False)
    assert await session.run(did, interactive=True) == Status.DONE
    assert script.steps == [], f"the session stopped asking at {script.steps[0]}"
    async with app.store.tx() as tx:
        [final] = [p for p in await tx.polls(did) if p.final]
        assert [b.choice for b in await tx.ballots(final.id) if not b.is_ai] == [0]  # the personas' are on it too
