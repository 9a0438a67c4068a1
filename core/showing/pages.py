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
        """A link is good when it was signed with our secret for this id and has not expired."""
        if not self.secret or not expires.isdigit() or not signature:
            return False
        good = hmac.compare_digest(self.signature(discussion_id, int(expires)), signature)
        return good and int(expires) > now.timestamp()
