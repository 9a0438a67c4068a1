"""A finished discussion's decision record: what was decided, the stances, the people's vote, the link."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from core.deliberation import closings, flows, stances, tally
from core.deliberation.flows.base import State
from core.deliberation.schemas import CouncilVerdict, FinalSynthesis, MeetingRecommendation
from core.models import Decision, Discussion, Phase
from core.running.effects import people_ballots
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
            ranked = tally.tally(closings.owner_ballots(state)[0])
            steps = MeetingRecommendation.model_validate(data).next_steps if data else []
            ranking = "; ".join(f"{i}. {t.item}" for i, t in enumerate(ranked[:3], 1))
            return _cut(f"Ranking: {ranking or 'no votes'}." + (f" Next: {'; '.join(steps[:2])}." if steps else ""))
        if state.discussion.flow == "council" and data:
            verdict = CouncilVerdict.model_validate(data)
            return _cut(f"{verdict.recommendation} {verdict.verdict}")
        if data:
            fs = FinalSynthesis.model_validate(data)
            recs = "; ".join(fs.recommendations[:3])
            return _cut(f"{fs.executive_summary}" + (f" Recommended: {recs}." if recs else ""))
    except ValidationError:
        pass
    return _cut(final.text if final is not None else "Finished without a final synthesis.")


def people_counts(chosen: list[str]) -> dict[str, int]:
    return dict(Counter(chosen).most_common())


def decision_of(state: State, people: list[str], link: str, now: datetime) -> Decision:
    d: Discussion = state.discussion
    rows = stances.table(state, d.round, carry=flows.get(d.flow).keeps_stances)
    return Decision(
        discussion_id=d.id, platform=d.platform, workspace=d.workspace, channel=d.channel, topic=d.topic,
        flow=d.flow, decided=decided(state),
        verdict=stances.verdict([r.label for r in rows], people) if rows else "",
        stances=[{"persona": r.persona, "label": r.label or "undecided", "stance": r.stance[:200]} for r in rows],
        people=people_counts(people), link=link, decided_at=now, private=d.options.private,
    )


async def record_decision(tx: Tx, state: State, people: list[str], link: str, now: datetime) -> None:
    """Written in the transaction that marks the discussion done (once: a re-run finds it)."""
    await tx.add_decision(decision_of(state, people, link, now))


async def refresh_people(tx: Tx, discussion_id: str) -> None:
    """People vote on the final poll after the record is written: their vote in the record follows it, and so
    does the verdict that counts them (a hidden poll's votes arrive when it closes)."""
    d = await tx.discussion(discussion_id)
    record = await tx.decision_of(discussion_id)
    if d is None or record is None:
        return
    people = await people_ballots(tx, discussion_id, d.round)  # the final poll is the last round's
    labels = [s.get("label", "") for s in record.stances]
    await tx.set_decision_people(discussion_id, people_counts(people),
                                 stances.verdict(labels, people) if labels else record.verdict)
