"""Charts: valid PNGs, one bar per option and side (personas, people), alt text that says what they show."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from matplotlib.patches import Rectangle

from core.deliberation import stances
from core.models import Ballot, Discussion, Persona, Phase, Poll, Role, Turn, TurnStatus
from core.showing import chart_material, charts
from core.storage.store import Store

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
POLL = Poll(key="k", discussion_id="d1", round=2, question="Which first?", options=["Trial", "Wait", "Skip"],
            created_at=NOW)


def ballot(choice: int, ai: bool, who: str, superseded: bool = False) -> Ballot:
    return Ballot(poll_id=1, voter_id=who, voter_name=who, choice=choice, is_ai=ai, superseded=superseded,
                  created_at=NOW)


BALLOTS = [ballot(0, True, "ada"), ballot(0, True, "bo"), ballot(1, True, "cy"), ballot(0, False, "dana"),
           ballot(2, False, "lee"), ballot(1, False, "lee", superseded=True)]


def test_the_vote_chart_has_a_bar_per_option_and_side_and_says_so() -> None:
    fig, alt = charts.vote_figure(POLL, BALLOTS)
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert len(bars) == 2 * len(POLL.options)
    assert sorted(int(b.get_width()) for b in bars) == sorted([2, 1, 0, 1, 0, 1])
    assert "Trial: 2 personas, 1 person" in alt and "Wait: 1 persona, 0 people" in alt and "Skip: 0 personas" in alt


def test_charts_are_png_files_with_alt_text() -> None:
    material = charts.ChartMaterial(topic="t", poll=POLL, ballots=BALLOTS,
                                    stances={1: {"Ada": 1, "Bo": 2}, 2: {"Ada": 2, "Bo": 2}})
    files = charts.draw(material)
    assert [f.name for f in files] == ["vote.png", "stances.png"]
    for f in files:
        assert f.data.startswith(b"\x89PNG\r\n\x1a\n") and len(f.data) > 2000 and f.alt
    assert "Ada: round 1 proposal 1, round 2 proposal 2" in files[1].alt
    assert charts.draw(charts.ChartMaterial(topic="t")) == []


def test_the_stance_grid_says_each_persona_s_option_by_its_label() -> None:
    """A council's advisors choose for or against: the grid's words name the side, not a 'proposal 2'."""
    material = charts.ChartMaterial(topic="t", stances={1: {"Pragmatist": 2, "Visionary": 1}},
                                    proposals={1: ["For", "Against"]})
    [grid] = charts.draw(material)
    assert "Pragmatist: round 1 “Against”; Visionary: round 1 “For”" in grid.alt, grid.alt
    assert "proposal" not in grid.alt.split(".", 1)[1]


def test_a_chart_drawn_again_from_the_same_votes_is_the_same_picture_and_one_vote_more_is_another() -> None:
    once = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=BALLOTS,
                                            stances={1: {"ada": 1, "bo": 2}}, proposals={1: ["Trial", "Wait"]}))
    again = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=list(BALLOTS),
                                             stances={1: {"ada": 1, "bo": 2}}, proposals={1: ["Trial", "Wait"]}))
    moved = charts.draw(charts.ChartMaterial(topic="t", poll=POLL, ballots=[*BALLOTS, ballot(1, False, "kim")],
                                             stances={1: {"ada": 1, "bo": 1}}, proposals={1: ["Trial", "Wait"]}))
    assert [(f.name, f.data, f.alt) for f in once] == [(f.name, f.data, f.alt) for f in again]
    assert [f.name for f in moved] == [f.name for f in once]
    assert all(m.data != o.data and m.alt != o.alt for m, o in zip(moved, once, strict=True))


async def test_the_closing_positions_are_the_same_from_the_turns_kept_as_from_the_turns_read(store: Store) -> None:
    personas = [Persona(key=k, name=k.title(), role=Role.EXPERT) for k in ("ada", "bo", "cy")]
    turns = [Turn(key=f"d1:r{r}:s1:{p.key}", discussion_id="d1", round=r, step=1, phase=Phase.STATEMENT,
                  persona_key=p.key, status=TurnStatus.PUBLISHED, text="A view.", created_at=NOW,
                  data=stances.record({"stance": f"{label}, on balance", "label": label}, []))
             for r in (1, 2) for p, label in zip(personas, ["for", "for", "against"] if r == 2 else ["against"] * 3,
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
    assert read == kept and read.positions_round == 2 and sorted(read.positions.values()) == [1, 2], read


def test_the_app_loads_matplotlib_only_where_a_chart_is_drawn() -> None:
    """Gathering what the charts show happens on the event loop; importing matplotlib there held the loop for about
    0.3 s at the first finished discussion, so it loads in the worker thread that draws."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, bot.wiring, core.showing.extras, "
                             "core.showing.chart_material; print('matplotlib' in sys.modules)"],
                            capture_output=True, text=True, check=True, cwd=Path(__file__).resolve().parents[3])
    assert loaded.stdout.strip() == "False"
