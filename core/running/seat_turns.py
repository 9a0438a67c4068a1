"""Seats held by people, as the driver runs them: a person's turn asks them and waits with a stored deadline
(nudge at half of it, then the labelled AI stand-in); their reply is recorded as the turn."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from core.deliberation import choices, closings, flows, seats
from core.deliberation.engine import Idle, RunTurns, State, Step, TurnPlan, next_step
from core.deliberation.flows.meeting import fixed_options
from core.deliberation.holders import stand_in
from core.deliberation.prompts import label
from core.models import Action, Author, Discussion, Persona, Phase, Post, Turn
from core.running.effects import record_turn
from core.storage.seat_waits import SeatWait
from core.storage.store import Tx
from core.when.spoken import duration

STANCE_ACTION = "seat:stance"  # each button's id adds its place: ids are unique within a message's block
RANK_ACTION = "seat:rank"  # a ranked turn's menus: `seat:rank:<place>:<n>`, one menu per place


def rank_menus(state: State, plan: TurnPlan) -> list[Action]:
    """A ranked turn's menus, one per place, each listing the options the moderator fixed for the final vote (the
    list an owner's ballot is counted against, not every option the question ever listed); a pick's value carries the
    turn, the place and the option's id (the turn's key starts with its discussion's id)."""
    listed = fixed_options(state)
    names = {o.id: o.label for o in listed}
    return [Action(id=f"{RANK_ACTION}:{place}:{i}", label=choices.show(o.id, names)[:75],
                   value=f"{plan.key}|{place}|{o.id}")
            for place in range(1, places(listed) + 1) for i, o in enumerate(listed)]


def places(listed: list[choices.Option]) -> int:
    """How many places a seated person ranks from the menus: as many as people rank, when there is a choice."""
    return min(closings.PLACES, len(listed)) if len(listed) >= 2 else 0


def _away(waits: list[SeatWait], persona_key: str) -> bool:
    """The person's last turn went to the stand-in, and they have not written since."""
    theirs = [w for w in waits if w.persona_key == persona_key]
    return bool(theirs) and theirs[-1].state == "stand_in"


def ask_post(state: State, plan: TurnPlan, holder: Persona, wait_s: float) -> Post:
    d = state.discussion
    task = flows.get(d.flow).task(state, plan, holder)
    stance_turn = flows.get(d.flow).stance(plan.phase, holder)
    actions = [Action(id=f"{STANCE_ACTION}{i}", label=f"Stance: {o.label}"[:75], value=f"{d.id}|{plan.key}|{o.id}")
               for i, o in enumerate(seats.stance_choices(state))] if stance_turn else []
    if plan.phase == Phase.RANKED_VOTE:
        actions = rank_menus(state, plan)
    return Post(kind="notice", key=f"{plan.key}:ask", title=f"Your turn, {holder.name}",
                text=seats.ask_text(task, holder, label(state, plan.phase), duration(wait_s),
                                    ranked=plan.phase == Phase.RANKED_VOTE),
                mentions=[holder.held_by], actions=actions)


async def triage(tx: Tx, state: State, step: RunTurns, now: datetime, wait_s: float) -> tuple[Step, State, bool]:
    """Split a step's turns: the personas' run now; a person's turn asks them (once), nudges them at half the
    wait, records their answer, or after the wait goes to their stand-in. Returns the turns to run (Idle when
    none), the state they run on (stand-ins labelled), and whether anything was written."""
    d = state.discussion
    if not any(seats.holder_of(state, plan) for plan in step.turns):
        # Nobody's own turn in this step: no query, nothing to wait for. A held seat's answer or bid that runs here
        # is the stand-in's, and shown as theirs.
        return step, _standing(state, step.turns), False
    waits = await tx.seat_waits(d.id)
    by_key = {w.turn_key: w for w in waits}
    runnable: list[TurnPlan] = []
    moved = False
    for plan in step.turns:
        holder = seats.holder_of(state, plan)
        if holder is None:
            runnable.append(plan)
            continue
        w = by_key.get(plan.key)
        if w is None:
            away = _away(waits, holder.key)
            w = SeatWait(turn_key=plan.key, discussion_id=d.id, persona_key=holder.key, user_id=holder.held_by,
                         asked_at=now, nudge_at=None if away else now + timedelta(seconds=wait_s / 2),
                         deadline=now if away else now + timedelta(seconds=wait_s),
                         state="stand_in" if away else "waiting")
            if await tx.add_seat_wait(w):
                if away:
                    await tx.enqueue(d.id, Post(kind="notice", key=f"{plan.key}:away", text=(
                        f"🤖 {holder.name} is away: their AI stand-in takes this turn. {holder.name}, write "
                        "here any time to take your seat back.")), now)
                else:
                    await tx.enqueue(d.id, ask_post(state, plan, holder, wait_s), now)
            waits.append(w)
            moved = True
            if not away:
                continue
        if w.state == "answered":
            await record_answer(tx, state, plan, holder, w, now)
            moved = True
        elif w.state in ("stand_in", "back"):  # "back": taken back while the stand-in had this turn
            runnable.append(plan)
        elif w.state == "waiting" and now >= w.deadline:
            w.state, w.nudge_at = "stand_in", None
            await tx.save_seat_wait(w)
            await tx.enqueue(d.id, Post(kind="notice", key=f"{plan.key}:timeout", text=(
                f"⌛ {holder.name} did not answer within {duration(wait_s)}: their AI stand-in speaks this "
                f"turn. {holder.name}, write here any time to take your seat back.")), now)
            runnable.append(plan)
            moved = True
        elif w.state == "waiting" and w.nudge_at is not None and now >= w.nudge_at:
            w.nudge_at = None
            await tx.save_seat_wait(w)
            left = duration((w.deadline - now).total_seconds())
            await tx.enqueue(d.id, Post(kind="notice", key=f"{plan.key}:nudge", mentions=[holder.held_by], text=(
                f"⏳ {holder.name}, the council is waiting for your turn ({label(state, plan.phase)}): reply "
                f"here within {left}, or your AI stand-in speaks for you.")), now)
            moved = True
    return (RunTurns(turns=runnable) if runnable else Idle()), _standing(state, runnable), moved


def _standing(state: State, runnable: list[TurnPlan]) -> State:
    """The state the model's turns run on: a held seat whose turn the model writes is its AI stand-in (in the
    prompt, the live text and the post), never the person."""
    held = {plan.persona_key for plan in runnable if (p := state.persona(plan.persona_key)) and p.held_by}
    if not held:
        return state
    return State(discussion=state.discussion, turns=state.turns, humans=state.humans,
                 context_rounds=state.context_rounds,
                 personas=[stand_in(p) if p.key in held else p for p in state.personas])


async def record_answer(tx: Tx, state: State, plan: TurnPlan, holder: Persona, w: SeatWait, now: datetime) -> None:
    """The person's reply is the turn: recorded as theirs (no model call), their stance with it; the thread
    already has their words, so it gets a short note instead of a copy."""
    d = state.discussion
    await tx.start_turns([Turn(key=plan.key, discussion_id=d.id, round=plan.round, step=plan.step, phase=plan.phase,
                               persona_key=plan.persona_key, created_at=now)])
    picked = w.stance.split("|") if plan.phase == Phase.RANKED_VOTE and not w.answer.strip() else []
    if picked:  # ranked from the menus: the ballot is their ids; its words are drawn from them where it is recorded
        data, text = seats.picked_ranking(picked, holder), ""
    else:
        data = seats.answer_data(plan.phase, w.answer, w.stance, holder, flows.get(d.flow).stance(plan.phase, holder))
        text = str(data.get("text", w.answer))
    await record_turn(tx, state, plan, text, data, None, "", now, False,
                      author=Author.PERSON)
    await tx.drop_post(d.id, plan.key)
    w.state = "done"
    await tx.save_seat_wait(w)
    recorded = next((t for t in await tx.turns(d.id) if t.key == plan.key), None)
    await tx.enqueue(d.id, Post(kind="notice", key=f"{plan.key}:in", text=(
        f"✍️ {holder.name} wrote their turn ({label(state, plan.phase)}) in person."
        f"{_read_back(recorded.data if recorded is not None else None)}"
        + (f" Their ranking: {picked_text(state, picked)}." if picked else ""))), now)


def picked_text(state: State, picked: list[str]) -> str:
    """A ranking picked from the menus as people read it: each place's option, by its label with its id."""
    names = {o.id: o.label for o in fixed_options(state)}
    return "; ".join(f"{place}. {choices.show(x, names)}" for place, x in enumerate(picked, 1))


def _read_back(data: dict[str, Any] | None) -> str:
    """The stance the turn recorded, as it was read: the option with its id, or that no option could be read (the
    words are never echoed as if they had been accepted)."""
    if not data or "choice" not in data:
        return ""
    if data["choice"] == choices.UNREADABLE:
        return (f" I couldn't read an option in that (“{str(data.get('label', ''))[:40]}”): it counts as undecided. "
                "Name one by its id next time (`Stance: O2 — …`), or pick it from the menu.")
    said = str(data.get("said") or "").split(" — ", 1)[0]  # the stance as read; their reason is in their words
    return f" {said}." if said else ""


async def claim_reply(tx: Tx, d: Discussion, author_id: str, text: str, now: datetime) -> str:
    """A thread reply from someone who holds a seat here: "turn" when it answers their open turn, "back" when it
    takes back a seat the stand-in held, "" otherwise (an ordinary message)."""
    held = {p.key: p for p in await tx.personas(d.id) if p.held_by and p.held_by == author_id}
    if not held:
        return ""
    waits = await tx.seat_waits(d.id)
    for w in waits:
        if w.persona_key in held and w.state == "waiting":  # their words win over any places picked so far
            w.state, w.answer = "answered", text
            await tx.save_seat_wait(w)
            return "turn"
    for key, p in held.items():
        if _away(waits, key):
            latest = [w for w in waits if w.persona_key == key][-1]
            latest.state = "back"
            await tx.save_seat_wait(latest)
            await tx.enqueue(d.id, Post(kind="notice", key=f"{latest.turn_key}:back", text=(
                f"↩️ {p.name} takes their seat back: their next turn is theirs again.")), now)
            return "back"
    return ""


async def choose_stance(tx: Tx, d: Discussion, user_id: str, turn_key: str, chosen: str) -> bool:
    """The stance menu under a person's turn, kept with the wait for the reply that records it (a turn already
    recorded keeps the stance it was written with). False when this is not the person's turn to pick."""
    w = next((x for x in await tx.seat_waits(d.id) if x.turn_key == turn_key), None)
    if w is None or w.user_id != user_id:
        return False
    w.stance = " ".join(chosen.lower().split())[:40]
    await tx.save_seat_wait(w)
    return True


async def rank_place(tx: Tx, state: State, user_id: str, turn_key: str, place: int,
                     option_id: str) -> tuple[bool, str]:
    """One place of a seated person's ranking, picked from the menus under their turn, kept with the wait: once
    every place is picked the ranking is their turn, recorded as a reply would be. Returns whether the pick was
    taken and what to tell them (why not: not theirs, not waiting, not listed, or already placed)."""
    w = next((x for x in await tx.seat_waits(state.discussion.id) if x.turn_key == turn_key), None)
    if w is None or w.user_id != user_id:
        return False, "Only the person who holds this seat ranks for it."
    if w.state != "waiting":
        return False, "That turn is no longer waiting for you: it was answered, or your AI stand-in took it."
    if not _ranked(state, turn_key):
        return False, "That turn is not a ranking: write it here in your own words."
    listed = fixed_options(state)
    names = {o.id: o.label for o in listed}
    n = places(listed)
    if option_id not in names or not 1 <= place <= n:
        return False, "That option is no longer on the list to rank; the newest list is in the thread."
    picks = (w.stance.split("|") if w.stance else []) + [""] * n
    picks = picks[:n]
    if option_id in picks and picks.index(option_id) != place - 1:
        return False, (f"You already put {choices.show(option_id, names)} at #{picks.index(option_id) + 1}: pick "
                       "another option for this place (each option takes one place in your ranking).")
    picks[place - 1] = option_id
    w.stance = "|".join(picks)
    left = [f"#{i}" for i, x in enumerate(picks, 1) if not x]
    if not left:
        w.state, w.answer = "answered", ""
    await tx.save_seat_wait(w)
    if not left:
        return True, f"Your ranking is in: {picked_text(state, picks)}."
    return True, (f"#{place}: {choices.show(option_id, names)}. Pick {' and '.join(left)} to finish your ranking "
            "(or write it here).")


def _ranked(state: State, turn_key: str) -> bool:
    """Whether this turn, one the discussion is now on, is a ranked vote."""
    step = next_step(state)
    return isinstance(step, RunTurns) and any(p.key == turn_key and p.phase == Phase.RANKED_VOTE for p in step.turns)


async def ranking_asked(tx: Tx, state: State, user_id: str) -> tuple[str, list[choices.Option]] | None:
    """The ranked turn this person's seat is asked now, with the options its places list in order (a terminal
    numbers them), or None when none is waiting for them."""
    for w in await tx.seat_waits(state.discussion.id):
        if w.user_id == user_id and w.state == "waiting" and _ranked(state, w.turn_key):
            listed = fixed_options(state)
            return w.turn_key, listed[:len(listed) if places(listed) else 0]
    return None
