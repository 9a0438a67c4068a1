"""Signed, expiring links to a discussion's web page: an HMAC of the id and expiry under COUNCIL_WEB_SECRET."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlencode


@dataclass(frozen=True)
class PageLinks:
    """`url()` is "" unless both a public base URL and a secret are configured: no page without a signature."""

    base_url: str = ""
    secret: str = ""
    ttl: timedelta = timedelta(days=90)

    @property
    def enabled(self) -> bool:
        return bool(self.base_url and self.secret)

    def signature(self, discussion_id: str, expires: int) -> str:
        message = f"{discussion_id}:{expires}".encode()
        return hmac.new(self.secret.encode(), message, hashlib.sha256).hexdigest()[:32]

    def url(self, discussion_id: str, now: datetime) -> str:
        if not self.enabled:
            return ""
        expires = int((now + self.ttl).timestamp())
        query = urlencode({"exp": expires, "sig": self.signature(discussion_id, expires)})
        return f"{self.base_url.rstrip('/')}/d/{discussion_id}?{query}"

    def valid(self, discussion_id: str, expires: str, signature: str, now: datetime) -> bool:
        """A link is good when it was signed with our secret for this id and has not expired. Anything else in
        its place (other digits than ASCII ones, an expiry no clock reaches, a signature of other characters or
        length) is simply not good: never an error."""
        if not self.secret or not _ascii_digits(expires, MAX_EXPIRY_DIGITS) or not _hex(signature, SIG_CHARS):
            return False
        good = hmac.compare_digest(self.signature(discussion_id, int(expires)), signature)
        return good and int(expires) > now.timestamp()


MAX_EXPIRY_DIGITS = 12  # seconds since 1970: good for another 30,000 years
SIG_CHARS = 32


def _ascii_digits(text: str, most: int) -> bool:
    return 0 < len(text) <= most and text.isascii() and text.isdigit()


def _hex(text: str, length: int) -> bool:
    return len(text) == length and all(ch in "0123456789abcdef" for ch in text)
