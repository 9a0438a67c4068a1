"""A channel's settings for the discussions started in it: its defaults, and the domain owners its meetings seat."""

from __future__ import annotations

from dataclasses import dataclass

from core.control import commands as c
from core.control import defaults
from core.control.desk import Desk
from core.control.permissions import check_configure
from core.control.replies import Reply, UserError
from core.deliberation.holders import holder_line, stored_line


def owner_shown(line: str) -> str:
    """An owner line in plain words (adapters escape replies): a seat held by a person says so, not a mention."""
    text, held_by = holder_line(line)
    name, colon, domain = text.partition(":")
    return f"{name} (in person){colon}{domain}" if held_by else text


@dataclass(eq=False)
class Configuring(Desk):
    """SetDefaults and SetOwners, each refused to whoever may not configure the channel."""

    async def set_defaults(self, cmd: c.SetDefaults) -> Reply:
        """A channel's defaults for new discussions: every valid field applies, every bad one is named. The same
        rule as its owners: they shape every discussion after them."""
        check_configure(self.config.policy, cmd, cmd.channel)
        values, warnings = defaults.read(cmd.text)
        async with self.store.tx() as tx:
            await tx.set_channel_defaults(cmd.platform, cmd.workspace, cmd.channel, values, cmd.user_id,
                                          self.clock.now())
        return Reply(text=defaults.confirmation(values, warnings))

    async def set_owners(self, cmd: c.SetOwners) -> Reply:
        check_configure(self.config.policy, cmd, cmd.channel)
        owners = [line for line in map(stored_line, cmd.owners) if line]
        if len(owners) == 1 or len(owners) > 8:
            raise UserError("A meeting needs 2 to 8 domain owners, for example "
                            "“Dana: Billing; Eli: Mobile app” (or off, to have them generated for each topic).")
        async with self.store.tx() as tx:
            await tx.set_channel_owners(cmd.platform, cmd.workspace, cmd.channel, owners, cmd.user_id,
                                        self.clock.now())
        if not owners:
            return Reply(text="Meetings in this channel will generate domain owners for each topic again.")
        shown = "; ".join(map(owner_shown, owners))
        return Reply(text=f"Meetings in this channel will seat these domain owners: {shown}.")
