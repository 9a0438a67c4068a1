"""Keeps secrets out of logs: a handler filter that masks Slack tokens and the configured secrets."""

from __future__ import annotations

import logging
import re

TOKEN = re.compile(r"\b(xox[abpors]|xapp|xoxe(?:\.xox[bp])?)-[A-Za-z0-9-]+")
MASK = "[redacted]"


class RedactSecrets(logging.Filter):
    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 6}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return TOKEN.sub(lambda m: f"{m.group(1)}-{MASK}", text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = self.scrub(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if clean != message:
            record.msg, record.args = clean, None
        return True


def redact_secrets(secrets: list[str]) -> RedactSecrets:
    """Install the filter on every handler of the root logger (where all records end up)."""
    flt = RedactSecrets(secrets)
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig()
    for handler in root.handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactSecrets)]:
            handler.removeFilter(old)
        handler.addFilter(flt)
    return flt
