"""Honest meeting verdicts through the service: every owner counts, people can deny a consensus, one verdict per
post, tallies by meaning, and the seed's models (offline model at the port, owners' rankings scripted)."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import commands as c
from core.deliberation.schemas import RankedItem, RankedVote
from core.models import Phase, Role
from core.ports import Prompt, T, Usage
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

WORDINGS = ["Pack opening UX", "Pack-opening UX", "pack opening ux.", "the pack opening UX"]


class AgreeingOwners(ScriptedLLM):
    """Every owner ranks the same option first, each in their own wording, and names one item twice."""

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        if schema is not RankedVote:
            return await super().structured(prompt, schema)
        self.prompts.append(prompt)
        self._maybe_fail(prompt)
        mine = WORDINGS[sum(map(ord, prompt.purpose.persona)) % len(WORDINGS)]
        vote = RankedVote(ranking=[RankedItem(item=mine, why="players feel it first"),
                                   RankedItem(item="Billing", why="money"),
                                   RankedItem(item="billing.", why="said twice")],
                          stance="pack opening first", label=mine)
        return vote, Usage(model="offline")  # type: ignore[return-value]


@pytest.fixture
def llm() -> ScriptedLLM:
    return AgreeingOwners()


async def test_agreeing_owners_in_four_wordings_rank_one_item_once_with_one_verdict(
    app: App, chat: RecordingChat
) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    recommendation = next(p.text for p in chat.posts(reply.discussion_id) if "**Council Recommendation**" in p.text)
    ranking = recommendation.split("**Consensus Ranking**")[1].split("**Verdict:**")[0]
    assert ranking.lower().count("pack opening ux") == 1 and ranking.lower().count("billing") == 1
    assert "4 owners ranked this #1" in ranking
    assert recommendation.count("Verdict") == 1 and "Tally" not in recommendation
    assert "**Verdict:** CONSENSUS" in recommendation
    # Each owner's ballot lists each item once.
    ballots = [p.text for p in chat.posts(reply.discussion_id) if p.title.endswith("Final vote")]
    assert ballots and all(b.lower().count("billing") == 1 for b in ballots)


async def test_an_owner_whose_vote_was_skipped_counts_as_undecided(app: App, chat: RecordingChat,
                                                                   llm: ScriptedLLM) -> None:
    llm.fail("Kenji Watanabe", Phase.RANKED_VOTE, times=2)  # nudged once, then skipped
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    recommendation = next(p.text for p in chat.posts(reply.discussion_id) if "**Council Recommendation**" in p.text)
    verdict = recommendation.split("**Verdict:** ")[1].splitlines()[0]
    assert verdict.startswith("LEANING pack opening ux") and "undecided 1 of 4" in verdict


async def test_a_person_who_ranks_otherwise_denies_the_consensus(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    did = reply.discussion_id
    async with app.store.tx() as tx:
        polls = await tx.polls(did)
    billing = polls[0].options.index("Billing")
    await app.service.handle(c.CastBallot(**C1, poll_id=polls[0].id, choice=billing, user_id="U2", user_name="Sam"))
    await app.service.handle(c.ClosePoll(**C1, poll_id=polls[0].id, user_id="U1", user_name="Dana"))
    await settle(app)
    [closed] = [p.text for p in chat.posts(did) if "people's ranking beside the owners'" in p.text]
    verdict = closed.split("**Verdict:** ")[1]
    assert verdict.startswith("SPLIT: the personas agree on pack opening ux, but most people who voted chose")
    assert "people: billing 1 of 1" in verdict


async def test_meeting_owners_think_on_the_heavy_model_and_the_moderator_on_the_medium(
    app: App, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    async with app.store.tx() as tx:
        owners = {p.name for p in await tx.personas(d.id) if p.role == Role.OWNER}
    tiers = {(p.purpose.persona in owners, p.tier) for p in llm.prompts if p.purpose.phase != Phase.ROSTER}
    assert tiers == {(True, "heavy"), (False, "medium")}
    llm.prompts.clear()
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting",
                                           tier="light"))
    await settle(app)
    assert {p.tier for p in llm.prompts if p.purpose.phase != Phase.ROSTER} == {"medium"}  # --tier overrides
