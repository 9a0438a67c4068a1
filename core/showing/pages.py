"""Signed, expiring, revocable links to a discussion's web page: an HMAC of the id, the expiry and the discussion's
key version under COUNCIL_WEB_SECRET. Raising the version ("Revoke links") makes every link given out so far
invalid, without touching any other discussion's."""

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

    def signature(self, discussion_id: str, expires: int, version: int = 0) -> str:
        # Version 0 signs what links signed before versions existed, so those stay good until revoked.
        message = f"{discussion_id}:{expires}" + (f":v{version}" if version else "")
        return hmac.new(self.secret.encode(), message.encode(), hashlib.sha256).hexdigest()[:32]

    def url(self, discussion_id: str, now: datetime, version: int = 0) -> str:
        """A link under the discussion's current key version (`Discussion.options.links`)."""
        if not self.enabled:
            return ""
        expires = int((now + self.ttl).timestamp())
        fields: dict[str, int | str] = {"exp": expires, "sig": self.signature(discussion_id, expires, version)}
        if version:
            fields["v"] = version
        return f"{self.base_url.rstrip('/')}/d/{discussion_id}?{urlencode(fields)}"

    def valid(self, discussion_id: str, expires: str, signature: str, now: datetime, version: int = 0) -> bool:
        """A link is good when it was signed with our secret for this id and key version and has not expired
        (whether that version is still the discussion's own is the caller's to check). Anything else in its
        place (other digits than ASCII ones, an expiry no clock reaches, a signature of other characters or
        length) is simply not good: never an error."""
        if not self.secret or not _ascii_digits(expires, MAX_EXPIRY_DIGITS) or not _hex(signature, SIG_CHARS):
            return False
        good = hmac.compare_digest(self.signature(discussion_id, int(expires), version), signature)
        return good and int(expires) > now.timestamp()


def version_of(given: str) -> int | None:
    """A link's key version: 0 when it carries none, None when its `v` is not one `url` writes."""
    if not given:
        return 0
    return int(given) if _ascii_digits(given, MAX_EXPIRY_DIGITS) and given[0] != "0" else None


MAX_EXPIRY_DIGITS = 12  # seconds since 1970: good for another 30,000 years
SIG_CHARS = 32


def _ascii_digits(text: str, most: int) -> bool:
    return 0 < len(text) <= most and text.isascii() and text.isdigit()


def _hex(text: str, length: int) -> bool:
    return len(text) == length and all(ch in "0123456789abcdef" for ch in text)
