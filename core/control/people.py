"""What people say in a discussion's thread: a message the council hears (or a held seat's turn, or the answer to
the clarifying question that starts it), and the stance a person picks for the seat they hold."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from core.control import clarify
from core.control import commands as c
from core.control.desk import Desk
from core.control.guard import Guard
from core.control.permissions import may_clarify
from core.control.replies import Reply, UserError
from core.deliberation import context, flows
from core.deliberation.flows.base import State
from core.deliberation.roster import addressed
from core.models import FINISHED_TURN, Discussion, HumanMessage, Phase, Status
from core.running.driver import load_state
from core.running.effects import redraw_header, save_discussion
from core.running.seat_turns import choose_stance, claim_reply, rank_place
from core.storage.store import Tx

MAX_HUMAN_CHARS = 4000


@dataclass(eq=False)
class People(Desk):
    """PostHumanMessage, TakeStance and RankPlace; the guard paces how often the council answers one person."""

    guard: Guard

    async def post_human_message(self, cmd: c.PostHumanMessage) -> Reply:
        text = cmd.text.strip()
        if not text:
            return Reply(text="", duplicate=True)
        now = self.clock.now()
        async with self.store.tx() as tx:
            if not await tx.first_sight(cmd.event_id, now):
                return Reply(text="", duplicate=True)
            d = await self.get(tx, cmd.discussion_id)
            asked = d.status == Status.AWAITING_CONFIRMATION and d.pending.startswith(clarify.PENDING)
            if asked and may_clarify(self.config.policy, d, cmd):
                return await self._clarified(tx, d, cmd, text, now)
            seat = await claim_reply(tx, d, cmd.user_id, text[:MAX_HUMAN_CHARS], now) if d.status in (
                Status.RUNNING, Status.WAITING) else ""
            if seat == "turn":  # the person holding a seat answered their turn: it is the turn, not a comment
                return Reply(text="Noted: this is your turn.", discussion_id=d.id)
            personas = await tx.personas(d.id)
            # Owed an answer in every flow, between rounds and while one runs (the next step answers it).
            owed = d.status in (Status.WAITING, Status.RUNNING)
            paced = owed and await self.guard.answered_lately(tx, d.id, cmd.user_id, now)
            await tx.add_human_message(
                HumanMessage(discussion_id=d.id, author_id=cmd.user_id, author_name=cmd.user_name or "someone",
                             text=text[:MAX_HUMAN_CHARS], event_id=cmd.event_id,
                             addressed_to=addressed(text, personas),
                             needs_answer=owed and not paced, created_at=now, ref=cmd.ref)
            )
            turns = await tx.turns(d.id)
            closed = d.pending == "final" and any(t.phase == Phase.FINAL_SYNTHESIS and t.status in FINISHED_TURN
                                                  for t in turns)
            await self._flood(tx, State(discussion=d, personas=personas, turns=turns,
                                        humans=await tx.human_messages(d.id)), cmd)
        heard = d.status in (Status.RUNNING, Status.WAITING)
        if heard and closed:  # the closing is written: nothing answers after it, the export files the message
            return Reply(text="Noted: the council has closed; this is filed with its open questions "
                              "(open-questions.md in the export).", discussion_id=d.id)
        if heard and d.pending == "final":
            return Reply(text="Noted: the council is closing; this is answered before the closing, or listed among "
                              "its open questions.", discussion_id=d.id)
        if paced:
            return Reply(text="Noted: the council answered you a moment ago, so this one is heard in the next "
                              "answer or the next round.")
        if asked:  # someone else's reply to the question: heard once it starts, but it settles nothing
            starter = d.created_by_name or "the person who started it"
            return Reply(text=f"Noted: the council will hear this once it starts. The question above is for "
                              f"{starter} (or a workspace admin) to answer, since the topic runs under their name.")
        if d.status == Status.DONE:  # finished: nothing resumes, and the export files what was not answered
            return Reply(text="Noted: the council has finished; this is filed with its open questions "
                              "(open-questions.md in the export).", discussion_id=d.id)
        if d.status == Status.AWAITING_CONFIRMATION:  # not started yet: nothing "resumes"
            return Reply(text="Noted: the council will hear this once it starts.")
        return Reply(text="Noted: the council will hear this on its next turn." if heard else
                     "Noted: the council will hear this when the discussion resumes.",
                     discussion_id=d.id if heard else "")

    async def _flood(self, tx: Tx, state: State, cmd: c.PostHumanMessage) -> None:
        """Once per discussion (the outbox keeps one post per key): say so when one person writes more than the
        council reads from one person, so they know why their earlier messages are cut."""
        if context.flooding(state, flows.get(state.discussion.flow).verbatim_rounds or state.context_rounds,
                            cmd.user_id):
            await self.notice(tx, state.discussion, f"{state.discussion.id}:flood",
                              f"{cmd.user_name or 'Someone'} has written more here than the council reads from one "
                              "person at a time: each turn reads their newest messages in full, and earlier ones "
                              "cut or left out. A shorter message, or a new discussion, is heard in full.")

    async def take_stance(self, cmd: c.TakeStance) -> Reply:
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status in (Status.DONE, Status.STOPPED):
                raise UserError("This discussion has ended, so its stances stay as they were recorded.")
            turn = await tx.turn(cmd.turn_key)
            if turn is not None and turn.discussion_id == d.id and turn.status in FINISHED_TURN:
                raise UserError("That turn is already recorded, with the stance it was written with.")
            if not await choose_stance(tx, d, cmd.user_id, cmd.turn_key, cmd.label):
                raise UserError("Only the person who holds this seat picks its stance.")
        return Reply(text=f"Your stance: {cmd.label}.", discussion_id=d.id)

    async def rank_place(self, cmd: c.RankPlace) -> Reply:
        """A place of a seated person's ranking from its menu; the last place makes the ranking their turn."""
        async with self.store.tx() as tx:
            d = await self.get(tx, cmd.discussion_id)
            if d.status in (Status.DONE, Status.STOPPED):
                raise UserError("This discussion has ended, so its rankings stay as they were recorded.")
            state = await load_state(tx, d.id)
            if state is None:
                raise UserError(f"No discussion with id {cmd.discussion_id!r}.")
            taken, said = await rank_place(tx, state, cmd.user_id, cmd.turn_key, cmd.place, cmd.option_id)
        if not taken:
            raise UserError(said)
        return Reply(text=said, discussion_id=d.id)

    async def _clarified(self, tx: Tx, d: Discussion, cmd: c.PostHumanMessage, text: str, now: datetime) -> Reply:
        """The answer to the clarifying question (or "go") starts the discussion, its topic made clearer."""
        topic = clarify.answered_topic(d.topic, text)
        if topic is not None:
            d.topic = d.round_topic = topic
        d.status, d.pending = Status.RUNNING, clarify.after(d)
        await redraw_header(tx, d, now)
        await save_discussion(tx, d, now)
        said = f"the council takes up “{d.topic}”" if topic is not None else "the council starts on the topic as it is"
        await self.notice(tx, d, f"{d.id}:clarified", f"Thanks, {cmd.user_name or 'someone'}: {said}.")
        return Reply(text="Starting.", discussion_id=d.id)
