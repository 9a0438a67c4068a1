"""What the terminal prints again, and when: the header panel once across a resume, no closed poll below a newer
one, and names with brackets shown as typed."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from adapters.console.chat import ConsoleChat
from core.models import Discussion, Persona, PollView, Post, Role

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
D = Discussion(id="d1", topic="Adopt [core] modules?", created_at=NOW, updated_at=NOW)
ADA = Persona(key="ada", name="Ada [infra]", role=Role.EXPERT, title="Engines [v2]", icon=":gear:")
ROSTER = [ADA, Persona(key="moderator", name="Moderator", role=Role.MODERATOR, title="Chairs", icon=":bulb:")]


def chat(journal: Path) -> ConsoleChat:
    return ConsoleChat(Console(record=True, width=100, file=open("/dev/null", "w")), journal=journal)


def printed(c: ConsoleChat) -> str:
    return c.console.export_text(clear=True)


def header(state: str, roster: list[Persona], key: str = "d1:header") -> Post:
    return Post(kind="header", key=key, title=D.topic, text="The council\n\nFlow: moderated", state=state,
                roster=roster)


async def test_the_header_panel_is_drawn_once_across_a_resume(tmp_path: Path) -> None:
    first = chat(tmp_path / "journal")
    ref = await first.publish(D, header("Assembling", []))
    # A header's new versions have keys of their own, as the driver gives them; the ref is the first's.
    await first.update(D, ref, header("Running · Round 1", ROSTER, key="d1:header:d1:roster"))
    assert printed(first).count("Flow: moderated") == 1
    again = chat(tmp_path / "journal")  # the resumed process: only the journal is left of the first
    await again.update(D, ref, header("▶️ Running · Round 1 (resumed)", ROSTER, key="d1:header:d1:r1"))
    shown = printed(again)
    assert "Flow: moderated" not in shown and "Council:" not in shown, shown
    assert "Running · Round 1 (resumed)" in shown, "the state line still says where it stands"


def poll(poll_id: int, closed: bool = False) -> Post:
    view = PollView(poll_id=poll_id, question="Which proposal?", options=["Trial", "Wait"], counts=[1, 0],
                    closed=closed, total=1)
    return Post(kind="poll", key=f"d1:poll{poll_id}", text=("Poll closed: " if closed else "") + "Which proposal?",
                poll=view)


async def test_a_closed_poll_is_not_printed_below_the_poll_that_followed_it(tmp_path: Path) -> None:
    c = chat(tmp_path / "journal")
    first = await c.publish(D, poll(1))
    await c.update(D, first, poll(1, closed=True))
    assert "Poll closed" in printed(c), "closed before the next opened: shown"
    second = await c.publish(D, poll(2))
    third = await c.publish(D, poll(3))
    printed(c)
    await c.update(D, second, poll(2, closed=True))
    assert "Poll closed" not in printed(c), "closed after poll 3 opened: it would land below it"
    await c.update(D, third, poll(3, closed=True))
    assert "Poll closed" in printed(c)


async def test_brackets_in_topics_and_names_are_shown_as_typed(tmp_path: Path) -> None:
    c = chat(tmp_path / "journal")
    ref = await c.publish(D, header("Assembling", []))
    await c.update(D, ref, header("Running", ROSTER))
    await c.publish(D, Post(kind="turn", key="d1:t1", title="Round 1", text="Modules first.", persona=ADA))
    await c.thinking(D, ADA, "d1:t2")
    shown = printed(c)
    assert " Council: Adopt [core] modules? ─" in shown, "the panel's title"
    assert "Ada [infra] — Engines [v2] · Round 1" in shown
    assert "⚙ Ada [infra] is thinking…" in shown.replace("\ufe0f", "")
