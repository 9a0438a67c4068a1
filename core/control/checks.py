"""*Check claims* on one post: queues the Fact-checker's turn on it, once, for anyone who can see the discussion
(a bounded number per person)."""

from __future__ import annotations

from typing import Protocol

from core.control import commands as c
from core.control.replies import Reply, UserError
from core.deliberation import factcheck
from core.deliberation.roster import FACT_CHECKER
from core.models import FINISHED_TURN, Discussion, Phase, Status, Turn, TurnStatus
from core.ports import Clock
from core.storage.store import Store, Tx


class Finding(Protocol):
    """What a check needs of the service: its store and clock, and the discussion the asker may see."""

    store: Store
    clock: Clock

    async def get(self, tx: Tx, discussion_id: str) -> Discussion: ...


class Checks:
    def __init__(self, service: Finding) -> None:
        self.service = service

    async def check_claims(self, cmd: c.CheckClaims) -> Reply:
        now = self.service.clock.now()
        async with self.service.store.tx() as tx:
            d = await self.service.get(tx, cmd.discussion_id)
            target = await tx.turn(cmd.turn_key)
            if target is None or target.discussion_id != d.id or not factcheck.offered(target):
                raise UserError("There is nothing to check in that post.")
            if d.status == Status.STOPPED:
                raise UserError("This discussion was stopped, so the Fact-checker no longer runs in it.")
            key = factcheck.requested_key(d.id, target.key)
            asked = await tx.turn(key)
            if asked is not None:
                if asked.status == TurnStatus.SKIPPED:  # dropped unpaid: asking again would not pay for it either
                    raise UserError("That post could not be checked; the thread says why.")
                done = asked.status in FINISHED_TURN
                return Reply(text="That post has been checked already: the check is in the thread." if done else
                             "That post is being checked; the Fact-checker posts in the thread when done.")
            # Counted under a lock on the person's checks in this discussion, held until the insert commits: checks
            # asked at once are counted one after another, so no more than the limit get in.
            await tx.serialize("checks", d.id, cmd.user_id)
            mine = [t for t in await tx.turns(d.id) if factcheck.asked_by(t) == cmd.user_id]
            if len(mine) >= factcheck.CHECKS_PER_PERSON:
                raise UserError(f"You have asked for {len(mine)} checks in this discussion, the most one person "
                                "may ask; read them in the thread, or ask someone else to check this post.")
            # Stored as started: the engine finds it (factcheck.requested) whatever the discussion is doing.
            await tx.start_turns([Turn(key=key, discussion_id=d.id, round=target.round,
                                       step=factcheck.REQUESTED_STEP, phase=Phase.FACT_CHECK,
                                       persona_key=FACT_CHECKER.key, data={factcheck.ASKED_BY: cmd.user_id},
                                       created_at=now)])
        return Reply(text="The Fact-checker is checking that post; its verdicts and sources follow in the thread.",
                     discussion_id=d.id)
