"""Charts read as a reader reads them, through matplotlib's artists: options named with their ids, a legend, every
round and every persona the verdict counts, titles wrapped, a clear empty state; valid PNGs with alt text."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from bot.wiring import App
from core.models import Ballot, Discussion, Persona, Phase, Poll, PollView, Role, Turn, TurnStatus
from core.showing import chart_material, charts
from core.showing.chart_material import Grid
from core.showing.export import export
from core.storage.store import Store
from tests.core.conftest import settle, start
from tests.fakes.llm import ScriptedLLM

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
POLL = Poll(key="k", discussion_id="d1", round=2, question="Which first?", options=["Trial", "Wait", "Skip"],
            created_at=NOW)


def ballot(choice: int, ai: bool, who: str, superseded: bool = False) -> Ballot:
    return Ballot(poll_id=1, voter_id=who, voter_name=who, choice=choice, is_ai=ai, superseded=superseded,
                  created_at=NOW)


BALLOTS = [ballot(0, True, "ada"), ballot(0, True, "bo"), ballot(1, True, "cy"), ballot(0, False, "dana"),
           ballot(2, False, "lee"), ballot(1, False, "lee", superseded=True)]


def texts(fig: Figure) -> dict[str, list[str]]:
    """What a reader reads on the picture, through matplotlib's own artists (never the pixels)."""
    FigureCanvasAgg(fig).draw()  # laid out as it is saved: wrapped, placed, measured
    out: dict[str, list[str]] = {"title": [], "y": [], "x": [], "legend": [], "text": []}
    for ax in fig.axes:
        out["title"].append(ax.get_title(loc="left"))
        out["y"] += [t.get_text() for t in ax.get_yticklabels()]
        out["x"] += [t.get_text() for t in ax.get_xticklabels()]
        out["text"] += [t.get_text() for t in ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            out["legend"] += [legend.get_title().get_text(), *(t.get_text() for t in legend.get_texts())]
    return out


def test_the_vote_chart_names_each_option_with_its_id_in_a_legend_s_two_colours() -> None:
    poll = POLL.model_copy(update={"question": "Which of the three ways forward should the platform team take "
                                               "first, given the budget we have this quarter?",
                                   "options": ["Run a four-week reversible trial with written exit criteria",
                                               "Wait", "Skip"],
                                   "option_ids": ["O1", "O2", "O3"]})
    fig, alt = charts.vote_figure(poll, BALLOTS)
    read = texts(fig)
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert sorted(int(b.get_width()) for b in bars) == sorted([2, 1, 0, 1, 0, 1])
    assert [" ".join(label.split()) for label in read["y"]] == [
        "Run a four-week reversible trial with written exit criteria [O1]", "Wait [O2]", "Skip [O3]"]
    assert read["legend"][1:] == ["Personas", "People"]
    [title] = read["title"]
    assert "\n" in title and " ".join(title.split()) == poll.question, "a long question wraps, never cut"
    assert "Wait [O2]: 1 persona, 0 people" in alt and "Skip [O3]: 0 personas, 1 person" in alt


def test_the_vote_says_how_many_counted_personas_were_undecided_in_its_round() -> None:
    grid = Grid(rounds=(1, 2), personas=(("Ada", True), ("Bo", True), ("Cy", True), ("Contrarian", False)),
                cells=(("O1", "O1"), ("undecided", "O1"), ("O2", "undecided"), ("O1", "undecided")))
    assert grid.undecided(2) == 1 and grid.undecided(1) == 1 and grid.undecided(3) == 0
    material = charts.ChartMaterial(topic="t", poll=POLL, ballots=BALLOTS, grid=grid)
    [vote, _] = charts.draw(material)
    assert vote.alt.endswith("1 persona undecided, with no ballot.")
    fig, _ = charts.vote_figure(POLL, BALLOTS, grid.undecided(POLL.round))
    assert texts(fig)["legend"] == ["", "Personas", "People", "1 persona undecided (no ballot)"]


def test_a_vote_nobody_cast_says_so_instead_of_drawing_an_axis_around_zero() -> None:
    fig, alt = charts.vote_figure(POLL, [])
    read = texts(fig)
    assert charts.EMPTY in read["text"] and fig.axes[0].get_xlim() == (0, 1) and read["x"] == []
    assert read["legend"] == [] and "no votes yet" in alt


async def test_the_stance_grid_covers_every_round_and_every_persona_the_verdict_counts(
    app: App, llm: ScriptedLLM
) -> None:
    did = (await app.service.handle(start(topic="Should we rotate team leads?", rounds=2, experts=3))).discussion_id
    await settle(app)
    doc = await export(app.store, did)
    assert doc is not None and doc["discussion"]["status"] == "done"
    async with app.store.tx() as tx:
        material = await chart_material.gather(tx, did)
    read = texts(charts.stance_figure(material.grid))
    table = {r["round"]: r["rows"] for r in doc["stances"]}
    assert read["x"] == [f"round {r}" for r in sorted(table)] and len(table) == 2, "every round, not the last"
    last = table[max(table)]
    assert [" ".join(y.split()) for y in read["y"]] == [
        r["persona"] + ("" if r["counted"] else " (shown, not counted)") for r in last]
    # Each cell says the option's id, or that the persona was undecided: row by row, round by round.
    expected = [r["choice"] if r["choice"] not in ("undecided", "unreadable") else "undecided"
                for i in range(len(last)) for r in (table[n][i] for n in sorted(table))]
    assert read["text"] == expected and "undecided" in expected, read["text"]
    # The legend names each option chosen by its label with its id; the count is the verdict's own.
    names = {r["choice"]: r["label"] for rows in table.values() for r in rows}
    assert {" ".join(x.split()) for x in read["legend"][1:]} == {names[c] for c in set(expected) - {"undecided"}} | {
        "Undecided"}
    counted = sum(1 for r in last if r["counted"])
    assert read["legend"][0] == f"{counted} personas counted in the verdict" and f"of {counted}" in \
        doc["closing"]["verdict"], (read["legend"][0], doc["closing"]["verdict"])
    # The vote beside it counts the same personas: a ballot from each who chose, and those undecided said so.
    assert material.poll is not None and material.poll.round == max(table)
    undecided = sum(1 for r in last if r["counted"] and r["choice"] in ("undecided", "unreadable"))
    fig, _ = charts.vote_figure(material.poll, material.ballots, material.grid.undecided(material.poll.round))
    personas = sum(int(b.get_width()) for b in fig.axes[0].patches[:len(material.poll.options)])
    assert personas + undecided == counted, (personas, undecided, counted)
    said = [x for x in texts(fig)["legend"] if "undecided" in x]
    assert said == ([f"{undecided} persona{'s' * (undecided != 1)} undecided (no ballot)"] if undecided else [])


def test_the_digest_s_charts_keep_each_title_clear_of_the_chart_above() -> None:
    voted = PollView(poll_id=1, question="q", options=["Run a trial", "Wait"], option_ids=["O1", "O2"],
                     counts=[1, 2], ai_positions=[["Ada"], ["Bo", "Cy"]])
    empty = PollView(poll_id=2, question="q", options=["Trial", "Wait", "Skip"], option_ids=["O1", "O2", "O3"],
                     counts=[0, 0, 0])
    topic = "Should we rotate team leads every six months across the whole platform organisation?"
    fig = charts.digest_figure([(topic, voted), ("Which CI provider?", empty)])
    read = texts(fig)
    first, second = fig.axes
    renderer = FigureCanvasAgg(fig).get_renderer()
    lowest_tick = min(t.get_window_extent(renderer).y0 for t in [*first.get_xticklabels(), first.xaxis.label])
    assert second.title.get_window_extent(renderer).y1 < lowest_tick
    assert " ".join(read["title"][0].split()) == topic and "\n" in read["title"][0]
    assert read["y"][:2] == ["Run a trial [O1]", "Wait [O2]"] and read["legend"] == ["", "Personas", "People"]
    assert read["text"] == [charts.EMPTY] and second.get_xlim() == (0, 1)
    [picture] = charts.digest_files([(topic, voted), ("Which CI provider?", empty)])
    assert "Which CI provider?: no votes yet" in picture.alt


def test_charts_are_png_files_with_alt_text() -> None:
    grid = Grid(rounds=(1, 2), personas=(("Ada", True), ("Bo", True)), cells=(("O1", "O2"), ("undecided", "O2")),
                names=(("O1", "Trial"), ("O2", "Wait")))
    files = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=BALLOTS, grid=grid))
    assert [f.name for f in files] == ["vote.png", "stances.png"]
    for f in files:
        assert f.data.startswith(b"\x89PNG\r\n\x1a\n") and len(f.data) > 2000 and f.alt
    assert "Ada: round 1 “Trial [O1]”, round 2 “Wait [O2]”; Bo: round 1 undecided" in files[1].alt
    assert charts.draw(charts.ChartMaterial(topic="t")) == []


def test_a_council_s_for_and_against_read_as_sides() -> None:
    grid = Grid(rounds=(1,), personas=(("Pragmatist", True), ("Visionary", True)), cells=(("against",), ("for",)))
    read = texts(charts.stance_figure(grid))
    assert read["text"] == ["Against", "For"] and set(read["legend"][1:]) == {"Against", "For"}


def test_a_chart_drawn_again_from_the_same_votes_is_the_same_picture_and_one_vote_more_is_another() -> None:
    grid = Grid(rounds=(1,), personas=(("ada", True), ("bo", True)), cells=(("O1",), ("O2",)),
                names=(("O1", "Trial"), ("O2", "Wait")))
    moved_grid = Grid(rounds=(1,), personas=(("ada", True), ("bo", True)), cells=(("O1",), ("O1",)),
                      names=(("O1", "Trial"), ("O2", "Wait")))
    once = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=BALLOTS, grid=grid))
    again = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=list(BALLOTS), grid=grid))
    moved = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=[*BALLOTS, ballot(1, False, "kim")],
                                             grid=moved_grid))
    assert [(f.name, f.data, f.alt) for f in once] == [(f.name, f.data, f.alt) for f in again]
    assert [f.name for f in moved] == [f.name for f in once]
    assert all(m.data != o.data and m.alt != o.alt for m, o in zip(moved, once, strict=True))


async def test_the_grid_is_the_same_from_the_turns_kept_as_from_the_turns_read(store: Store) -> None:
    personas = [Persona(key=k, name=k.title(), role=Role.EXPERT) for k in ("ada", "bo", "cy")]
    listed = Turn(key="d1:r1:s0:moderator", discussion_id="d1", round=1, step=0, phase=Phase.OPENING,
                  persona_key="moderator", status=TurnStatus.PUBLISHED, text="Options.", created_at=NOW,
                  data={"listed": [{"id": "O1", "label": "Trial"}, {"id": "O2", "label": "Wait"}]})
    turns = [listed] + [
        Turn(key=f"d1:r{r}:s1:{p.key}", discussion_id="d1", round=r, step=1, phase=Phase.STATEMENT,
             persona_key=p.key, status=TurnStatus.PUBLISHED, text="A view.", created_at=NOW,
             data={"stance": "on balance", "label": label, "choice": label})
        for r in (1, 2) for p, label in zip(personas, ["O1", "O1", "O2"] if r == 2 else ["O2", "undecided", "O2"],
                                             strict=True)]
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id="d1", topic="Which first?", created_at=NOW, updated_at=NOW))
        await tx.set_personas("d1", personas)
        await tx.start_turns(turns)
        for t in turns:
            await tx.save_turn(t)
    async with store.tx() as tx:
        read = await chart_material.gather(tx, "d1")
        kept = await chart_material.gather(tx, "d1", (personas, turns))
    assert read == kept and read.grid.cells == (("O2", "O1"), ("undecided", "O1"), ("O2", "O2")), read.grid
    assert dict(read.grid.names) == {"O1": "Trial", "O2": "Wait"}


def test_the_app_loads_matplotlib_only_where_a_chart_is_drawn() -> None:
    """Gathering what the charts show happens on the event loop; importing matplotlib there held the loop for about
    0.3 s at the first finished discussion, so it loads in the worker thread that draws."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, bot.wiring, core.showing.extras, "
                             "core.showing.chart_material; print('matplotlib' in sys.modules)"],
                            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[3])
    assert loaded.stdout.strip() == "False"


def test_dollar_signs_people_write_are_drawn_as_written_never_as_a_formula() -> None:
    grid = Grid(rounds=(1,), personas=(("Ada $x$", True),), cells=(("O1",),), names=(("O1", "Pay $5 a $seat"),))
    poll = POLL.model_copy(update={"question": "Is $x^$ the right price?", "options": ["$5 a seat", "$x^2$", "Free"]})
    files = charts.draw(charts.ChartMaterial(topic="Is $x^$ the right price?", poll=poll, ballots=BALLOTS, grid=grid))
    assert [f.name for f in files] == ["vote.png", "stances.png"], "an unpaired $ fails no chart"
    read = texts(charts.vote_figure(poll, BALLOTS)[0])
    assert " ".join(read["title"][0].split()) == "Is $x^$ the right price?"
    assert [" ".join(label.split()) for label in read["y"]] == ["$5 a seat", "$x^2$", "Free"]
    fig = charts.stance_figure(grid)
    FigureCanvasAgg(fig).draw()
    assert all(not t.get_parse_math() for ax in fig.axes for t in [*ax.texts, *ax.get_yticklabels()])
    view = PollView(poll_id=1, question="Is $x^$ the right price?", options=["$5", "Free"], counts=[1, 0])
    assert [f.name for f in charts.digest_files([("Is $x^$ the right price?", view)])] == ["digest-votes.png"]
