"""The console shows turns being written on a terminal, then only the finished post remains."""

from __future__ import annotations

import io
from datetime import UTC, datetime

from rich.console import Console

from adapters.console.chat import ConsoleChat
from core.models import Discussion, Persona, Post, Role

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
ADA = Persona(key="ada", name="Ada", role=Role.EXPERT, title="Engines", icon="⚙️")
D = Discussion(id="d1", topic="Flags?", created_at=NOW, updated_at=NOW)


async def test_live_text_on_a_terminal_and_none_when_piped() -> None:
    out = io.StringIO()
    chat = ConsoleChat(Console(file=out, force_terminal=True, width=80))
    await chat.stream(D, ADA, "k1", "Flags let us merge early")
    assert "Ada is writing" in out.getvalue() and "merge early" in out.getvalue()
    await chat.publish(D, Post(kind="turn", key="k1", text="Flags let us merge early and often.", persona=ADA))
    assert not chat.bottom.active, "the live region gives way to the finished post"

    piped = io.StringIO()
    quiet = ConsoleChat(Console(file=piped, force_terminal=False))
    await quiet.stream(D, ADA, "k1", "Flags let us merge early")
    assert piped.getvalue() == ""
