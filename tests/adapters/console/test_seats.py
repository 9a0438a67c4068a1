"""A seat held by the person at the terminal (`--seat Billing`): asked on their turns, their typed lines are their
turns, to the meeting's recommendation."""

from __future__ import annotations

from rich.console import Console

from adapters.console.app import ConsoleSession
from adapters.console.translate import USER_ID
from bot.wiring import App
from core.control import commands as c
from core.deliberation.flows import meeting
from core.models import SeatHolder, Status
from core.running.driver import load_state
from tests.adapters.console.test_session import Typist, parts  # noqa: F401  (the fixture)


async def test_the_terminals_person_holds_a_meeting_seat(parts: tuple[App, int, int]) -> None:  # noqa: F811
    app, r, w = parts
    screen = Typist(w, {"(Proposal, as Billing)": "Billing first: invoices break weekly. Stance: billing — fix it",
                        "(Final vote, as Billing)": "Billing fixes; Mobile app; Platform",
                        # the people's ranking: Enter leaves it to others, and open
                        "Vote on “Your #1 priority”": "", "The poll stays open until": ""})
    console = Console(file=screen, width=120)
    app.driver.chats["console"].console = console  # type: ignore[attr-defined]
    session = ConsoleSession(app.service, app.driver, app.store, console, "Dana", stdin_fd=r)
    did = await session.start(c.StartDiscussion(
        topic="Billing fixes or the mobile app first?", flow="meeting", rounds=2, experts=2, platform="console",
        channel="console", in_channel="console", user_id=USER_ID, user_name="Dana",
        seats=[SeatHolder(user_id=USER_ID, name="Dana", title="Billing")]))
    assert await session.run(did, interactive=True) == Status.DONE
    shown = screen.getvalue()
    assert "Dana, it is your turn" in shown and "Dana wrote their turn (Proposal) in person" in shown
    async with app.store.tx() as tx:
        state = await load_state(tx, did)
    assert state is not None
    # Her items name none of the moderator's options exactly: each stays unmatched, none counts as an option.
    ballots, _, unmatched = meeting.owner_ballots(state)
    assert ballots["Dana"] == ["", "", ""] and unmatched["Dana"] == ["Billing fixes", "Mobile app", "Platform"]
    assert len(ballots) == 3
    assert "Council Recommendation" in shown


async def test_the_terminals_person_ranks_by_typing_the_options_numbers(parts: tuple[App, int, int]) -> None:  # noqa: F811
    app, r, w = parts
    screen = Typist(w, {"(Proposal, as Billing)": "Billing first: invoices break weekly. Stance: billing — fix it",
                        "Type their numbers, best first": "3 3",  # the same option for two places: refused
                        "You already put": "3 1 2",
                        "Vote on “Your #1 priority”": "", "The poll stays open until": ""})
    console = Console(file=screen, width=120)
    app.driver.chats["console"].console = console  # type: ignore[attr-defined]
    session = ConsoleSession(app.service, app.driver, app.store, console, "Dana", stdin_fd=r)
    did = await session.start(c.StartDiscussion(
        topic="Billing fixes or the mobile app first?", flow="meeting", rounds=2, experts=2, platform="console",
        channel="console", in_channel="console", user_id=USER_ID, user_name="Dana",
        seats=[SeatHolder(user_id=USER_ID, name="Dana", title="Billing")]))
    assert await session.run(did, interactive=True) == Status.DONE
    shown = " ".join(screen.getvalue().split())  # as read, whatever the terminal wrapped
    async with app.store.tx() as tx:
        state = await load_state(tx, did)
    assert state is not None
    fixed = meeting.fixed_options(state)
    assert f"[1] {fixed[0].label} [{fixed[0].id}]" in shown, "the options she ranks, numbered as listed"
    assert f"You already put {fixed[2].label} [{fixed[2].id}] at #1" in shown
    ballots, _, unmatched = meeting.owner_ballots(state)
    assert ballots["Dana"] == [fixed[2].id, fixed[0].id, fixed[1].id] and not unmatched.get("Dana")
