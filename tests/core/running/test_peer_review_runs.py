"""A peer-reviewed round on the real app (console chat, offline model): one aggregate post beside the synthesis,
reviews reserved and recorded like turns, a failed review recorded once and never asked again."""

from __future__ import annotations

from pathlib import Path

from adapters.web.page import render
from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.deliberation import review
from core.deliberation.engine import State
from core.models import Phase, Status, TurnStatus
from core.showing.export import export
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


async def run(app: App, **kw: object) -> str:
    reply = await app.service.handle(start(experts=3, rounds=1, **kw))
    await settle(app)
    assert reply.discussion_id
    return reply.discussion_id


async def test_a_peer_reviewed_round_posts_one_aggregate_before_the_synthesis_that_reads_it(
        app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    did = await run(app, peer_review=True)
    posts = chat.posts(did)
    aggregate = [p for p in posts if "Peer review, round 1" in p.text]
    assert len(aggregate) == 1 and aggregate[0].kind == "notice" and aggregate[0].persona is None
    keys = [p.key for p in posts]
    synthesis = next(i for i, p in enumerate(posts) if p.kind == "synthesis" or "r1:s5:" in p.key)
    assert keys.index(aggregate[0].key) < synthesis
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
        turns = await tx.turns(did)
        personas = await tx.personas(did)
    assert d is not None and d.options.peer_review
    reviews = [t for t in turns if t.phase == Phase.PEER_REVIEW]
    s = State(discussion=d, personas=personas, turns=turns)
    # Every author of a statement reviewed once (3 experts, the contrarian, the cross-domain thinker), on the
    # light model, and no review is a post of its own.
    asked = [p for p in llm.prompts if p.purpose.phase == Phase.PEER_REVIEW]
    assert len(asked) == len(reviews) == 5 and {p.tier for p in asked} == {"light"}
    assert all(t.status == TurnStatus.DONE and t.data and len(t.data["ranking"]) == 4 for t in reviews)
    assert not [p for p in posts if p.key in {t.key for t in reviews}]
    # The authors are named in the aggregate, as the stored reviews rank them.
    for standing in review.standings(s, 1):
        name = next(p.name for p in personas if p.key == standing.author)
        assert f"**{name}**: average rank {standing.average:.1f}" in aggregate[0].text
    [syn] = [p for p in llm.prompts if p.purpose.phase == Phase.ROUND_SYNTHESIS]
    assert "ranked each other's statements without knowing whose" in syn.instruction
    # The record and the page carry the same aggregate the thread showed.
    doc = await export(app.store, did)
    assert doc is not None
    [kept] = [r["text"] for r in doc["peer_reviews"]]
    assert kept.splitlines() == aggregate[0].text.splitlines()
    html = render(doc)
    assert "Peer review, round 1" in html and html.index("Peer review, round 1") < html.index("Round synthesis")
    assert "ranked each other's statements" not in " ".join(
        p.instruction for p in llm.prompts if p.purpose.phase not in (Phase.ROUND_SYNTHESIS, Phase.FINAL_SYNTHESIS))


async def test_without_the_option_nothing_is_reviewed(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    did = await run(app)
    assert not [p for p in llm.prompts if p.purpose.phase == Phase.PEER_REVIEW]
    assert not [p for p in chat.posts(did) if "Peer review" in p.text]


async def test_a_review_the_model_cannot_give_is_recorded_once_and_the_round_goes_on(
        app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    llm.fail("Contrarian", Phase.PEER_REVIEW, times=5)
    did = await run(app, peer_review=True)
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
        turns = await tx.turns(did)
    assert d is not None and d.status.value == "done", d.blocked_reason
    failed = [t for t in turns if t.phase == Phase.PEER_REVIEW and t.persona_key == "contrarian"]
    assert len(failed) == 1 and failed[0].data and failed[0].data["failed"] and failed[0].data["ranking"] == []
    assert llm.failures[("Contrarian", Phase.PEER_REVIEW)] == 4  # asked once, never again
    [aggregate] = [p for p in chat.posts(did) if "Peer review, round 1" in p.text]
    assert "(4 reviews)" in aggregate.text


async def test_reviews_are_paid_like_any_turn(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 0.01
    did = await run(app, peer_review=True)
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
    reviews = [p for p in llm.prompts if p.purpose.phase == Phase.PEER_REVIEW]
    assert d is not None and len(reviews) == 5
    assert abs(d.cost_usd - 0.01 * len(llm.prompts)) < 1e-9


async def test_reviews_wait_for_the_budget_like_any_turn(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    await run(app)  # how many calls a round makes before its synthesis, without reviews
    before = next(i for i, p in enumerate(llm.prompts) if p.purpose.phase == Phase.ROUND_SYNTHESIS)
    llm.prompts.clear()
    llm.cost_per_call = 5.0 / (before + 2)  # the $5 budget pays the statements and two reviews, not five
    did = await run(app, peer_review=True)
    async with app.store.tx() as tx:
        d = await tx.discussion(did)
    asked = [p for p in llm.prompts if p.purpose.phase == Phase.PEER_REVIEW]
    assert d is not None and d.status.value == "stopped" and "budget reached" in d.blocked_reason
    assert 1 <= len(asked) <= 3, len(asked)  # at most one turn's cost past the budget, as for any turn
    assert not [p for p in llm.prompts if p.purpose.phase == Phase.ROUND_SYNTHESIS]
    assert not [p for p in chat.posts(did) if "Peer review" in p.text]


async def test_finished_reviews_are_not_asked_again_after_a_pause_and_a_restart(tmp_path: Path) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}")  # type: ignore[call-arg]
    chat, llm = RecordingChat("console"), ScriptedLLM()
    first = await build_app(settings, {"console": chat}, llm=llm)
    started: list[str] = []
    llm.on_phase[Phase.PEER_REVIEW] = lambda: first.service.handle(
        c.Pause(**C1, discussion_id=started[0], user_id="U1"))
    started.append((await first.service.handle(start(experts=3, rounds=1, peer_review=True))).discussion_id)
    did = started[0]
    await settle(first)
    await first.close()
    assert len([p for p in llm.prompts if p.purpose.phase == Phase.PEER_REVIEW]) == 5

    again = ScriptedLLM()
    second = await build_app(settings, {"console": chat}, llm=again)
    try:
        assert (await discussion(second, did)).status == Status.PAUSED
        await second.service.handle(c.Resume(**C1, discussion_id=did, user_id="U1"))
        await settle(second)
        assert (await discussion(second, did)).status == Status.DONE
        assert not [p for p in again.prompts if p.purpose.phase == Phase.PEER_REVIEW]
        [syn] = [p for p in again.prompts if p.purpose.phase == Phase.ROUND_SYNTHESIS]
        assert "without knowing whose" in syn.instruction  # read from the stored reviews
        assert len([p for p in chat.posts(did) if "Peer review, round 1" in p.text]) == 1
    finally:
        await second.close()
