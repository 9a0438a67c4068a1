"""Who holds a discussion's page links: "Revoke links" (the starter or an admin) invalidates every one given out."""

from __future__ import annotations

from dataclasses import dataclass

from core.control import commands as c
from core.control.desk import Desk
from core.control.replies import Reply
from core.running.effects import redraw_header, save_discussion


@dataclass(eq=False)
class Sharing(Desk):
    async def revoke_links(self, cmd: c.RevokeLinks) -> Reply:
        """A new key version for the discussion's links: the page refuses every link signed under an older one."""
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)  # the starter or an admin (a moderating verb)
            d.options.links += 1
            now = self.clock.now()
            await redraw_header(tx, d, now)  # the header carries the one fresh link
            await save_discussion(tx, d, now)
            await self.notice(tx, d, f"{d.id}:links:{d.options.links}",
                              f"🔒 {cmd.user_name or 'Someone'} revoked the links to this discussion's page: links "
                              "given out before no longer open it.")
        return Reply(text="Done: every earlier link to this discussion's page is revoked. The header's link is fresh.",
                     discussion_id=d.id)
