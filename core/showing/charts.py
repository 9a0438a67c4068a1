"""PNG charts drawn with matplotlib's Agg canvas: the latest vote (personas beside people), and each persona's
choice round by round.

Each chart names options as people read them (the label with its id), wraps long words instead of cutting them,
and comes with alt text that says in words what it shows."""

from __future__ import annotations

import functools
import io
import textwrap
from typing import Any

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch, Patch
from matplotlib.ticker import MaxNLocator

from core.deliberation import choices
from core.models import Ballot, Poll, PostFile
from core.showing.chart_material import ChartMaterial, Grid

AI_COLOUR, PEOPLE_COLOUR = "#5865F2", "#F0A030"
STANCE_COLOURS = ["#4E79A7", "#F28E2B", "#59A14F", "#E15759", "#B07AA1", "#76B7B2", "#EDC948", "#9C755F"]
UNDECIDED_COLOUR = "#D9D9D9"
TITLE_CHARS = 60  # a title's line on a chart 7.5 inches wide (about 8 characters an inch)
LABEL_CHARS = 30  # an option's line beside its bars
LEGEND_CHARS = 48
EMPTY = "No votes yet"
# Topics, options and names are people's words: a `$` in them is a price, never a formula (and an unpaired one
# failed the whole chart). Read as each text is made; this module is the process's only drawer.
matplotlib.rcParams["text.parse_math"] = False


def draw(material: ChartMaterial) -> list[PostFile]:
    """The charts there is material for (none, one or both)."""
    files = []
    if material.poll is not None:
        ai, people = tallies(material.poll, material.ballots)
        # The personas' side counts who the verdict counts: those undecided cast no ballot, and are said so.
        undecided = material.grid.undecided(material.poll.round) if any(ai) else 0
        png, alt = _vote_png(material.poll.question, options_shown(material.poll), tuple(ai), tuple(people),
                             undecided)
        files.append(PostFile(name="vote.png", data=png, alt=alt, title=f"Vote: {material.poll.question}"[:200]))
    if material.grid:
        png, alt = _stance_png(shown_grid(material.grid))
        files.append(PostFile(name="stances.png", data=png, alt=alt, title="Each persona's choice, round by round"))
    return files


def shown_grid(grid: Grid) -> Grid:
    """The grid as its picture shows it: the names of the options its cells hold, no others. The final synthesis
    lists options no persona chose; with them in the key, its charts drawn ahead (before it listed them) missed the
    cache at its post and the same picture was drawn twice."""
    held = {c for row in grid.cells for c in row}
    return Grid(rounds=grid.rounds, personas=grid.personas, cells=grid.cells,
                names=tuple((k, v) for k, v in grid.names if k in held))


def options_shown(poll: Poll) -> tuple[str, ...]:
    """Each option as the verdict names it, its label with its id (a poll opened before ids were kept: its label)."""
    ids = poll.option_ids
    return tuple(f"{o} [{ids[i]}]" if i < len(ids) else o for i, o in enumerate(poll.options))


# A picture is a pure function of what it shows, and drawing one costs a tenth of a second of CPU: a synthesis sent
# again (a retry, a takeover, a restart) or another discussion that ended alike reuses the bytes. Keys are exactly
# what is drawn, so two charts that would differ never share an entry.
_DRAWN = 64
# A stance grid drawn ahead of the final synthesis is the same picture at its post, seconds to a minute later, when
# as many discussions as run at once may have drawn theirs meanwhile: room for all of them (about 40 KB each).
_STANCES = 512


@functools.lru_cache(maxsize=_DRAWN)
def _vote_png(question: str, options: tuple[str, ...], ai: tuple[int, ...], people: tuple[int, ...],
              undecided: int = 0) -> tuple[bytes, str]:
    fig = _vote_figure(question, list(options), list(ai), list(people), undecided)
    return _png(fig), _vote_alt(question, options, ai, people, undecided)


@functools.lru_cache(maxsize=_STANCES)
def _stance_png(grid: Grid) -> tuple[bytes, str]:
    return _png(stance_figure(grid)), stance_alt(grid)


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


def wrap(text: str, width: int) -> str:
    """Words on as many lines as they need: nothing is cut."""
    return textwrap.fill(" ".join(text.split()), width, break_long_words=True) or text


def tallies(poll: Poll, ballots: list[Ballot]) -> tuple[list[int], list[int]]:
    """(personas, people) per option, current ballots only."""
    ai, people = [0] * len(poll.options), [0] * len(poll.options)
    for b in ballots:
        if not b.superseded and 0 <= b.choice < len(poll.options):
            (ai if b.is_ai else people)[b.choice] += 1
    return ai, people


def vote_figure(poll: Poll, ballots: list[Ballot], undecided: int = 0) -> tuple[Figure, str]:
    """Horizontal bars, one pair per option: the personas' ballots and the people's side by side; `undecided`:
    the counted personas who cast none."""
    ai, people = tallies(poll, ballots)
    shown = options_shown(poll)
    return (_vote_figure(poll.question, list(shown), ai, people, undecided),
            _vote_alt(poll.question, shown, ai, people, undecided))


def _vote_figure(question: str, options: list[str], ai: list[int], people: list[int], undecided: int = 0) -> Figure:
    labels = [wrap(o, LABEL_CHARS) for o in options]
    lines = sum(label.count("\n") + 1 for label in labels)
    fig = Figure(figsize=(7.5, 1.2 + 0.2 * lines + 0.25 * len(options)))
    bars(fig.add_subplot(), labels, ai, people, title=wrap(question, TITLE_CHARS), undecided=undecided)
    return fig


def bars(ax: Any, labels: list[str], ai: list[int], people: list[int], *, title: str, size: float = 12,
         undecided: int = 0) -> None:
    """One vote on one axes: a pair of bars per option, a legend saying which is which, and a clear empty state
    when nobody has voted (no axis of fractions around zero)."""
    rows = list(range(len(labels)))[::-1]
    ax.barh([r + 0.18 for r in rows], ai, height=0.36, color=AI_COLOUR, label="Personas")
    ax.barh([r - 0.18 for r in rows], people, height=0.36, color=PEOPLE_COLOUR, label="People")
    ax.set_yticks(rows, labels, fontsize=9)
    ax.set_title(title, loc="left", fontsize=size)
    ax.spines[["top", "right"]].set_visible(False)
    if not any(ai) and not any(people):
        ax.set_xlim(0, 1)
        ax.set_xticks([])
        ax.text(0.5, 0.5, EMPTY, transform=ax.transAxes, ha="center", va="center", color="#555555", fontsize=11)
        return
    ax.set_xlabel("ballots", fontsize=9)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    handles, _ = ax.get_legend_handles_labels()
    if undecided:
        handles.append(Patch(facecolor="none", edgecolor="none",
                             label=f"{undecided} persona{'s' * (undecided != 1)} undecided (no ballot)"))
    ax.legend(handles=handles, loc="lower right", frameon=False, fontsize=9)


def _vote_alt(question: str, options: tuple[str, ...] | list[str], ai: tuple[int, ...] | list[int],
              people: tuple[int, ...] | list[int], undecided: int = 0) -> str:
    if not any(ai) and not any(people):
        return f"Bar chart of the vote “{question}”: no votes yet."
    words = "; ".join(f"{o}: {a} persona{'s' * (a != 1)}, {p} {'person' if p == 1 else 'people'}"
                      for o, a, p in zip(options, ai, people, strict=True))
    aside = f" {undecided} persona{'s' * (undecided != 1)} undecided, with no ballot." if undecided else ""
    return f"Bar chart of the vote “{question}”. {words}.{aside}"


def _shown(choice: str, names: dict[str, str]) -> str:
    return choices.show(choice, names) if choice in names else choice.capitalize()


def _colours(grid: Grid) -> dict[str, str]:
    """One colour per choice, the same in every round (options in the order of their ids); undecided is grey."""
    seen = {c for row in grid.cells for c in row if c != choices.UNDECIDED}
    order = sorted(seen, key=lambda c: (not choices.ID.match(c), int(c[1:]) if choices.ID.match(c) else 0, c))
    out = {c: STANCE_COLOURS[i % len(STANCE_COLOURS)] for i, c in enumerate(order)}
    undecided = any(c == choices.UNDECIDED for row in grid.cells for c in row)
    return out | ({choices.UNDECIDED: UNDECIDED_COLOUR} if undecided else {})


def _row_label(name: str, counted: bool) -> str:
    return name if counted else f"{name}\n(shown, not counted)"


def stance_figure(grid: Grid) -> Figure:
    """A grid: one row per seated persona, one column per round, each cell the option that persona chose (its
    id in the cell, its name in the legend); undecided cells are grey and say so."""
    names, colours = dict(grid.names), _colours(grid)
    n, m = len(grid.personas), len(grid.rounds)
    fig = Figure(figsize=(max(6.5, 2.6 + 1.1 * m), 1.6 + 0.5 * n + 0.28 * len(colours)))
    ax = fig.add_subplot()
    for y, row in enumerate(grid.cells):
        for x, choice in enumerate(row):
            ax.add_patch(FancyBboxPatch((x - 0.42, y - 0.38), 0.84, 0.76, boxstyle="round,pad=0.02",
                                        color=colours[choice]))
            undecided = choice == choices.UNDECIDED
            ax.text(x, y, "undecided" if undecided else choice if choices.ID.match(choice) else choice.capitalize(),
                    ha="center", va="center", color="#333333" if undecided else "white",
                    fontsize=8 if undecided else 9, weight="normal" if undecided else "bold")
    ax.set_xlim(-0.5, m - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xticks(range(m), [f"round {r}" for r in grid.rounds])
    ax.set_yticks(range(n), [_row_label(name, counted) for name, counted in grid.personas])
    counted = sum(1 for _, c in grid.personas if c)
    # The title starts where the cells do, right of the names: it wraps within the width left to it.
    ax.set_title(wrap("Each persona's choice, round by round", int(7 * (fig.get_figwidth() - 2.2))), loc="left")
    ax.spines[:].set_visible(False)
    ax.tick_params(length=0)
    handles = [Patch(color=colour, label=wrap(_shown(c, names) if c != choices.UNDECIDED else "Undecided",
                                               LEGEND_CHARS)) for c, colour in colours.items()]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(0, -0.04), frameon=False, fontsize=9,
              title=f"{counted} persona{'s' * (counted != 1)} counted in the verdict", title_fontsize=9,
              alignment="left")
    return fig


def stance_alt(grid: Grid) -> str:
    names = dict(grid.names)

    def said(choice: str) -> str:
        return "undecided" if choice == choices.UNDECIDED else f"“{_shown(choice, names)}”"

    rows = [f"{name}{'' if counted else ' (shown, not counted)'}: "
            + ", ".join(f"round {r} {said(c)}" for r, c in zip(grid.rounds, cells, strict=True))
            for (name, counted), cells in zip(grid.personas, grid.cells, strict=True)]
    counted = sum(1 for _, c in grid.personas if c)
    return (f"Grid of each persona's choice, round by round; {counted} personas counted in the verdict. "
            + "; ".join(rows) + ".")


def digest_files(votes: list[tuple[str, Any]]) -> list[PostFile]:
    """For a digest: each discussion's latest vote (topic, PollView), personas beside people, in one picture."""
    shown = [(topic, v) for topic, v in votes if v.counts is not None][:4]
    if not shown:
        return []
    fig = digest_figure(shown)
    words = []
    for topic, v in shown:
        ai, people = _digest_counts(v)
        words.append(f"{topic}: " + ("no votes yet" if not any(ai) and not any(people) else ", ".join(
            f"{o} {a} persona(s) and {p} people" for o, a, p in zip(_digest_options(v), ai, people, strict=True))))
    alt = "Bar charts of the latest vote in each discussion. " + "; ".join(words) + "."
    return [PostFile(name="digest-votes.png", data=_png(fig), alt=alt, title="Latest votes")]


def _digest_counts(v: Any) -> tuple[list[int], list[int]]:
    ai = [len(names) for names in v.ai_positions] if v.ai_positions else [0] * len(v.options)
    return ai, list(v.counts)


def _digest_options(v: Any) -> list[str]:
    ids = v.option_ids
    return [f"{o} [{ids[i]}]" if i < len(ids) else o for i, o in enumerate(v.options)]


def digest_figure(shown: list[tuple[str, Any]]) -> Figure:
    """One axes per discussion, stacked, each as tall as its options' wrapped lines need; the constrained layout
    keeps each title clear of the ticks of the chart above it."""
    labels = [[wrap(o, LABEL_CHARS) for o in _digest_options(v)] for _, v in shown]
    titles = [wrap(topic, TITLE_CHARS) for topic, _ in shown]
    heights = [0.9 + 0.3 * t.count("\n") + 0.3 * sum(x.count("\n") + 1 for x in ls) + 0.15 * len(ls)
               for t, ls in zip(titles, labels, strict=True)]
    fig = Figure(figsize=(7.5, sum(heights) + 0.4), layout="constrained")
    axes = fig.subplots(len(shown), 1, squeeze=False, gridspec_kw={"height_ratios": heights})
    for ax, (_, v), ls, title in zip(axes[:, 0], shown, labels, titles, strict=True):
        ai, people = _digest_counts(v)
        bars(ax, ls, ai, people, title=title, size=10)
    return fig
