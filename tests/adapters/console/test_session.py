"""The terminal session as a person uses it: choosing the end, then voting on the final poll before it ends."""

from __future__ import annotations

import io
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console

from adapters.console.app import ConsoleSession
from adapters.console.chat import ConsoleChat
from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Status
from tests.fakes.llm import ScriptedLLM


class Typist(io.StringIO):
    """The terminal: answers each prompt, when it appears, by typing a line."""

    def __init__(self, fd: int, answers: dict[str, str]) -> None:
        super().__init__()
        self.fd, self.answers = fd, dict(answers)

    def write(self, s: str) -> int:
        n = super().write(s)
        for prompt, line in list(self.answers.items()):
            if prompt in self.getvalue():
                del self.answers[prompt]
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


async def test_a_person_who_chose_the_final_synthesis_votes_on_its_poll_before_the_program_ends(
    parts: tuple[App, int, int],
) -> None:
    app, r, w = parts
    # 4: Synthesize; then the second recommendation, and the poll left open
    screen = Typist(w, {"Type 1-5": "4", "Vote on": "2", "The poll stays open until": ""})
    console = Console(file=screen, width=100)
    app.driver.chats["console"].console = console  # type: ignore[attr-defined]
    session = ConsoleSession(app.service, app.driver, app.store, console, "Dana", stdin_fd=r)
    did = await session.start(c.StartDiscussion(topic="Should we adopt trunk-based development?",
                                                platform="console", channel="console", user_id="console-user"))
    assert await session.run(did, interactive=True) == Status.DONE
    async with app.store.tx() as tx:
        [final] = [p for p in await tx.polls(did) if p.final]
        ballots = [b for b in await tx.ballots(final.id) if b.voter_id == "console-user"]
    assert [b.choice for b in ballots] == [1]
    shown = screen.getvalue()
    assert "vote: /vote" in shown and "Your vote" in shown


async def test_the_exported_vote_chart_is_drawn_after_the_person_voted(
    parts: tuple[App, int, int], tmp_path: Path,
) -> None:
    app, r, w = parts
    screen = Typist(w, {"Type 1-5": "4", "Vote on": "2", "leave it open": ""})  # Enter: the poll stays open
    console = Console(file=screen, width=100)
    app.driver.chats["console"].console = console  # type: ignore[attr-defined]
    app.driver.chats["console"].exports = tmp_path / "exports"  # type: ignore[attr-defined]
    session = ConsoleSession(app.service, app.driver, app.store, console, "Dana", stdin_fd=r)
    did = await session.start(c.StartDiscussion(topic="Should we adopt trunk-based development?",
                                                platform="console", channel="console", user_id="console-user"))
    assert await session.run(did, interactive=True) == Status.DONE
    assert "Chart saved" not in screen.getvalue(), "no chart is drawn before the person has voted"
    folder = await session.write_exports(did, tmp_path / "exports")
    async with app.store.tx() as tx:
        [final] = [p for p in await tx.polls(did) if p.final]
    chosen = f"{final.options[1]} [{final.option_ids[1]}]"
    synthesis = (folder / "artifacts" / "synthesis.md").read_text()
    assert (folder / "artifacts" / "vote.png").read_bytes().startswith(b"\x89PNG")
    [vote] = [line for line in synthesis.splitlines() if line.endswith("](vote.png)")]
    shown = chosen.replace("[", "\\[").replace("]", "\\]")  # as Markdown's image text escapes it
    assert vote.split(f"{shown}: ")[1].split(";")[0].endswith(", 1 person"), vote
    assert f"Chart saved: {folder / 'artifacts' / 'vote.png'}" in screen.getvalue()


async def test_a_stop_closes_the_round_poll_before_the_header_says_stopped(parts: tuple[App, int, int]) -> None:
    app, r, w = parts
    screen = Typist(w, {"Type 1-5": "/stop"})
    console = Console(file=screen, width=100)
    app.driver.chats["console"].console = console  # type: ignore[attr-defined]
    session = ConsoleSession(app.service, app.driver, app.store, console, "Dana", stdin_fd=r)
    did = await session.start(c.StartDiscussion(topic="Should we adopt trunk-based development?",
                                                platform="console", channel="console", user_id="console-user"))
    assert await session.run(did, interactive=True) == Status.STOPPED
    shown = screen.getvalue()
    stopped = shown.index("Dana stopped the discussion")
    assert stopped < shown.index("Poll closed") < shown.index("Stopped in round 1"), shown[stopped - 200:]
    assert "Poll closed" not in shown[shown.index("Stopped in round 1"):], "nothing lands after the ending"
