"""Log lines nobody keeps cost nothing: below the level logs are kept at, a Slack call formats no debug line."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from adapters.slack.clients import web_client
from bot import __main__ as cli
from tests.fakes.slack_api import FakeSlack


class Counted(str):
    """A message text that counts how often something wrote it out for a log line (repr, as a dict shows it)."""

    reprs = 0

    def __repr__(self) -> str:
        Counted.reprs += 1
        return str.__repr__(self)


@pytest.fixture
def levels() -> Iterator[None]:
    """Loggers as they were: `_settings` sets levels on the root and on library loggers."""
    manager = logging.Logger.manager
    before = {name: lg.level for name, lg in manager.loggerDict.items() if isinstance(lg, logging.Logger)}
    root = logging.getLogger().level
    yield
    logging.getLogger().setLevel(root)
    for name, lg in manager.loggerDict.items():
        if isinstance(lg, logging.Logger):
            lg.setLevel(before.get(name, logging.NOTSET))


@pytest.mark.parametrize("level, formatted", [("WARNING", False), ("INFO", False), ("DEBUG", True)])
async def test_a_slack_call_writes_out_its_request_for_a_debug_line_only_when_debug_lines_are_kept(
    fake: FakeSlack, monkeypatch: pytest.MonkeyPatch, levels: None, level: str, formatted: bool
) -> None:
    """slack_sdk decides on a logger's own level, not the level it inherits, whether to write out every request
    and response in full for a debug line: a logger left unset did it for every call, and threw the line away."""
    monkeypatch.setenv("COUNCIL_LOG_LEVEL", level)
    cli._settings()
    client = web_client(fake.base_url, "xoxb-test")
    await client.conversations_join(channel="C0001")
    Counted.reprs = 0
    response = await client.chat_postMessage(channel="C0001", text=Counted("Round 1 synthesis"))
    assert response["ok"]
    assert (Counted.reprs > 0) is formatted, Counted.reprs
