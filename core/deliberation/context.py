"""What one model call reads of a long discussion (pure): the last rounds verbatim, earlier rounds as their syntheses,
and the people's messages not yet answered or summarised within a size budget, so a call's prompt stays bounded
however old the discussion is and however many replies people write."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core.deliberation.flows.base import State
from core.deliberation.quoting import quote
from core.models import FINISHED_TURN, HumanMessage, Phase, Turn, TurnStatus

SUMMARIES = (Phase.ROUND_SYNTHESIS, Phase.RESUME_SUMMARY)
# Condensed rounds shown by their synthesis, newest last. Each synthesis was written with the ones before it in
# view, so the last few carry the thread of the whole discussion; older ones stay in the record and the export.
KEPT_SYNTHESES = 3
FINAL_SYNTHESES = 12  # the final synthesis looks further back, still a fixed number of rounds
# People's messages in one prompt, in characters as the prompt holds them (quoted, escaped, notes included): a
# prompt is read by every turn of a round, so a thread flood would otherwise be paid for many times over.
PEOPLE_CHARS = 24_000
PERSON_CHARS = 8_400  # one person's share (two full messages, quoted): one voice cannot crowd out the rest
MIN_CUT = 400  # less room than this: the message is left out (and counted in the note), not cut to a stub
NOTE_ROOM = 200  # kept free for the one note that counts the messages left out


@dataclass
class Window:
    condensed: list[Turn]  # syntheses of rounds before the window, oldest first
    turns: list[Turn]  # finished turns of the rounds in the window, verbatim
    humans: list[HumanMessage]  # messages written since the condensed rounds ended, or still owed an answer
    # The final synthesis only: rounds older than the condensed ones, by their synthesis's one-line summary, so it
    # sees every round (a line per round: a year of daily rounds is about 20,000 words).
    outline: list[Turn] = field(default_factory=list)


def unanswered(state: State, *, since: datetime | None = None) -> list[HumanMessage]:
    """People's messages no turn answered (an answer that failed or was skipped does not count), written after
    `since` when given: a synthesis lists them as open questions."""
    answered = {t.reply_to for t in state.turns if t.reply_to is not None and t.text
                and t.status in (TurnStatus.DONE, TurnStatus.PUBLISHED)}
    return [m for m in state.humans if m.id not in answered and (since is None or m.created_at > since)]


def flooding(state: State, rounds: int, author_id: str) -> bool:
    """Whether the prompts now cut or leave out this person's messages for writing more than their share."""
    return author_id in heard(window(state, rounds).humans).over_share


def window(state: State, rounds: int, *, final: bool = False) -> Window:
    """The window depends only on the discussion's current round, so within a round every prompt starts with
    the same condensed history (a stable prefix for the prompt cache)."""
    first = state.discussion.round - max(1, rounds) + 1  # the oldest round read verbatim
    done = [t for t in state.turns if t.status in FINISHED_TURN and t.text]
    older = [t for t in done if t.round < first]
    summaries = sorted((t for t in older if t.phase in SUMMARIES), key=lambda t: (t.round, t.step))
    kept = summaries[-(FINAL_SYNTHESES if final else KEPT_SYNTHESES):]
    outline = [t for t in summaries[:len(summaries) - len(kept)] if t.phase == Phase.ROUND_SYNTHESIS] if final else []
    # The condensed rounds ended when the last of their turns finished: what people wrote before then is in
    # those rounds' syntheses, unless it still waits for its answer.
    ended = max((t.finished_at or t.created_at for t in older), default=None)
    humans = [m for m in state.humans
              if ended is None or m.created_at > ended or (m.needs_answer and not m.answered)]
    return Window(condensed=kept, turns=[t for t in done if t.round >= first], humans=humans, outline=outline)


@dataclass(frozen=True)
class Heard:
    """The people's messages as one prompt reads them: (when, text) blocks in time order, and the people whose
    messages were cut or left out because they wrote more than one person's share."""

    blocks: list[tuple[datetime, str]]
    over_share: frozenset[str]


def human_block(m: HumanMessage) -> str:
    return quote("human", m.text, name=m.author_name)


def _cut(m: HumanMessage, room: int) -> str | None:
    """The longest beginning of the message whose block, with its note, fits `room` (None: not even a stub)."""
    if room < MIN_CUT:
        return None
    note = f"\n(cut here: the rest of this message, {len(m.text):,} characters in all, is over what this prompt reads)"

    def block(limit: int) -> str:
        return quote("human", m.text, limit=limit, name=m.author_name) + note

    low, high = 0, len(m.text)  # the largest limit whose block fits: a block grows with its limit
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if len(block(mid)) <= room else (low, mid - 1)
    return block(low) if low >= MIN_CUT // 2 else None


def heard(humans: list[HumanMessage], budget: int = PEOPLE_CHARS, share: int = PERSON_CHARS) -> Heard:
    """The newest message in full; then those still owed an answer, then the rest, newest first, each in full or
    cut with a note while the budget and its writer's share last; the rest left out, counted in one note. So the
    people's part of a prompt never passes `budget`, whatever sequence of replies came before."""
    if not humans:
        return Heard([], frozenset())
    ordered = sorted(humans, key=lambda m: (m.created_at, m.id))
    newest, older = ordered[-1], ordered[:-1]
    first = human_block(newest)
    if len(first) > budget - NOTE_ROOM:  # only a message past the entry limit: cut like any other
        first = _cut(newest, budget - NOTE_ROOM) or ""
    left, used = budget - NOTE_ROOM - len(first), {newest.author_id: len(first)}
    # (when, which message, text): messages written in the same second stay in the order they were written
    blocks = [(newest.created_at, newest.id, first)] if first else []
    over: set[str] = set()
    out: list[HumanMessage] = []
    for m in sorted(older, key=lambda m: (not (m.needs_answer and not m.answered), -m.created_at.timestamp(), -m.id)):
        own = share - used.get(m.author_id, 0)
        text = human_block(m)
        if len(text) > min(left, own):
            if own < left:
                over.add(m.author_id)
            text = _cut(m, min(left, own)) or ""
        if not text:
            out.append(m)
            continue
        blocks.append((m.created_at, m.id, text))
        left -= len(text)
        used[m.author_id] = used.get(m.author_id, 0) + len(text)
    if out:
        writers = len({m.author_id for m in out})
        note = (f"({len(out)} earlier message{'s' if len(out) != 1 else ''} by {writers} "
                f"{'people' if writers != 1 else 'person'} in the thread {'are' if len(out) != 1 else 'is'} left "
                "out of this prompt: it reads a bounded part of the thread, the newest in full.)")
        blocks.append((min(m.created_at for m in out), 0, note))
    blocks.sort()  # by time, then by message: (when, id) is never repeated
    return Heard([(when, text) for when, _, text in blocks], frozenset(over))
