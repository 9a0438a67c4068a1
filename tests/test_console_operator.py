"""The person at the terminal is the operator: the per-person start limit guards a shared workspace from one of
its members, not the operator from themselves (in process, typer's runner)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.__main__ import cli

TOPIC = "Should we move to trunk-based development?"


def test_the_operator_starts_past_the_per_person_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'council.db'}")
    monkeypatch.setenv("COUNCIL_STARTS_PER_USER_PER_HOUR", "1")  # one an hour: the second start is past it
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        result = CliRunner().invoke(cli, ["console", TOPIC, "--rounds", "1", "--no-input"])
        assert result.exit_code == 0, result.output
        assert "Done." in result.stdout and "limit" not in result.output
