"""Secrets never reach the logs of any entry point: the filter bot/__main__._settings() installs for every command."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bot import __main__ as cli
from bot import runtime
from bot.logs import MASK, RedactSecrets
from core.storage import db

DISCORD = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB"
ANTHROPIC = "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
SIGNING = "8f742231b10e8888abcd99yyyzzz85a5"  # no recognisable shape: masked because it is a SecretStr setting
DB_PASSWORD = "pg-Pa55word-0042"
log = logging.getLogger("council.test.logs")


@pytest.fixture
def out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[io.StringIO]:
    """The environment of a deployment (no .env read), and a handler on the root logger to read what it logs."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DISCORD_TOKEN", DISCORD)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING)
    monkeypatch.setenv("DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        for h in root.handlers:  # pytest's own handlers: leave them as they were
            for f in [f for f in h.filters if isinstance(f, RedactSecrets)]:
                h.removeFilter(f)


def leak() -> None:
    """What a careless log line looks like: the secrets in the message, its arguments and a traceback."""
    try:
        raise PermissionError(f"refused {DISCORD} with key={ANTHROPIC} signed {SIGNING}")
    except PermissionError:
        log.exception("login with %s failed (key %s)", DISCORD, ANTHROPIC)
    log.warning("signing secret %s, stack follows", SIGNING, stack_info=True)


def assert_masked(text: str) -> None:
    assert "PermissionError" in text and "Traceback" in text and "Stack (most recent call last)" in text
    for secret in (DISCORD, ANTHROPIC, SIGNING, DB_PASSWORD, "MTIzNDU2Nzg5MDEy", "api03-Zx9"):
        assert secret not in text, secret
    assert text.count(MASK) >= 6  # two in the message, three in the exception's, one in the warning


def test_settings_installs_the_filter_on_the_root_handlers(out: io.StringIO,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", f"postgresql+asyncpg://council:{DB_PASSWORD}@db:5432/council")
    cli._settings()
    leak()
    log.error("connecting to postgresql://council:%s@db/council", DB_PASSWORD)
    assert_masked(out.getvalue())


@pytest.mark.parametrize("args", [["console", "Should we?", "--no-input"], ["slack"], ["discord"], ["migrate"],
                                  ["list"], ["export", "--latest"]])
def test_every_command_masks_secrets_in_its_logs(out: io.StringIO, monkeypatch: pytest.MonkeyPatch,
                                                 args: list[str]) -> None:
    """Each command's body is replaced by one that logs the secrets: whatever it is, they arrive masked."""

    async def body(*_: Any, **__: Any) -> int:
        leak()
        return 0

    def engine(*_: Any, **__: Any) -> Any:
        leak()
        raise SystemExit(0)

    for name in ("run_console", "run_slack", "run_discord"):
        monkeypatch.setattr(runtime, name, body)

    async def store(*_: Any, **__: Any) -> Any:
        leak()
        raise SystemExit(0)

    monkeypatch.setattr(runtime, "open_store", store)
    monkeypatch.setattr(db, "make_engine", engine)
    result = CliRunner().invoke(cli.cli, args)
    assert result.exit_code == 0, result.output
    assert_masked(out.getvalue())


def test_tokens_are_masked_by_their_shape_when_no_setting_holds_them() -> None:
    """A second workspace's Slack token, another key: recognisable shapes are masked without being configured."""
    flt = RedactSecrets([])
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%s %s %s", ("xoxp-11-22-abc", ANTHROPIC, DISCORD),
                               None)
    flt.filter(record)
    assert record.getMessage() == f"xoxp-{MASK} sk-ant-{MASK} {MASK}"
    untouched = logging.LogRecord("x", logging.INFO, __file__, 1, "core.control.service.handle took %s ms", (12,), None)
    flt.filter(untouched)
    assert untouched.getMessage() == "core.control.service.handle took 12 ms"


def test_discord_webhook_and_interaction_tokens_are_masked_in_urls() -> None:
    """discord.py logs every request's URL (at DEBUG) and puts it in errors: the token in the path is masked."""
    flt = RedactSecrets([])
    hook = "https://discord.com/api/v10/webhooks/1290000000000000077/aB3_x-9.QwErTyUiOp?wait=true&thread_id=12"
    callback = "/api/v10/interactions/1290000000000000099/aW50ZXJhY3Rpb246MTI6dG9rZW4/callback"
    record = logging.LogRecord("discord.http", logging.DEBUG, __file__, 1, "%s %s with %s has returned %s",
                               ("POST", hook, "{}", 200), None)
    flt.filter(record)
    assert record.getMessage() == (f"POST https://discord.com/api/v10/webhooks/1290000000000000077/{MASK}"
                                   "?wait=true&thread_id=12 with {} has returned 200")
    record = logging.LogRecord("x", logging.WARNING, __file__, 1, "failed: %s", (callback,), None)
    flt.filter(record)
    assert record.getMessage() == f"failed: /api/v10/interactions/1290000000000000099/{MASK}/callback"
