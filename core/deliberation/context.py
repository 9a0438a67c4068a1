"""What one model call reads of a long discussion (pure): the last rounds verbatim, earlier rounds as their syntheses,
and every human message not yet answered or summarised, so a call's prompt stays bounded however old the
discussion is."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from core.deliberation.flows.base import State
from core.models import FINISHED_TURN, HumanMessage, Phase, Turn, TurnStatus

SUMMARIES = (Phase.ROUND_SYNTHESIS, Phase.RESUME_SUMMARY)
# Condensed rounds shown by their synthesis, newest last. Each synthesis was written with the ones before it in
# view, so the last few carry the thread of the whole discussion; older ones stay in the record and the export.
KEPT_SYNTHESES = 3
FINAL_SYNTHESES = 12  # the final synthesis looks further back, still a fixed number of rounds


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
