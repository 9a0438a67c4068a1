"""The one verdict of a synthesis, computed the same way for its post, its refresh, the decision record, the page
and the export (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from core.deliberation import choices, closings, flows, stances
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import fixed_options, owner_ballots
from core.deliberation.stances import Verdict
from core.models import Phase, Turn

LINE = "**Verdict:** "  # how a post shows its one verdict, so a refresh rewrites that line and no other


def of_round(state: State, round_: int, people: list[str]) -> Verdict:
    """A round's verdict: a meeting's final round over every owner's first choice, any other round over its
    stance table; beside the people's choices in that round's polls (`people`, option ids)."""
    if state.discussion.flow == "meeting" and any(t.round == round_ for t in state.done_turns(Phase.RANKED_VOTE)):
        ballots = owner_ballots(state)[0]
        shown = {o.id: o.label for o in fixed_options(state)}
        return stances.judge(closings.seated_first_choices(state, ballots), people, shown)
    carry = flows.get(state.discussion.flow).keeps_stances  # an open floor: who did not speak keeps their stance
    return stances.of_rows(stances.table(state, round_, carry=carry), people, stances.names(state))


def so_far(verdict: Verdict, until: str) -> Verdict:
    """A verdict whose poll is still open: it says it may change, and until when (`until`, as people read it).
    When the poll closes it is restated without this."""
    return Verdict(verdict.kind, verdict.choice, f"{verdict.text} (so far: people can vote until {until})")


def refreshed(text: str, old: str, new: Verdict) -> str:
    """A synthesis's text with its verdict line brought up to date (the text is the bot's own, so the line it
    wrote is found exactly)."""
    return text.replace(f"{LINE}{old}", f"{LINE}{new.text}", 1)


def carries(turn: Turn) -> bool:
    """Whether a finished turn's post carries a verdict that people's votes can change."""
    return turn.phase in (Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS) and bool((turn.data or {}).get("verdict"))


@dataclass(frozen=True)
class Reading:
    """A referee's reading as data, beside the computed verdict."""

    recommends: str  # the id it recommends, one of the options it was given; "" for none (or none readable)
    agrees: bool  # the same kind as the verdict, and no other option than the one the verdict names


def reading(verdict: Verdict, reads: str, recommends: str, options: list[Option]) -> Reading:
    """Compare what a referee says it reads (a verdict's kind) and the option it recommends (an id) with the
    computed verdict: ids and kinds only, never its prose. A recommendation in a split is the referee's own;
    one against the option a consensus or a leaning names disagrees."""
    choice = choices.read(recommends, options)
    rec = choice if choice in {o.id for o in options} else ""
    agrees = reads == verdict.kind and (not verdict.choice or rec in ("", verdict.choice))
    return Reading(recommends=rec, agrees=agrees)
