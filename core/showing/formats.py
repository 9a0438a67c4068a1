"""Text renderings of structured results: posts, synthesis.md, open-questions.md, poll views (pure)."""

from __future__ import annotations

from core.deliberation import choices
from core.deliberation.schemas import CouncilVerdict, FinalSynthesis, RoundSynthesis
from core.models import Ballot, Persona, Poll, PollView
from core.showing.moments import mark


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {i}" for i in items) if items else "- (none)"


def round_synthesis_text(s: RoundSynthesis, round_: int, ids: list[str] | None = None) -> str:
    parts = [
        f"**Round {round_} synthesis.** {s.summary}",
        f"**Agreements**\n{_bullets(s.agreements)}",
        f"**Disagreements**\n{_bullets(s.disagreements)}",
        f"**Insights**\n{_bullets(s.insights)}",
        f"**Open questions**\n{_bullets(s.open_questions)}",
        f"**Suggested next topics**\n{_bullets(s.next_topic_suggestions)}",
    ]
    if s.proposals:
        named = [f"{p} [{ids[i - 1]}]" if ids and i <= len(ids) else p for i, p in enumerate(s.proposals, 1)]
        parts.append("**Proposals to vote on**\n" + "\n".join(f"{i}. {p}" for i, p in enumerate(named, 1)))
    return "\n\n".join(parts)


def final_synthesis_text(s: FinalSynthesis) -> str:
    insights = [
        f"{i.title} ({i.confidence} confidence): {i.description}"
        + (f" Evidence: {'; '.join(i.supporting_evidence)}." if i.supporting_evidence else "")
        + (f" Dissent: {'; '.join(i.dissenting_views)}." if i.dissenting_views else "")
        for i in s.insights
    ]
    agreements = [f"{a.point} (supported by {', '.join(a.supporters) or 'all'})" for a in s.agreements]
    debates = [
        f"{d.topic}: "
        + " vs ".join(f"{p.stance} [{', '.join(p.advocates)}]" for p in d.positions)
        for d in s.unresolved_debates
    ]
    return "\n\n".join(
        [
            f"**Final synthesis.** {s.executive_summary}",
            f"**Insights**\n{_bullets(insights)}",
            f"**Agreements**\n{_bullets(agreements)}",
            f"**Unresolved debates**\n{_bullets(debates)}",
            f"**Open questions**\n{_bullets(s.open_questions)}",
            "**Recommendations**\n" + "\n".join(f"{i}. {r}" for i, r in enumerate(s.recommendations, 1)),
        ]
    )


WITHHELD_SUMMARY = ("_Withheld: the summary's reading disagreed in kind with the recorded stances, so it is not "
                    "shown; the verdict is the recorded stances' (below)._")
WITHHELD = ("_Withheld: the referee's reading disagreed in kind with the advisors' recorded stances, so it is not "
            "shown; the verdict is the advisors' recorded stances' (below)._")


def verdict_text(v: CouncilVerdict, recommends: str = "none", *, agrees: bool = True) -> str:
    """The referee's post. Its one verdict is the computed one, given below it; the referee's reading and its
    recommendation (`recommends`: the option it named, as people read it) are shown only when they agree with
    that verdict in kind, and the recommendation is labelled as the referee's."""
    perspectives = [f"**{p.advisor}**: {p.position} _Evolution:_ {p.evolution}" for p in v.perspectives]
    recommendation = (f"**Referee's recommendation** (the referee's, not the verdict): {recommends} — "
                      f"{v.recommendation}") if agrees else "**Referee's recommendation** withheld, as its reading."
    return "\n\n".join(
        [
            f"**Referee's reading.** {v.verdict if agrees else WITHHELD}",
            f"**Perspectives**\n{_bullets(perspectives)}",
            f"**Agreements**\n{_bullets(v.agreements)}",
            f"**Tensions**\n{_bullets(v.tensions)}",
            recommendation,
            "**Next steps**\n" + "\n".join(f"{i}. {s}" for i, s in enumerate(v.next_steps, 1)),
        ]
    )


def synthesis_markdown(topic: str, s: FinalSynthesis) -> str:
    lines = [f"# Synthesis: {topic}", "", "## Executive summary", "", s.executive_summary, "", "## Insights", ""]
    for i in s.insights:
        lines += [f"### {i.title}", "", f"*Confidence: {i.confidence}*", "", i.description, ""]
        if i.supporting_evidence:
            lines += ["Supporting evidence:", *[f"- {e}" for e in i.supporting_evidence], ""]
        if i.dissenting_views:
            lines += ["Dissenting views:", *[f"- {e}" for e in i.dissenting_views], ""]
    lines += ["## Agreements", ""]
    lines += [f"- {a.point} — supporters: {', '.join(a.supporters)}" for a in s.agreements] or ["- (none)"]
    lines += ["", "## Unresolved debates", ""]
    for d in s.unresolved_debates:
        lines += [f"### {d.topic}", ""]
        for p in d.positions:
            lines.append(f"- **{p.stance}** ({', '.join(p.advocates)}): {'; '.join(p.arguments)}")
        lines.append("")
    lines += ["## Open questions", "", *[f"- {q}" for q in s.open_questions], "", "## Recommendations", ""]
    lines += [f"{i}. {r}" for i, r in enumerate(s.recommendations, 1)]
    return "\n".join(lines) + "\n"


def people_questions(asked: list[tuple[str, str]], limit: int = 10) -> str:
    """People's messages nobody answered, as the synthesis's open questions from people ("" when none)."""
    if not asked:
        return ""
    lines = [f"- {who}: {' '.join(text.split())[:300]}" for who, text in asked[-limit:]]
    more = f"\n- …and {len(asked) - limit} earlier" if len(asked) > limit else ""
    return "\n\n**Open questions from people** (left unanswered)\n" + "\n".join(lines) + more


def roster_text(personas: list[Persona]) -> str:
    return "\n".join(f"{p.icon} **{p.name}** — {p.title}" + (f" · `{p.model}`" if p.model else "") for p in personas)


def poll_view(poll: Poll, ballots: list[Ballot]) -> PollView:
    live = [b for b in ballots if not b.superseded]
    humans = [b for b in live if not b.is_ai]
    counts = [sum(1 for b in humans if b.choice == i) for i in range(len(poll.options))]
    voters = [[b.voter_name for b in humans if b.choice == i] for i in range(len(poll.options))]
    ai = [[b.voter_name for b in live if b.is_ai and b.choice == i] for i in range(len(poll.options))]
    hidden = poll.hide_results and not poll.closed
    return PollView(
        poll_id=poll.id,
        final=poll.final,
        question=poll.question,
        options=poll.options,
        option_ids=poll.option_ids,
        counts=None if hidden else counts,
        voters=None if (poll.anonymous or hidden) else voters,
        ai_positions=ai,
        closed=poll.closed,
        total=len(humans),
        closes_at=poll.closes_at,
    )


def shown(view: PollView, i: int) -> str:
    """A poll's option as the verdict names it: its label with its id (a poll from before ids: its label)."""
    ids = view.option_ids
    return f"{view.options[i]} [{ids[i]}]" if i < len(ids) and choices.ID.match(ids[i]) else view.options[i]


def poll_text(view: PollView) -> str:
    head = f"**{'Poll closed' if view.closed else 'Vote'}: {view.question}**"
    lines = [head]
    for i in range(len(view.options)):
        line = f"{i + 1}. {shown(view, i)}"
        if view.counts is not None:
            line += f" — {view.counts[i]} vote{'s' if view.counts[i] != 1 else ''}"
            if view.voters and view.voters[i]:
                line += f" ({', '.join(view.voters[i])})"
        if view.ai_positions and view.ai_positions[i]:  # the personas the verdict counts, open or closed
            line += f" · personas: {', '.join(view.ai_positions[i])}"
        lines.append(line)
    if view.counts is None:
        lines.append(f"_{view.total} ballot{'s' if view.total != 1 else ''} cast; results shown when the poll closes._")
    if not view.closed and view.closes_at is not None:
        lines += ["", f"_Open until {mark(view.closes_at, 'UTC')}, unless the starter or an admin closes it sooner._"]
    return "\n".join(lines)
