"""PNG charts drawn with matplotlib's Agg canvas: the latest vote (personas beside people), stances per round, or
where the personas stand in their own words.

Each chart comes with alt text that says in words what it shows."""

from __future__ import annotations

import functools
import io
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from core.models import Ballot, Poll
from core.showing.chart_material import ChartMaterial

AI_COLOUR, PEOPLE_COLOUR = "#5865F2", "#F0A030"
STANCE_COLOURS = ["#4E79A7", "#F28E2B", "#59A14F", "#E15759", "#B07AA1"]
LABEL_CHARS = 38


def draw(material: ChartMaterial) -> list[Any]:
    """The charts there is material for (none, one or both), as PostFiles."""
    from core.models import PostFile

    files = []
    if material.poll is not None:
        ai, people = tallies(material.poll, material.ballots)
        poll = material.poll  # each option with its id, as the verdict names it
        shown = tuple(f"{o} [{i}]" for o, i in zip(poll.options, poll.option_ids, strict=False)) or tuple(poll.options)
        png, alt = _vote_png(poll.question, shown, tuple(ai), tuple(people))
        files.append(PostFile(name="vote.png", data=png, alt=alt, title=f"Vote: {material.poll.question}"[:200]))
    if material.stances:
        png, alt = _stance_png(_frozen(material.stances), _frozen(material.proposals))
        files.append(PostFile(name="stances.png", data=png, alt=alt, title="Stances per persona across rounds"))
    elif material.positions:
        png, alt = _positions_png(material.positions_round, tuple(material.positions.items()))
        files.append(PostFile(name="stances.png", data=png, alt=alt,
                              title=f"Stances after round {material.positions_round}"))
    return files


# A picture is a pure function of what it shows, and drawing one costs a tenth of a second of CPU: a synthesis sent
# again (a retry, a takeover, a restart) or another discussion that ended alike reuses the bytes. Keys are tuples of
# exactly what is drawn, so two charts that would differ never share an entry.
_DRAWN = 64


def _frozen(by_round: dict[int, Any]) -> tuple[tuple[int, Any], ...]:
    return tuple((r, tuple(v.items()) if isinstance(v, dict) else tuple(v)) for r, v in sorted(by_round.items()))


@functools.lru_cache(maxsize=_DRAWN)
def _vote_png(question: str, options: tuple[str, ...], ai: tuple[int, ...],
              people: tuple[int, ...]) -> tuple[bytes, str]:
    fig, alt = _vote_figure(question, list(options), list(ai), list(people))
    return _png(fig), alt


@functools.lru_cache(maxsize=_DRAWN)
def _stance_png(stances: tuple[tuple[int, Any], ...], proposals: tuple[tuple[int, Any], ...]) -> tuple[bytes, str]:
    return stance_chart({r: dict(by) for r, by in stances}, {r: list(labels) for r, labels in proposals})


@functools.lru_cache(maxsize=_DRAWN)
def _positions_png(round_: int, positions: tuple[tuple[str, int], ...]) -> tuple[bytes, str]:
    return positions_chart(round_, dict(positions))


def positions_chart(round_: int, positions: dict[str, int]) -> tuple[bytes, str]:
    """Horizontal bars, one per stance label: how many personas hold it after the round."""
    labels = list(positions)
    fig = Figure(figsize=(7.5, 1.2 + 0.5 * len(labels)))
    ax = fig.add_subplot()
    rows = list(range(len(labels)))[::-1]
    ax.barh(rows, [positions[label] for label in labels], height=0.5, color=AI_COLOUR)
    ax.set_yticks(rows, [_short(label) for label in labels])
    ax.set_xlabel("personas")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"Where the council stands after round {round_}", loc="left")
    ax.spines[["top", "right"]].set_visible(False)
    words = "; ".join(f"{label}: {n} persona{'s' * (n != 1)}" for label, n in positions.items())
    return _png(fig), f"Bar chart of the personas' stances after round {round_}. {words}."


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def tallies(poll: Poll, ballots: list[Ballot]) -> tuple[list[int], list[int]]:
    """(personas, people) per option, current ballots only."""
    ai, people = [0] * len(poll.options), [0] * len(poll.options)
    for b in ballots:
        if not b.superseded and 0 <= b.choice < len(poll.options):
            (ai if b.is_ai else people)[b.choice] += 1
    return ai, people


def vote_chart(poll: Poll, ballots: list[Ballot]) -> tuple[bytes, str]:
    fig, alt = vote_figure(poll, ballots)
    return _png(fig), alt


def vote_figure(poll: Poll, ballots: list[Ballot]) -> tuple[Figure, str]:
    """Horizontal bars, one pair per option: the personas' ballots and the people's side by side."""
    ai, people = tallies(poll, ballots)
    return _vote_figure(poll.question, poll.options, ai, people)


def _vote_figure(question: str, options: list[str], ai: list[int], people: list[int]) -> tuple[Figure, str]:
    n = len(options)
    fig = Figure(figsize=(7.5, 1.2 + 0.7 * n))
    ax = fig.add_subplot()
    rows = list(range(n))[::-1]
    ax.barh([r + 0.18 for r in rows], ai, height=0.36, color=AI_COLOUR, label="Personas")
    ax.barh([r - 0.18 for r in rows], people, height=0.36, color=PEOPLE_COLOUR, label="People")
    ax.set_yticks(rows, [_short(o) for o in options])
    ax.set_xlabel("ballots")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(_short(question), loc="left")
    ax.legend(loc="lower right", frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    words = "; ".join(f"{o}: {a} persona{'s' * (a != 1)}, {p} {'person' if p == 1 else 'people'}"
                      for o, a, p in zip(options, ai, people, strict=True))
    return fig, f"Bar chart of the vote “{question}”. {words}."


def stance_chart(stances: dict[int, dict[str, int]],
                 proposals: dict[int, list[str]] | None = None) -> tuple[bytes, str]:
    def _id_of(r: int, choice: int) -> str:  # a cell shows the option's id, as its label ends ("Cut scope [O2]")
        labels = (proposals or {}).get(r, [])
        label = labels[choice - 1] if 0 < choice <= len(labels) else ""
        return label.rsplit("[", 1)[1].rstrip("]") if label.endswith("]") and "[" in label else f"P{choice}"

    """A grid: one row per persona, one column per round, each cell the proposal that persona backed; its words
    name each option by its label where the round's poll gives it (a council's For / Against is no "proposal 2")."""
    rounds = sorted(stances)
    names = sorted({name for by in stances.values() for name in by})
    fig = Figure(figsize=(1.8 + 1.0 * len(rounds), 0.9 + 0.45 * len(names)))
    ax = fig.add_subplot()
    for x, r in enumerate(rounds):
        for y, name in enumerate(names):
            choice = stances[r].get(name)
            if choice is None:
                continue
            colour = STANCE_COLOURS[(choice - 1) % len(STANCE_COLOURS)]
            ax.add_patch(_cell(x, y, colour))
            ax.text(x, y, _id_of(r, choice), ha="center", va="center", color="white", fontsize=9, weight="bold")
    ax.set_xlim(-0.5, len(rounds) - 0.5)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xticks(range(len(rounds)), [f"round {r}" for r in rounds])
    ax.set_yticks(range(len(names)), [_short(n) for n in names])
    ax.set_title("Which option each persona chose", loc="left")
    ax.spines[:].set_visible(False)
    ax.tick_params(length=0)
    def named(r: int, choice: int) -> str:
        labels = (proposals or {}).get(r, [])
        return f"“{labels[choice - 1]}”" if 0 < choice <= len(labels) else f"proposal {choice}"

    words = "; ".join(f"{name}: " + ", ".join(f"round {r} {named(r, stances[r][name])}" for r in rounds
                                              if name in stances[r]) for name in names)
    return _png(fig), f"Grid of stances per persona across rounds. {words}."


def _cell(x: float, y: float, colour: str) -> Any:
    from matplotlib.patches import FancyBboxPatch

    return FancyBboxPatch((x - 0.42, y - 0.38), 0.84, 0.76, boxstyle="round,pad=0.02", color=colour)


def digest_files(votes: list[tuple[str, Any]]) -> list[Any]:
    """For a digest: each discussion's latest vote (topic, PollView), personas beside people, in one picture."""
    from core.models import PostFile

    shown = [(topic, v) for topic, v in votes if v.counts is not None][:4]
    if not shown:
        return []
    fig = Figure(figsize=(7.5, sum(1.0 + 0.55 * len(v.options) for _, v in shown)))
    axes = fig.subplots(len(shown), 1, squeeze=False)
    words = []
    for ax, (topic, v) in zip(axes[:, 0], shown, strict=True):
        ai = [len(names) for names in v.ai_positions] if v.ai_positions else [0] * len(v.options)
        people = list(v.counts)
        rows = list(range(len(v.options)))[::-1]
        ax.barh([r + 0.18 for r in rows], ai, height=0.36, color=AI_COLOUR, label="Personas")
        ax.barh([r - 0.18 for r in rows], people, height=0.36, color=PEOPLE_COLOUR, label="People")
        ax.set_yticks(rows, [_short(o) for o in v.options])
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(_short(topic), loc="left", fontsize=10)
        ax.spines[["top", "right"]].set_visible(False)
        words.append(f"{topic}: " + ", ".join(f"{o} {a} persona(s) and {p} people"
                                              for o, a, p in zip(v.options, ai, people, strict=True)))
    axes[0, 0].legend(loc="lower right", frameon=False)
    alt = "Bar charts of the latest vote in each discussion. " + "; ".join(words) + "."
    return [PostFile(name="digest-votes.png", data=_png(fig), alt=alt, title="Latest votes")]
