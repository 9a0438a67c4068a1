"""The reminder before a poll's deadline: who took part in the thread but has not voted, told once, privately."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime, timedelta

from core.control import defaults
from core.models import Action, Ballot, Discussion, HumanMessage, Poll, Post
from core.ports import ChatPort, Clock
from core.showing import deadlines
from core.storage.store import Store

log = logging.getLogger(__name__)

LEAD = timedelta(hours=1)  # how long before its deadline a poll reminds
# A poll that closes within this long of opening reminds nobody: its reminder would land as the poll itself
# appears (a one-hour poll), a second ping about what the thread just showed.
SHORTEST = 2 * LEAD


def remind_at(closes_at: datetime) -> datetime:
    return closes_at - LEAD


def wanted(poll: Poll) -> bool:
    """Whether the poll reminds at all: a deadline, and long enough open that the reminder is news."""
    return poll.closes_at is not None and poll.closes_at - poll.created_at >= SHORTEST


def who(d: Discussion, poll: Poll, messages: list[HumanMessage], ballots: Mapping[int, list[Ballot]]) -> list[str]:
    """The people to remind, in the order they first took part: the starter, those who wrote in the thread,
    those who voted on another of its polls; minus everyone whose vote on this poll counts."""
    voted = {b.voter_id for b in ballots.get(poll.id, []) if not b.is_ai}
    seen: dict[str, None] = {}
    if d.created_by:
        seen[d.created_by] = None
    for m in messages:
        seen.setdefault(m.author_id, None)
    for cast in ballots.values():
        for b in cast:
            if not b.is_ai:
                seen.setdefault(b.voter_id, None)
    return [user for user in seen if user not in voted]


def reminder_post(d: Discussion, poll: Poll, user_id: str) -> Post:
    """The private nudge: the question, its options as buttons and the deadline; never anyone's vote or a count
    (a hidden or anonymous poll's stay hidden, and the words are the same whatever the counts)."""
    until = deadlines.shown(d, poll.closes_at or poll.created_at)
    options = "\n".join(f"• {option}" for option in poll.options)
    return Post(kind="notice", key=f"{poll.key}:remind:{user_id}", title=d.topic, whisper=True,
                text=f"⏰ Voting on “{poll.question}” closes {until}. You took part in “{d.topic}” but have not "
                     f"voted on it yet:\n{options}",
                actions=[Action(id=f"vote:{i}", label=option, value=f"{poll.id}|{i}")
                         for i, option in enumerate(poll.options)])


def switched_off(saved: Mapping[str, object]) -> bool:
    return defaults.still_valid(dict(saved)).get("poll_reminders") == "off"


class Reminders:
    """The timer's reminder of a poll: claimed in one transaction (the poll's `reminded_at`), then sent. Claimed
    before sending, so a crash between the two drops the reminder rather than sending it twice."""

    def __init__(self, store: Store, clock: Clock, chats: Mapping[str, ChatPort]) -> None:
        self.store, self.clock, self.chats = store, clock, chats

    async def remind(self, poll_id: int) -> int:
        """Remind the people a poll is waiting for; how many were told (0: not due, done, switched off, gone)."""
        now = self.clock.now()
        async with self.store.tx() as tx:
            poll = await tx.poll(poll_id, for_update=True)
            d = await tx.discussion(poll.discussion_id) if poll is not None else None
            if poll is None or d is None or poll.reminded_at is not None or poll.closes_at is None:
                return 0
            if now < remind_at(poll.closes_at) and wanted(poll):
                return 0  # a timer a hair early: the next reload registers it again
            if not await tx.claim_reminder(poll.id, now):
                return 0
            if poll.closed or deadlines.due(poll, now) or not wanted(poll):
                return 0  # past its time (closed, or closing now) or too short to remind: marked, nothing sent
            if d.channel and switched_off(await tx.channel_defaults(d.platform, d.workspace, d.channel)):
                return 0
            polls = await tx.polls(d.id)
            ballots = {p.id: await tx.ballots(p.id) for p in polls}
            people = who(d, poll, await tx.human_messages(d.id), ballots)
        chat = self.chats.get(d.platform)
        if chat is None:
            return 0
        told = 0
        for user in people:
            try:
                await chat.tell(d, user, reminder_post(d, poll, user))
                told += 1
            except Exception:  # one person's closed DMs must not keep the others from their reminder
                log.warning("could not remind %s of poll %s", user, poll.id, exc_info=True)
        log.info("reminded %d of %d people of poll %s", told, len(people), poll.id)
        return told
