"""A finished discussion's decision record: what was decided, the stances, the people's vote, the link."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import ValidationError

from core.deliberation import flows, stances, tally, verdicts
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import fixed_options, owner_ballots
from core.deliberation.schemas import CouncilVerdict, FinalSynthesis, MeetingRecommendation
from core.models import Decision, Discussion, Phase
from core.running.effects import people_counts
from core.showing import deadlines
from core.storage.store import Tx

DECIDED_CHARS = 1200


def _cut(text: str, limit: int = DECIDED_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def decided(state: State) -> str:
    """What the discussion decided, in a few sentences, from its final synthesis's structured output."""
    final = next((t for t in reversed(state.done_turns(Phase.FINAL_SYNTHESIS)) if t.data), None)
    data: dict[str, Any] = final.data if final is not None and final.data else {}
    try:
        if state.discussion.flow == "meeting":
            ranked = tally.tally(owner_ballots(state)[0])
            shown = {o.id: o.label for o in fixed_options(state)}
            steps = MeetingRecommendation.model_validate(data).next_steps if data else []
            ranking = "; ".join(f"{i}. {shown.get(t.item, t.item)}" for i, t in enumerate(ranked[:3], 1))
            return _cut(f"Ranking: {ranking or 'no votes'}." + (f" Next: {'; '.join(steps[:2])}." if steps else ""))
        if state.discussion.flow == "council" and data:
            verdict = CouncilVerdict.model_validate(data)  # its `verdict` is the computed one, kept in its place
            withheld = bool(data.get("withheld"))  # a reading that disagreed with the verdict is not recorded
            return _cut(verdict.verdict if withheld else f"{verdict.recommendation} {verdict.verdict}")
        if data:
            fs = FinalSynthesis.model_validate(data)
            recs = "; ".join(fs.recommendations[:3])
            return _cut(f"{fs.executive_summary}" + (f" Recommended: {recs}." if recs else ""))
    except ValidationError:
        pass
    return _cut(final.text if final is not None else "Finished without a final synthesis.")


def decision_of(state: State, people: list[str], link: str, now: datetime, until: datetime | None = None
                ) -> Decision:
    """The record of a finished discussion; `until`: its final poll's deadline while people can still vote (the
    verdict then says "so far", and is restated when the poll closes)."""
    d: Discussion = state.discussion
    rows = stances.table(state, d.round, carry=flows.get(d.flow).keeps_stances)
    return Decision(
        discussion_id=d.id, platform=d.platform, workspace=d.workspace, channel=d.channel, topic=d.topic,
        flow=d.flow, decided=decided(state),
        verdict=deadlines.said(d, verdicts.of_round(state, d.round, people), until).text if rows else "",
        stances=[{"persona": r.persona, "label": r.label or "undecided", "stance": r.stance[:200]} for r in rows],
        people=people_counts(people, stances.names(state)), link=link, decided_at=now, private=d.options.private,
    )


async def record_decision(tx: Tx, state: State, people: list[str], link: str, now: datetime) -> None:
    """Written in the transaction that marks the discussion done (once: a re-run finds it)."""
    until = deadlines.open_until(await tx.polls(state.discussion.id))
    await tx.add_decision(decision_of(state, people, link, now, until))
