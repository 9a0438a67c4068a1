"""The command line's refusals, in process (typer's runner): one clear line and a non-zero exit, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.__main__ import cli


@pytest.fixture
def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    import os

    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "COUNCIL_", "DATABASE_URL")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'council.db'}")
    monkeypatch.chdir(tmp_path)
    return lambda *args: CliRunner().invoke(cli, list(args))


def one_clear_error(result) -> None:  # type: ignore[no-untyped-def]
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.stderr and "error:" in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) <= 2, result.stderr


@pytest.mark.parametrize("topic", ["", "y" * 4000])
def test_a_bad_topic_is_one_clear_line_and_a_non_zero_exit(invoke, topic: str) -> None:  # type: ignore[no-untyped-def]
    one_clear_error(invoke("console", topic, "--no-input"))


@pytest.mark.parametrize("args", [("console", "--resume", "nope", "--no-input"), ("export", "nope")])
def test_unknown_ids_are_refused_clearly(invoke, args: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    result = invoke(*args)
    one_clear_error(result)
    assert "nope" in result.stderr


def test_a_seat_needs_the_person_at_the_terminal(invoke) -> None:  # type: ignore[no-untyped-def]
    result = invoke("console", "Billing or mobile first?", "--flow", "meeting", "--seat", "Billing", "--no-input")
    one_clear_error(result)
    assert "--seat" in result.stderr
