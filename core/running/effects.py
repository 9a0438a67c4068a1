"""What a finished turn changes, inside the transaction that records it: personas, syntheses, polls, posts."""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import replace
from datetime import datetime
from typing import Any

from core.deliberation import (
    choices,
    closings,
    context,
    evidence,
    factcheck,
    flows,
    holders,
    links,
    question,
    review,
    seating,
    seats,
    stances,
    verdicts,
)
from core.deliberation.choices import Option
from core.deliberation.engine import State, TurnPlan
from core.deliberation.flows import council, meeting
from core.deliberation.schemas import (
    Bid,
    CouncilVerdict,
    ExpertSpec,
    FinalSynthesis,
    MeetingOptions,
    MeetingRecommendation,
    Question,
    RankedVote,
    RoundSynthesis,
)
from core.models import (
    FINISHED_TURN,
    Author,
    Ballot,
    Discussion,
    Persona,
    Phase,
    Poll,
    Post,
    Status,
    TurnStatus,
    Usage,
)
from core.running.kept import Known
from core.showing import deadlines, formats
from core.showing.document import enqueue_document
from core.showing.marks import mark_heard
from core.showing.posts import header_post, header_sig, poll_post, turn_post
from core.storage.store import Tx

Polled = list[tuple[Poll, list[Ballot]]]  # a discussion's polls, each with its live ballots (`Tx.round_ballots`)

# A check composes its post around the sources the API cited; roster and bookkeeping turns are never posted.
AS_WRITTEN = frozenset({Phase.FACT_CHECK, Phase.ROSTER, Phase.PERSONA, Phase.BID})


async def save_discussion(tx: Tx, d: Discussion, now: datetime, *, kept: Known | None = None) -> None:
    """Save a discussion; when what its header shows has changed, queue the header's redraw in the same
    transaction (the outbox sends posts in order, so an older header never lands over a newer one). `kept`: the
    state as the driver keeps it (see `record_turn`)."""
    await redraw_header(tx, d, now, only_if_changed=True, kept=kept)
    await tx.save_discussion(d, now)


async def redraw_header(tx: Tx, d: Discussion, now: datetime, *, only_if_changed: bool = False,
                        kept: Known | None = None) -> None:
    """Queue an edit of the header with the discussion's state, spend and the controls that make sense now."""
    next_round = None
    if d.status in (Status.WAITING, Status.PAUSED):
        schedule = await tx.find_schedule("round", d.platform, d.workspace, d.id)
        next_round = schedule.next_run_at if schedule is not None and schedule.enabled else None
    sig = header_sig(d, next_round)
    if only_if_changed and sig == d.header_shown:
        return
    d.header_shown = sig
    personas = kept.personas if kept is not None and kept.personas is not None else await tx.personas(d.id)
    # Keyed by what it shows, roster included: a roster edit in the same instant as the last redraw is a new post.
    shown = sig + "".join(p.model_dump_json() for p in personas)
    stamp = f"{now.timestamp():.6f}:{zlib.crc32(shown.encode()):08x}"
    await tx.enqueue(d.id, header_post(d, personas, replaces=f"{d.id}:header", next_round=next_round, stamp=stamp),
                     now)


def seated_header(current: Discussion, personas: list[Persona], turn_key: str) -> Post:
    """The header with the roster a turn just seated. Drawn from the discussion as it is now, read under its
    lock (a pause pressed while the roster was written must not be shown as running again), and keyed by the
    turn, so the adapters know which placeholder the header answers."""
    return header_post(current, personas, replaces=f"{current.id}:header", seated=True).model_copy(
        update={"key": f"{current.id}:header:{turn_key}"})


async def _open_poll(
    tx: Tx, state: State, key: str, asking: str, options: list[Option], final: bool, now: datetime, offline: bool,
) -> None:
    """Open a poll on option records; a persona has a ballot on it only when its own choice this round (an open
    floor: its latest) is one of the options' ids (nobody fills in another persona's ballot, and no wording is
    matched)."""
    d = state.discussion
    poll = await tx.add_poll(
        Poll(key=key, final=final, discussion_id=d.id, round=d.round, question=asking,
             options=[o.label for o in options[:5]], option_ids=[o.id for o in options[:5]],
             anonymous=d.poll_anonymous, hide_results=d.poll_hidden, created_at=now,
             closes_at=deadlines.deadline(d, now) if final else None)
    )
    if poll is None:
        return
    mine = stances.latest(state, d.round)
    known = question.on_table(state)
    carry = flows.get(d.flow).keeps_stances  # an open floor: the latest choice, as its stance table shows
    ai = []
    # A place in a meeting's ranking is for people: the owners' own rankings stand beside theirs when it closes.
    # The personas the verdict counts, and no other: the Contrarian's stance is shown beside the count, not in it.
    counted = [p for p in stances.voters(state.personas) if stances.counted(p)]
    for persona in counted if not closings.ranking_of(key) else []:
        turn = mine.get(persona.key)
        choice = stances.choice_of(turn, known) if turn is not None and (carry or turn.round == d.round) else ""
        if choice in poll.option_ids:
            ai.append(Ballot(poll_id=poll.id, voter_id=f"persona:{persona.key}",
                             voter_name=holders.credited(persona, turn),
                             choice=poll.option_ids.index(choice), is_ai=True, created_at=now))
    await tx.add_ballots(ai)  # a new poll has no earlier ballots to supersede, nor any other yet
    await tx.enqueue(d.id, poll_post(poll, ai, offline), now)


BALLOT = 5  # the options a poll shows at most (one button or menu entry each)


def _on_ballot(state: State, listed: list[Option], fresh: list[Option]) -> list[Option]:
    """The options a poll offers: the question's list, each once, in its order; past `BALLOT`, those the
    counted personas chose this round and this synthesis's own come first, then the newest."""
    unique = list({o.id: o for o in listed}.values())
    if len(unique) <= BALLOT:
        return unique
    known = question.on_table(state)
    chosen = {stances.choice_of(t, known) for t in stances.latest(state, state.discussion.round).values()}
    fresh_ids = {o.id for o in fresh}
    order = sorted(range(len(unique)), key=lambda i: (unique[i].id not in chosen, unique[i].id not in fresh_ids, -i))
    keep = set(order[:BALLOT])
    return [o for i, o in enumerate(unique) if i in keep]


async def people_ballots(tx: Tx, discussion_id: str, round_: int) -> list[str]:
    """What people chose in this round's polls, as option ids (see `closings.people_choices`): whatever reads
    these (a synthesis, the verdict, the decision record) is shown."""
    return closings.people_choices(await tx.round_ballots(discussion_id, round_), round_)


def people_counts(chosen: list[str], shown: dict[str, str] | None = None) -> dict[str, int]:
    """The people's choices counted, each shown as people read it (an option's label with its id)."""
    return dict(Counter(choices.show(c, shown or {}) for c in chosen).most_common())


async def refresh_verdict(tx: Tx, d: Discussion, poll: Poll, now: datetime, offline: bool, *,
                          kept: Known | None = None, polled: Polled | None = None) -> stances.Verdict | None:
    """A ballot cast or a poll closed may change the people's side: the synthesis that opened the poll shows
    its one verdict anew, edited in place, and what the page, the export and the decision record read follows
    it in the same transaction. `kept`: the discussion's turns and personas as they are in this transaction, when
    the caller keeps them (a driver's transition); otherwise they are read. `polled`: the discussion's polls
    with their live ballots as they are in this transaction, when the caller has read them. The verdict as it
    now stands ("so far" while a final poll under it is open), or None for a poll under no verdict."""
    key = deadlines.synthesis_of(poll)
    turns = kept.ordered() if kept is not None else await tx.turns(d.id)
    found = next((t for t in turns if t.key == key), None)
    if found is None or found.data is None or not verdicts.carries(found):
        return None
    # Changed below: the caller's copy stays as it is stored until this commits.
    data = dict(found.data)
    turn = found.model_copy(update={"data": data})
    personas = kept.personas if kept is not None and kept.personas is not None else await tx.personas(d.id)
    state = State(discussion=d, personas=personas, turns=turns)
    people = (closings.people_choices(polled, turn.round) if polled is not None
              else await people_ballots(tx, d.id, turn.round))
    polls = [p for p, _ in polled] if polled is not None else await tx.polls(d.id)
    new = deadlines.said(d, verdicts.of_round(state, turn.round, people), deadlines.open_until(polls, key))
    old = str(data["verdict"])
    if poll.final:
        await tx.set_decision_people(d.id, people_counts(people, stances.names(state)), new.text)
    if new.text == old:
        return new
    turn.text, turn.data = verdicts.refreshed(turn.text, old, new), {**data, "verdict": new.text}
    stored = next((x for x in await tx.syntheses(d.id) if x["turn_key"] == turn.key), None)
    if stored is not None:
        await tx.set_synthesis(turn.key, {**(stored["data"] or {}), "verdict": new.text},
                               verdicts.refreshed(str(stored["text"]), old, new))
    prefix = f"{turn.key}:verdict:"
    await tx.drop_unsent(d.id, prefix)  # one edit for a burst of votes
    posted = verdicts.refreshed(str(turn.data.get("posted", turn.text)), old, new)  # the thread's own wording
    if "posted" in turn.data:
        turn.data = {**turn.data, "posted": posted}
    await tx.save_turn(turn)
    post = turn_post(d, turn, state.persona(turn.persona_key), posted, "synthesis", offline)
    digest = zlib.crc32(new.text.encode())
    await tx.enqueue(d.id, post.model_copy(update={"key": f"{prefix}{digest:08x}", "replaces": turn.key}), now)
    return new


async def _stance_section(tx: Tx, state: State, round_: int, *, final: bool = False,
                          verdict: stances.Verdict | None = None) -> tuple[str, str]:
    """The stance table and, unless the post gives it elsewhere, the round's one verdict; then the claims the
    Fact-checker found false or stretched (the round's, or the whole discussion's for a final synthesis): as
    kept on the record, and as the thread shows it. A closing written right after its round's synthesis would
    repeat the table the thread just showed: there it points to it and gives the verdict."""
    carry = flows.get(state.discussion.flow).keeps_stances
    rows = stances.table(state, round_, carry=carry)
    section = stances.text(rows, round_, with_verdict=False)
    said = f"\n\n{verdicts.LINE}{verdict.text}" if verdict is not None else ""
    if section:
        section += said
    fell = factcheck.fallen_section(state, None if final else round_)
    full = (f"\n\n{section}" if section else "") + fell
    if not (final and rows and any(t.round == round_ for t in state.done_turns(Phase.ROUND_SYNTHESIS))):
        return full, full
    pointer = f"_Stances as after round {round_}, above._" + said
    return full, f"\n\n{pointer}" + fell


def _people_questions(state: State, phase: Phase) -> str:
    """A round synthesis lists what people asked since the last one and nobody answered; the final one, all."""
    since = None
    if phase == Phase.ROUND_SYNTHESIS:
        earlier = [t for t in state.done_turns(Phase.ROUND_SYNTHESIS) if t.round < state.discussion.round]
        since = earlier[-1].finished_at if earlier else None
    return formats.people_questions([(m.author_name, m.text) for m in context.unanswered(state, since=since)])


async def record_turn(
    tx: Tx, state: State, plan: TurnPlan, text: str, data: dict[str, Any] | None, usage: Usage | None,
    error: str, now: datetime, offline: bool, *, current: Discussion | None = None, author: Author | None = None,
    kept: Known | None = None,
) -> None:
    """Record a finished (or failed) turn and all it changes. `current`: the discussion as read under its lock in
    this transaction, when the caller has it (the fence reads it); otherwise it is read here. `author`: who wrote
    it, when not the model (a seat's person); the model's turn for a held seat is their AI stand-in's. `kept`:
    the turns and holds as the driver keeps them, when its fence found nothing else changed them."""
    d = state.discussion
    mine = kept.turns.get(plan.key) if kept is not None and plan.key in kept.held else None
    if kept is not None and mine is not None:
        turn, held = mine.model_copy(), kept.held[plan.key]
    else:
        # Locked: of two writers racing on one turn, the second sees it finished, so its personas, synthesis,
        # polls and posts are written once (a driver's own copy is used only where no other writer came in).
        found = await tx.held_turn(plan.key)
        if found is None:
            return
        turn, held = found
    # Finished by another driver first: that one paid. Skipped by a Stop while it ran: still paid for.
    paid = turn.status not in FINISHED_TURN or turn.status == TurnStatus.SKIPPED
    # What the turn held in its workspace's spend gives way to what it cost; a turn still open is saved, ended,
    # on every path below, and that write clears its hold.
    await tx.settle_turn(d.id, plan.key, held, usage if paid else None, now, saved=turn.status not in FINISHED_TURN,
                         charged=tx.charged_at_fence)
    if turn.status in FINISHED_TURN:
        return  # another driver finished it first, or Stop set it aside
    persona = state.persona(plan.persona_key)
    turn.author = author or (Author.BOT if plan.phase == Phase.ROSTER else holders.author_of(persona))
    if current is None:
        current = await tx.discussion(d.id, for_update=True)
    if current is not None and current.status == Status.STOPPED:
        # Stop is final: a turn that was still running is kept out of the thread, after the stop notice.
        turn.status, turn.error, turn.finished_at = TurnStatus.SKIPPED, "the discussion was stopped", now
        await tx.save_turn(turn)
        return
    if error:
        turn.status, turn.error, turn.finished_at = TurnStatus.FAILED, error, now
        await tx.save_turn(turn)
        return
    if author is None and plan.phase not in AS_WRITTEN:
        # Links the model wrote are shown, never clickable: only Council's own (cited sources, its pages) are.
        text, data = links.plain(text), links.plain_data(data)
    kind = "turn"
    polls: list[tuple[str, str, list[Option], bool]] = []
    in_thread: str | None = None  # the post's text, where it differs from the record's
    # A reference nobody gave the council (no tools: it cannot look one up) is labelled where the model cited it;
    # never in what people wrote, nor in what Council composes around the model's words (tallies, tables).
    known = "\n".join([d.topic, d.context, *(m.text for m in state.humans)])
    model = turn.author in (Author.PERSONA, Author.STAND_IN)

    def mark(words: str) -> str:
        return evidence.mark_unverified(words, known) if model else words

    # This round's turns read under the discussion's lock, not only the step's snapshot: turns of one step finish
    # one after another, and each `new:` option takes the next id after those its siblings already put on the table.
    fresh = list(kept.turns.values()) if kept is not None else await tx.turns_changing(d.id, plan.round, [])
    latest = {t.key: t for t in [*state.turns, *fresh]}
    finished = State(discussion=d, personas=state.personas, turns=list(latest.values())).done_turns()
    on_table = question.options(finished, d)  # the current question's options: what a stance names
    if data is not None and "stance" in data and "text" in data:  # a structured turn with its stance
        text = str(data["text"]).strip()
        data = stances.record(data, on_table, choices.catalogue(finished))
    elif persona is not None and flows.get(d.flow).stance(plan.phase, persona):
        data = stances.parse(text)  # the stance line the turn ends with, kept in the text people read
        if data is not None:
            data = stances.record(data, on_table, choices.catalogue(finished))
            # The line as people read it: the id with its label, whatever form the model wrote it in.
            text = "\n".join([*text.rstrip().splitlines()[:-1], str(data["said"])])
    if plan.phase == Phase.ROSTER:
        personas = seats.with_people(d, seating.roster(d, state.personas, data))
        await tx.set_personas(d.id, personas)
        text = formats.roster_text(personas)
        # The topic's answers, as the roster gave them, open the question with ids (the first options).
        data = (data or {}) | question.record(finished, d, (data or {}).get("options") or [])
        turn.text, turn.data, turn.status, turn.finished_at = text, data, TurnStatus.DONE, now
        await tx.save_turn(turn)
        await tx.enqueue(d.id, seated_header(current or d, personas, turn.key), now, turn_key=turn.key)
        if data.get(question.OPENS):
            await tx.enqueue(d.id, Post(kind="notice", key=f"{turn.key}:question", offline=offline,
                                        text=question.text(question.asked(replace(state, turns=[*finished, turn])),
                                                           question.options([turn], d))), now)
        return
    if plan.phase == Phase.QUESTION:
        framed = Question.model_validate(data)
        data = question.record(finished, d, framed.options, framed.question.strip())
        listed = question.options([turn.model_copy(update={"data": data})], d)
        text = (question.text(framed.question.strip() or question.asked(state), listed) if data.get(question.OPENS)
                else "_No answers to choose between could be framed: stances name for, against or a new option._")
    if plan.phase == Phase.PERSONA and persona is not None:  # an open-floor slot becomes a participant
        seated = seating.seat(persona, ExpertSpec.model_validate(data))
        await tx.update_persona(d.id, seated)
        # No post of its own: the header's roster, edited in place, is the one line that grows as slots fill.
        turn.text, turn.data, turn.status, turn.finished_at = formats.roster_text([seated]), data, TurnStatus.DONE, now
        await tx.save_turn(turn)
        await tx.enqueue(d.id, seated_header(current or d, await tx.personas(d.id), plan.key), now)
        return
    elif plan.phase == Phase.BID:  # kept for the record and the next speaker's choice; never posted
        bid = Bid.model_validate(data)
        turn.text, turn.data, turn.status, turn.finished_at = f"{bid.urgency}/10: {bid.point}", data, \
            TurnStatus.DONE, now
        await tx.save_turn(turn)
        return
    elif plan.phase == Phase.PEER_REVIEW:  # kept for the aggregate, which the round's last review posts
        turn.text, turn.data, turn.status, turn.finished_at = "", data, TurnStatus.DONE, now
        await tx.save_turn(turn)
        after = replace(state, turns=[*(t for t in latest.values() if t.key != turn.key), turn])
        if review.complete(after, plan.round):
            await tx.enqueue(d.id, Post(kind="notice", key=f"{d.id}:r{plan.round}:peer_review", offline=offline,
                                        text=review.text(after, plan.round)), now)
        return
    elif plan.phase == Phase.OPTIONS:
        fixed = choices.extend(on_table, MeetingOptions.model_validate(data).options)
        data = {"options": [o.label for o in fixed], "listed": choices.records(fixed)}
        text = meeting.options_text(fixed)
    elif plan.phase == Phase.RANKED_VOTE:
        vote = RankedVote.model_validate(data)
        fixed = meeting.fixed_options(state)
        text = closings.ranking_text(vote, fixed)
        # The ballot's #1 is the item written first: an option when it names one, else unmatched (never the next).
        first = closings.placed(vote, fixed)[:1]
        data = (data or {}) | {"choice": (first[0] if first and first[0] else choices.UNREADABLE)}
    if plan.phase == Phase.ROUND_SYNTHESIS:
        rs = RoundSynthesis.model_validate(data)
        proposals = choices.extend(choices.catalogue(finished), rs.proposals)
        data = (data or {}) | {"listed": choices.records(proposals)}
        # The kind its summary reads, as data, against the verdict it was given: one verdict per post.
        if not verdicts.reading(verdicts.of_round(state, plan.round, []), rs.reads, "none", []).agrees:
            rs = rs.model_copy(update={"summary": formats.WITHHELD_SUMMARY})
            data |= {"summary": rs.summary, "withheld": True}
        with_ids = rs.model_copy(update={"proposals": [o.label for o in proposals]})
        text = mark(formats.round_synthesis_text(with_ids, plan.round, [o.id for o in proposals]))
        kind = "synthesis"
        verdict = verdicts.of_round(state, plan.round, await people_ballots(tx, d.id, plan.round))
        text += (await _stance_section(tx, state, plan.round, verdict=verdict))[0]
        data |= {"verdict": verdict.text}
        await tx.add_synthesis(plan.key, d.id, plan.round, "round", data, text, now)
        listed = _on_ballot(state, [*on_table, *proposals], proposals)
        if len(listed) >= 2:  # people choose from the question's one list, as the personas did
            polls.append((f"{plan.key}:poll", "Which option should the team pursue?", listed, False))
    elif plan.phase == Phase.FINAL_SYNTHESIS and d.flow == "meeting":
        rec = MeetingRecommendation.model_validate(data)  # the moderator's words, marked; the tally is Council's
        rec = rec.model_copy(update={name: [mark(x) for x in getattr(rec, name)]
                                     for name in ("key_arguments", "dissents", "next_steps")})
        fixed = meeting.fixed_options(state)
        verdict = verdicts.of_round(state, plan.round, await people_ballots(tx, d.id, plan.round))
        # People rank below it until the deadline (at least two options to rank): the verdict says "so far".
        verdict = deadlines.said(d, verdict, deadlines.deadline(d, now) if len(fixed) >= 2 else None)
        text, items = closings.recommendation(d.topic, state, rec, verdict)
        data = (data or {}) | {"verdict": verdict.text}
        # The recommendation gives the verdict (over every owner's first choice): the table adds no second one.
        full, shown = await _stance_section(tx, state, plan.round, final=True)
        text, in_thread, kind = text + full, text + shown, "synthesis"
        await tx.add_synthesis(plan.key, d.id, plan.round, "final", data, text, now)
        # People rank the moderator's whole list, the owners' order first: whatever the owners' ballots named.
        polls += closings.place_polls(plan.key, sorted(fixed, key=lambda o: items.index(o.id) if o.id in items
                                                       else len(items) + fixed.index(o)))
    elif plan.phase == Phase.FINAL_SYNTHESIS and d.flow == "council":
        # People vote on the same ids the advisors chose from: the options on the table, else for / against.
        council_choices = council.choosable(state)
        computed = verdicts.of_round(state, plan.round, await people_ballots(tx, d.id, plan.round))
        verdict = deadlines.said(d, computed, deadlines.deadline(d, now))  # its poll stays open below it (or not)
        cv = CouncilVerdict.model_validate(data)
        # The referee's kind and option, as data, against the computed verdict: one verdict per post.
        read = verdicts.reading(verdicts.of_round(state, plan.round, []), cv.reads, cv.recommends, council_choices)
        named = choices.show(read.recommends, stances.names(state)) if read.recommends else "none"
        text, kind = mark(formats.verdict_text(cv, named, agrees=read.agrees)), "synthesis"
        full, shown = await _stance_section(tx, state, plan.round, final=True, verdict=verdict)
        text, in_thread = text + full, text + shown
        data = (data or {}) | {"verdict": verdict.text, "recommends": read.recommends, "withheld": not read.agrees}
        await tx.add_synthesis(plan.key, d.id, plan.round, "final", data, text, now)
        polls.append((f"{plan.key}:poll", "Where do you stand on the council's question?", council_choices, True))
    elif plan.phase == Phase.FINAL_SYNTHESIS:
        fs = FinalSynthesis.model_validate(data)
        recommended = choices.extend(choices.catalogue(finished), fs.recommendations)
        data = (data or {}) | {"listed": choices.records(recommended)}
        # The kind its summary reads, as data, against the verdict it was given: one verdict per post.
        if not verdicts.reading(verdicts.of_round(state, plan.round, []), fs.reads, "none", []).agrees:
            fs = fs.model_copy(update={"executive_summary": formats.WITHHELD_SUMMARY})
            data |= {"executive_summary": fs.executive_summary, "withheld": True}
        text, kind = mark(formats.final_synthesis_text(fs)), "synthesis"
        listed = _on_ballot(state, [*on_table, *recommended], recommended)
        verdict = verdicts.of_round(state, plan.round, await people_ballots(tx, d.id, plan.round))
        verdict = deadlines.said(d, verdict, deadlines.deadline(d, now) if len(listed) >= 2 else None)
        full, shown = await _stance_section(tx, state, plan.round, final=True, verdict=verdict)
        text, in_thread = text + full, text + shown
        data |= {"verdict": verdict.text}
        await tx.add_synthesis(plan.key, d.id, plan.round, "final", data, text, now)
        if len(listed) >= 2:  # the question's one list, the recommendations added to it
            polls.append((f"{plan.key}:poll", "Which option should the team act on?", listed, True))
    elif plan.phase == Phase.RESUME_SUMMARY:
        text, kind = mark(text), "synthesis"
        await tx.add_synthesis(plan.key, d.id, plan.round, "resume", None, text, now)
    else:
        text = mark(text)  # a turn in the speaker's own words (or ballot): all of it theirs
        if plan.phase == Phase.ANSWER and plan.reply_to is not None:
            await tx.mark_answered(plan.reply_to)
            await mark_heard(tx, d, plan.reply_to, now)
    in_thread = text if in_thread is None else in_thread
    if plan.phase in (Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS):
        # Read now, not when the synthesis was asked for: a message written while it was being written is one
        # nobody can answer any more (no answer comes after a closing), so the synthesis lists it.
        humans = kept.humans if kept is not None and kept.humans is not None else await tx.human_messages(d.id)
        asked = _people_questions(replace(state, humans=humans), plan.phase)
        text, in_thread = text + asked, in_thread + asked
    if in_thread != text and data is not None and "verdict" in data:
        data = data | {"posted": in_thread}  # the thread's wording, which a refreshed verdict edits in place
    turn.text, turn.data, turn.status, turn.finished_at = text, data, TurnStatus.DONE, now
    await tx.save_turn(turn)
    await tx.enqueue(d.id, turn_post(d, turn, state.persona(plan.persona_key), in_thread, kind, offline), now,
                     turn_key=plan.key)
    for key, asking, options, final in polls:
        await _open_poll(tx, state, key, asking, options, final, now, offline)
    if plan.phase in (Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS):
        await enqueue_document(tx, current or d, plan.key, now)


async def close_polls(tx: Tx, d: Discussion, now: datetime, *, before_round: int, offline: bool,
                      kept: Known | None = None) -> None:
    """Close the polls a new round (or the end) leaves behind; a final poll stays open after DONE. `kept`: see
    `refresh_verdict`. The polls and their ballots are read once, for every poll it closes."""
    polled = await tx.round_ballots(d.id)
    for poll, _ in polled:
        if poll.closed:
            continue
        # A final poll with no deadline closes with the discussion: nobody votes after it.
        ending = d.status == Status.STOPPED or (
            d.status == Status.DONE and (not poll.final or poll.closes_at is None))
        if poll.round >= before_round and not ending:
            continue
        await close_poll(tx, d, poll, now, offline, kept=kept, polled=polled)


async def close_poll(tx: Tx, d: Discussion, poll: Poll, now: datetime, offline: bool, *,
                     kept: Known | None = None, polled: Polled | None = None) -> None:
    """Close a poll and show its tally; a meeting's ranking closes all its places at once and shows the
    people's ranking beside the owners'. `kept`, `polled`: see `refresh_verdict` (the polls closed are among
    `polled`'s, which then reads them closed)."""
    ranking = closings.ranking_of(poll.key)
    if polled is None:
        polled = await tx.round_ballots(d.id)
        poll = next(p for p, _ in polled if p.id == poll.id)
    places = [(p, ballots) for p, ballots in polled
              if (closings.ranking_of(p.key) == ranking if ranking else p.id == poll.id)]
    for p, ballots in places:
        if p.closed:
            continue
        p.closed = True
        await tx.save_poll(p)
        # One event, one message: the poll itself is edited to its closed tally (no second copy below it).
        await tx.enqueue(d.id, poll_post(p, ballots, offline, key=f"{p.key}:closed", replaces=p.key), now)
    # The verdict under the synthesis is edited to its final form first, so the closing restates that one.
    verdict = await refresh_verdict(tx, d, poll, now, offline, kept=kept, polled=polled)
    if ranking:
        state = State(discussion=d, personas=await tx.personas(d.id),
                      turns=kept.ordered() if kept is not None else await tx.turns(d.id))
        owners = meeting.owner_ballots(state)[0]
        firsts = closings.seated_first_choices(state, owners)
        shown = {o.id: o.label for o in meeting.fixed_options(state)}
        await tx.enqueue(d.id, Post(kind="notice", key=f"{ranking}:people", offline=offline,
                                    text=closings.people_beside_owners(owners, closings.people_ballots(places),
                                                                       shown, firsts, verdict)), now)
    elif poll.final and poll.closes_at is not None and verdict is not None:  # it outlived the discussion: restated
        await tx.enqueue(d.id, Post(kind="notice", key=f"{poll.key}:final", offline=offline,
                                    text=f"**Final verdict** (the poll “{poll.question}” is closed): {verdict.text}"),
                         now)
