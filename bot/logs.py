"""Keeps secrets out of every log line: a handler filter installed by each command (bot/__main__._settings).

It masks the values of every SecretStr setting, the database password, and anything shaped like a Slack,
Discord or Anthropic token (a per-workspace OAuth token is in no setting), in messages, their arguments,
exception tracebacks and stack traces.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from pydantic import SecretStr

from bot.settings import Settings

MASK = "[redacted]"
MIN_SECRET = 6  # shorter values would mask ordinary words
TOKENS = [
    # Slack: bot/user/app/config/refresh tokens (xoxb-, xoxp-, xapp-, xoxe.xoxp-, ...); the prefix stays readable.
    (re.compile(r"\b(xox[abeoprs]|xapp|xoxe(?:\.xox[bp])?)-[A-Za-z0-9-]+"), r"\1-" + MASK),
    # Anthropic API and admin keys.
    (re.compile(r"\b(sk-ant)-[A-Za-z0-9_-]+"), r"\1-" + MASK),
    # Discord webhook and interaction tokens ride in URL paths (/webhooks/{id}/{token}, followups the same
    # under the application id, /interactions/{id}/{token}/callback): whoever holds one can post as the bot.
    (re.compile(r"(/(?:webhooks|interactions)/\d+/)[A-Za-z0-9._-]+"), r"\1" + MASK),
    # Discord bot tokens: base64 user id . timestamp . HMAC.
    (re.compile(r"\b[A-Za-z0-9_-]{23,30}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}"), MASK),
]


def settings_secrets(settings: Settings) -> list[str]:
    """The value of every SecretStr field (new ones included without a change here), and the database password."""
    values = []
    for name in type(settings).model_fields:
        value = getattr(settings, name)
        if isinstance(value, SecretStr):
            values.append(value.get_secret_value())
    try:
        password = urlsplit(settings.database_url).password
    except ValueError:
        password = None
    if password:
        values += [password, unquote(password)]
    for spec in settings.council_providers.values():  # a provider's key, read from the variable it names
        if spec.api_key_env and os.environ.get(spec.api_key_env):
            values.append(os.environ[spec.api_key_env])
    return values


class RedactSecrets(logging.Filter):
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        self.secrets = sorted({s for s in secrets if s and len(s) >= MIN_SECRET}, key=len, reverse=True)

    def scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        for pattern, replacement in TOKENS:
            text = pattern.sub(replacement, text)
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it for the handler to report
            return True
        clean = self.scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


def install(secrets: Iterable[str], logger: logging.Logger | None = None) -> RedactSecrets:
    """Put the filter on every handler of `logger` (the root, where every record ends up), replacing an older one."""
    flt = RedactSecrets(secrets)
    target = logger or logging.getLogger()
    for handler in target.handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactSecrets)]:
            handler.removeFilter(old)
        handler.addFilter(flt)
    return flt


def redact_settings(settings: Settings) -> RedactSecrets:
    return install(settings_secrets(settings))
