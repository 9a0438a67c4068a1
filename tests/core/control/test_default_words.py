"""A channel's defaults word by word: each field's name, each word for on and off, the longest poll a channel may
set, and the day a final poll stays open when nobody said. Written from what people type, not read from the
module, so a word dropped or a bound moved fails its own case."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import defaults
from tests.core.conftest import discussion, start

FIELDS = [("flow", "council", "council"), ("rounds", "3", 3), ("style", "debate", "debate"), ("tier", "heavy", "heavy"),
          ("lang", "German", "German"), ("experts", "6", 6), ("models", "anthropic:claude-x", "anthropic:claude-x"),
          ("poll_hours", "48", 48), ("poll_reminders", "off", "off"), ("peer_review", "on", True)]


@pytest.mark.parametrize(("field", "typed", "value"), FIELDS, ids=[f for f, _, _ in FIELDS])
def test_each_field_is_a_default_a_channel_keeps(field: str, typed: str, value: object) -> None:
    assert defaults.parse(f"{field}={typed}") == ({field: value}, [])
    assert defaults.still_valid({field: typed}) == {field: value}


SWITCHES = [("on", "on"), ("yes", "on"), ("true", "on"), ("ON", "on"), ("off", "off"), ("no", "off"),
            ("false", "off"), ("No", "off")]


@pytest.mark.parametrize(("word", "switch"), SWITCHES, ids=[w for w, _ in SWITCHES])
def test_each_word_for_on_and_off_switches_poll_reminders(word: str, switch: str) -> None:
    assert defaults.parse(f"poll_reminders={word}") == ({"poll_reminders": switch}, [])


def test_a_poll_may_stay_open_a_month_and_not_an_hour_more() -> None:
    assert defaults.poll_hours("720") == 720
    assert defaults.poll_hours("1h") == 1
    for raw in ("721", "0"):
        with pytest.raises(ValueError) as refused:
            defaults.poll_hours(raw)
        assert str(refused.value) == ("`--poll-hours` takes a whole number of hours from 1 to 720 (a month), for "
                                      f"example `48`; you wrote `{raw}`")


async def test_a_final_poll_stays_open_a_day_when_neither_the_start_nor_the_channel_says(app: App) -> None:
    reply = await app.service.handle(start(confirm=True))  # waits for its roster: nothing runs
    assert (await discussion(app, reply.discussion_id)).options.poll_hours == 24
    said = await app.service.handle(start(confirm=True, poll_hours=6))
    assert (await discussion(app, said.discussion_id)).options.poll_hours == 6
