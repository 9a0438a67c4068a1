"""Owner lines that name a person (pure): Slack's and Discord's mention forms seat that person."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation.flows.meeting import Meeting
from core.models import Discussion, FlowOptions

NOW = datetime(2026, 3, 2, tzinfo=UTC)


def owners(lines: list[str]) -> list[tuple[str, str, str]]:
    d = Discussion(id="d", topic="t", flow="meeting", options=FlowOptions(owners=lines), created_at=NOW,
                   updated_at=NOW)
    return [(p.name, p.title, p.held_by) for p in Meeting().seats(d)[1:]]


def test_slack_and_discord_mentions_seat_the_person() -> None:
    assert owners(["Dana <@U0001>: Billing", "Eli: Mobile app"]) == [
        ("Dana", "Billing", "U0001"), ("Eli", "Mobile app", "")]
    assert owners(["<@U0001|dana>: Billing", "Eli: Mobile app"])[0] == ("dana", "Billing", "U0001")
    assert owners(["Dana <@!123456789012>: Billing", "<@123456789013>: Platform"]) == [
        ("Dana", "Billing", "123456789012"), ("Owner of Platform", "Platform", "123456789013")]


def test_lines_without_a_person_are_personas_as_before() -> None:
    assert owners(["Dana: Billing", "Eli: Mobile app"]) == [("Dana", "Billing", ""), ("Eli", "Mobile app", "")]
