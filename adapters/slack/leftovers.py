"""Placeholders whose removal Slack refused: kept, and removed again before the thread's next message."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)
Remove = Callable[[str], Awaitable[None]]  # deletes one message of the thread by its ts (raises when refused)


class Leftovers:
    """Per discussion, the turn key and ts of each placeholder a delete failed to remove (a refusal, a timeout, a
    rate limit that outlasted its waits). Its turn's post is out, so nothing else would ever remove it: each is
    tried again before the discussion's next message goes out, so none is left beside the posts that follow."""

    def __init__(self) -> None:
        self._left: dict[str, dict[str, str]] = {}

    def keep(self, discussion_id: str, key: str, ts: str) -> None:
        self._left.setdefault(discussion_id, {})[key] = ts

    def any(self, discussion_id: str) -> bool:
        return bool(self._left.get(discussion_id))

    async def remove(self, discussion_id: str, key: str, ts: str, remove: Remove) -> bool:
        """Remove it now; kept for the next try when Slack refuses (False then)."""
        try:
            await remove(ts)
        except Exception:
            log.warning("could not remove the placeholder of %s (%s); trying again before the next post", key, ts,
                        exc_info=True)
            self.keep(discussion_id, key, ts)
            return False
        return True

    async def retry(self, discussion_id: str, remove: Remove) -> None:
        """Try again each one kept for the discussion; those refused again stay for the next message."""
        left = self._left.pop(discussion_id, {})
        for key, ts in left.items():
            await self.remove(discussion_id, key, ts, remove)
