"""People given seats (`--seat`, owner lines, the roster form): their Slack names, looked up once per command."""

from __future__ import annotations

import re

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.clients import Users
from core.control import commands as c

_HOLDER = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")


async def named(users: Users, client: AsyncWebClient, team: str, cmd: c.Command) -> c.Command:
    """The command with each seated person under their display name (what the seat is called in the thread)."""
    async def name(user_id: str, fallback: str = "") -> str:
        return (await users.get(client, team, user_id, fallback)).name[:80]

    if isinstance(cmd, c.StartDiscussion) and cmd.seats:
        seats = [s.model_copy(update={"name": await name(s.user_id, s.name)}) for s in cmd.seats]
        return cmd.model_copy(update={"seats": seats})
    if isinstance(cmd, c.ModifyRoster) and cmd.held_by:
        return cmd.model_copy(update={"held_by_name": await name(cmd.held_by)})
    if isinstance(cmd, c.SetOwners):
        lines = []
        for line in cmd.owners:
            m = _HOLDER.search(line.partition(":")[0])
            if m is not None:  # `dana <@U123>: Billing` → `Dana <@U123>: Billing`, the name as Slack shows it
                _, colon, domain = line.partition(":")
                line = f"{await name(m.group(1))} <@{m.group(1)}>{colon}{domain}"
            lines.append(line)
        return cmd.model_copy(update={"owners": lines})
    return cmd
