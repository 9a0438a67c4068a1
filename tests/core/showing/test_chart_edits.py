"""The final synthesis carries its charts when it goes out; a vote that redraws it in place draws none: no platform
attaches files to an edit, and every vote on its poll drew the charts again for nothing."""

from __future__ import annotations

from pathlib import Path

from bot.settings import Settings
from bot.wiring import build_app
from core.control import commands as c
from core.deliberation.offline import OfflineLLM
from core.showing import charts
from core.showing.chart_material import ChartMaterial, Grid
from tests.fakes.chat import RecordingChat

PLACE = {"platform": "slack", "channel": "C1", "workspace": "T1"}


def drawn() -> int:
    """Charts drawn so far in this process (each chart kind caches its pictures by what they show)."""
    return sum(f.cache_info().misses for f in (charts._vote_png, charts._stance_png))


async def test_a_vote_that_redraws_the_final_synthesis_in_place_draws_no_chart(tmp_path: Path) -> None:
    for f in (charts._vote_png, charts._stance_png):
        f.cache_clear()
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}")  # type: ignore[call-arg]
    chat = RecordingChat()
    app = await build_app(settings, {"slack": chat}, llm=OfflineLLM(), owner="test")
    try:
        reply = await app.service.handle(c.StartDiscussion(topic="Should we adopt trunk-based development?",
                                                           experts=2, rounds=1, user_id="U1", user_name="Dana",
                                                           **PLACE))
        await app.driver.idle()
        d_id = reply.discussion_id
        [final] = [s for s in chat.sent if s.post.key.startswith(f"{d_id}:final:") and not s.post.key.endswith(":poll")]
        assert final.post.files, "the final synthesis went out with its charts"
        before, edits = drawn(), len(final.updates)
        async with app.store.tx() as tx:
            polls = [poll for poll in await tx.polls(d_id) if not poll.closed]
        assert any(poll.final for poll in polls), "the final synthesis's poll stays open after the discussion"
        for k, poll in enumerate(polls):  # people vote on every poll still open, the final one among them
            await app.service.handle(c.CastBallot(**PLACE, in_channel="C1", poll_id=poll.id, choice=0,
                                                  user_id=f"U{k + 2}", user_name=f"Person {k}"))
        await app.driver.idle()
        redrawn = final.updates[edits:]
        assert redrawn, "a vote redraws the final synthesis in place"
        assert all(not post.files for post in redrawn) and drawn() == before, (drawn(), before)
    finally:
        await app.close()


def test_a_stance_grid_that_only_lists_more_options_is_the_picture_already_drawn() -> None:
    """The final synthesis lists options no persona chose: its grid then differs from the one drawn ahead only in
    names its picture never shows, and that picture is not drawn again; a name it does show is."""
    charts._stance_png.cache_clear()
    grid = Grid(rounds=(1, 2), personas=(("Ada", True), ("Lin", True)), cells=(("O1", "O2"), ("O2", "undecided")),
                names=(("O1", "Trial"), ("O2", "Wait")))
    [ahead] = charts.draw(ChartMaterial(topic="t", grid=grid))
    listed = Grid(rounds=grid.rounds, personas=grid.personas, cells=grid.cells,
                  names=(*grid.names, ("O3", "Skip it"), ("O4", "Adopt now")))
    [post] = charts.draw(ChartMaterial(topic="t", grid=listed))
    assert post.data is ahead.data and post.alt == ahead.alt and charts._stance_png.cache_info().misses == 1
    renamed = Grid(rounds=grid.rounds, personas=grid.personas, cells=grid.cells,
                   names=(("O1", "A reversible trial"), ("O2", "Wait")))
    [other] = charts.draw(ChartMaterial(topic="t", grid=renamed))
    assert charts._stance_png.cache_info().misses == 2 and "A reversible trial" in other.alt
