"""Decision records on demand: search (scoped to what the asker may see), Revisit, and the memory a new discussion
opens with (scoped to what everyone in its channel may see). Held by the service."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from core.control import commands as c
from core.control.permissions import Policy, is_admin
from core.control.replies import Reply, UserError
from core.deliberation.memory import MAX_RECALLED
from core.models import Decision
from core.ports import Clock
from core.showing.decision_log import LogLinks, Place
from core.showing.memory import decisions_text
from core.storage.store import Store, Tx

SEARCH_LIMIT = 10


def channels_of(policy: Policy, cmd: c.Command, member_of: list[str] | None = None) -> list[str] | None:
    """The channels whose records the asker may see: None (all of the workspace's) for admins; else the channel
    the command comes from and those the platform says they are in."""
    if is_admin(policy, cmd):
        return None
    return sorted({x for x in [cmd.in_channel, *(member_of or [])] if x})


def private_in(policy: Policy, cmd: c.Command, member_of: list[str] | None = None) -> list[str] | None:
    """Whose private channels' records an answer only the asker reads may show: a member sees only their own
    channels' anyway (None: nothing more to rule out); an admin sees every public channel's, and a private
    channel's only when they are in it: being an admin is no reason to read a private channel."""
    if not is_admin(policy, cmd):
        return None
    return sorted({x for x in [cmd.in_channel, *(member_of or [])] if x})


def shown_in(record: Decision, channel: str, shared: bool = False) -> bool:
    """Whether a record may be shown in a channel's thread. Public means public to this workspace's members: they
    all could read a public channel's record, so it may go into any channel only they read. A private channel's
    record stays in that channel, and a channel people outside the workspace read (`shared`) shows only its own."""
    return record.channel == channel or not (record.private or shared)


def logs_for(policy: Policy, cmd: c.Command, channels: list[str]) -> list[Place]:
    """The decision logs a person may be handed a link to: the logs of `channels` (those they are in, as the
    platform says: a private channel's log is for its members), and the workspace's public log for admins."""
    out = [Place(cmd.platform, cmd.workspace, ch) for ch in dict.fromkeys(channels) if ch]
    if is_admin(policy, cmd):
        out.append(Place(cmd.platform, cmd.workspace))
    return out


class Recall:
    def __init__(self, store: Store, policy: Policy, start: Callable[[c.StartDiscussion], Awaitable[Reply]],
                 logs: LogLinks | None = None, clock: Clock | None = None) -> None:
        self.store, self.policy, self.start, self.logs, self.clock = store, policy, start, logs, clock

    async def search(self, cmd: c.SearchDecisions) -> Reply:
        channels = channels_of(self.policy, cmd, cmd.member_of)
        async with self.store.tx() as tx:
            found = await tx.decisions_found(cmd.platform, cmd.workspace, channels, cmd.words, limit=SEARCH_LIMIT,
                                             private_in=private_in(self.policy, cmd, cmd.member_of))
        text = decisions_text(found, cmd.words, everywhere=channels is None)
        here = [cmd.in_channel] if cmd.in_channel and not cmd.in_dm else []  # asked there: they read it
        links = [(f"[Browse this channel's decision log]({url})" if place.channel else
                  f"[Browse the workspace's decision log]({url})") for place, url in self.log_links(cmd, here)]
        return Reply(text="\n".join([text, " · ".join(links)]) if links else text)

    def log_links(self, cmd: c.Command, channels: list[str]) -> list[tuple[Place, str]]:
        """Each decision log the asker may open (`logs_for`) with its signed link; none without pages."""
        if self.logs is None or self.clock is None or not self.logs.enabled:
            return []
        now = self.clock.now()
        return [(p, self.logs.url(p, now)) for p in logs_for(self.policy, cmd, channels)]

    async def recent(self, cmd: c.Command, member_of: list[str], limit: int = 10) -> list[Decision]:
        """The latest records of the asker's channels (App Home)."""
        async with self.store.tx() as tx:
            return await tx.decisions_found(cmd.platform, cmd.workspace, channels_of(self.policy, cmd, member_of),
                                            limit=limit, private_in=private_in(self.policy, cmd, member_of))

    async def recalled(self, tx: Tx, cmd: c.StartDiscussion) -> list[Decision]:
        """The earlier records a new discussion opens with: at most three, of its channel (or the workspace with
        `--memory workspace`), on its topic's subject (`decisions_related`); none with `--no-memory`. A revisited
        record comes first."""
        if cmd.memory == "off" and not cmd.revisits:
            return []
        out: list[Decision] = []
        if cmd.revisits:
            seed = await tx.decision(cmd.revisits)
            if seed is not None and shown_in(seed, cmd.channel, cmd.shared):
                out.append(seed)
        if cmd.memory != "off":
            # Workspace-wide, a member's memory reaches the channels they are in (admins': every channel), so a
            # thread never shows records its starter could not search.
            # A channel read from outside the workspace opens with its own records only.
            channels = ([cmd.channel] if cmd.memory != "workspace" or cmd.shared else
                        channels_of(self.policy, cmd, [cmd.channel, *cmd.member_of]))
            # The thread is read by everyone in its channel, not only by its starter: a private channel's records
            # never open a discussion elsewhere.
            for d in await tx.decisions_related(cmd.platform, cmd.workspace, channels, cmd.topic,
                                                limit=MAX_RECALLED + 1, private_in=[cmd.channel]):
                if all(d.id != o.id for o in out):
                    out.append(d)
        return out[:MAX_RECALLED]

    async def revisit(self, cmd: c.Revisit) -> Reply:
        async with self.store.tx() as tx:
            record = await tx.decision(cmd.decision_id)
        channels = channels_of(self.policy, cmd)
        if record is None or record.platform != cmd.platform or record.workspace != cmd.workspace or (
                channels is not None and record.channel not in channels):
            raise UserError(f"I can't find a decision record {cmd.decision_id} you can see from here; "
                            "the decisions command lists them.")
        channel = cmd.channel or cmd.in_channel or record.channel
        if not shown_in(record, channel, cmd.shared):
            if record.private:
                raise UserError(f"Decision record {cmd.decision_id} comes from a private channel, so it stays "
                                "there: revisit it from that channel.")
            raise UserError(f"Decision record {cmd.decision_id} belongs to this workspace, and people outside it "
                            "read this channel (it is shared with another organisation or workspace, or has "
                            "guests), so it stays out of here: revisit it from a channel only this workspace's "
                            "members read.")
        start = c.StartDiscussion(
            topic=record.topic, flow=record.flow if record.flow in c.FLOW_NAMES else "moderated",  # type: ignore[arg-type]
            platform=cmd.platform, workspace=cmd.workspace, channel=channel, private=cmd.private,
            shared=cmd.shared,
            tz=cmd.tz, revisits=record.id,
            **cmd.model_dump(include={"user_id", "user_name", "is_admin", "groups", "in_channel", "in_dm"}))
        return await self.start(start)
