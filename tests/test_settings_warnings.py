"""Settings people mistype are named at start instead of silently ignored."""

from __future__ import annotations

import logging

import pytest

from bot.__main__ import _settings
from bot.settings import unknown_variables


def test_unknown_council_variables_are_named_with_a_suggestion() -> None:
    env = {"COUNCIL_BUDGET_USD": "3", "COUNCIL_BUDGET_USDD": "9", "COUNCIL_FLOOR": "x", "PATH": "/bin"}
    assert unknown_variables(env) == [("COUNCIL_BUDGET_USDD", "COUNCIL_BUDGET_USD"), ("COUNCIL_FLOOR", "")]


def test_an_unknown_council_variable_is_warned_about_at_start(monkeypatch: pytest.MonkeyPatch,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("COUNCIL_OPEN_MAX_SPEECH", "20")
    with caplog.at_level(logging.WARNING):
        _settings(quiet=True)
    assert any("COUNCIL_OPEN_MAX_SPEECH" in r.getMessage() and "COUNCIL_OPEN_MAX_SPEECHES" in r.getMessage()
               for r in caplog.records)
