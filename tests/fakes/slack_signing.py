"""What Slack's side does before it calls us: sign a request body (v0 HMAC), and a free loopback port."""

from __future__ import annotations

import hashlib
import hmac
import socket
import time


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def sign(body: str, secret: str, timestamp: int | None = None) -> dict[str, str]:
    """The X-Slack-* headers Slack sends with `body`, signed with the app's signing secret."""
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}
