"""Honest meeting verdicts through the service: every owner counts, people can deny a consensus, one verdict per
post, tallies over option ids, and the seed's models (offline model at the port, owners' rankings scripted)."""

from __future__ import annotations

import re

import pytest

from bot.wiring import App
from core.control import commands as c
from core.deliberation.schemas import RankedItem, RankedVote
from core.models import Phase, Role
from core.ports import Prompt, T, Usage
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


def wordings(label: str, id_: str) -> list[str]:
    """One option named four ways a model may write it: its id, or its whole label in another case or emphasis."""
    return [id_, label.upper(), f"**{label}**", f"{label.lower()}."]


class AgreeingOwners(ScriptedLLM):
    """Every owner ranks the same fixed option first, each naming it another way, and names one item twice."""

    first = ""  # the option they all rank first, as posts show it

    async def structured(self, prompt: Prompt, schema: type[T]) -> tuple[T, Usage]:
        if schema is not RankedVote:
            return await super().structured(prompt, schema)
        self.prompts.append(prompt)
        self._maybe_fail(prompt)
        fixed = re.findall(r"^(O\d+): <option>\s*(.+?)\s*</option>", prompt.instruction, re.M | re.S)
        (first_id, first), (second_id, _) = fixed[0], fixed[1]
        self.first = f"{first} [{first_id}]"
        mine = wordings(first, first_id)[sum(map(ord, prompt.purpose.persona)) % 4]
        vote = RankedVote(ranking=[RankedItem(item=mine, why="players feel it first"),
                                   RankedItem(item=second_id, why="money"),
                                   RankedItem(item=second_id, why="said twice")],
                          stance="the first option first", label=mine)
        return vote, Usage(model="offline")  # type: ignore[return-value]


@pytest.fixture
def llm() -> AgreeingOwners:
    return AgreeingOwners()


async def test_agreeing_owners_in_four_wordings_rank_one_item_once_with_one_verdict(
    app: App, chat: RecordingChat, llm: AgreeingOwners
) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    recommendation = next(p.text for p in chat.posts(reply.discussion_id) if "**Council Recommendation**" in p.text)
    ranking = recommendation.split("**Consensus Ranking**")[1].split("**Verdict:**")[0]
    assert ranking.count("[O") == 2 and ranking.startswith(f"\n1. **{llm.first}**")
    assert "4 owners ranked this #1" in ranking
    assert recommendation.count("Verdict") == 1 and "Tally" not in recommendation
    assert "**Verdict:** CONSENSUS" in recommendation
    # Each owner's ballot counts each item once; the repeat keeps its place (#3), shown as not counted.
    ballots = [p.text for p in chat.posts(reply.discussion_id) if p.title.endswith("Final vote")]
    assert ballots and all(len(re.findall(r"^\d\. \*\*", b, re.M)) == 2 for b in ballots)
    assert all(re.search(r"^3\. _.*repeats an option placed higher, not counted\)_", b, re.M) for b in ballots)


async def test_an_owner_whose_vote_was_skipped_counts_as_undecided(app: App, chat: RecordingChat,
                                                                   llm: AgreeingOwners) -> None:
    llm.fail("Kenji Watanabe", Phase.RANKED_VOTE, times=2)  # nudged once, then skipped
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    recommendation = next(p.text for p in chat.posts(reply.discussion_id) if "**Council Recommendation**" in p.text)
    verdict = recommendation.split("**Verdict:** ")[1].splitlines()[0]
    assert verdict.startswith(f"LEANING: {llm.first}") and "undecided 1 of 4" in verdict


async def test_a_person_who_ranks_otherwise_denies_the_consensus(app: App, chat: RecordingChat,
                                                                 llm: AgreeingOwners) -> None:
    reply = await app.service.handle(start(topic="What should the card game fix first?", flow="meeting"))
    await settle(app)
    did = reply.discussion_id
    async with app.store.tx() as tx:
        polls = await tx.polls(did)
    await app.service.handle(c.CastBallot(**C1, poll_id=polls[0].id, choice=1, user_id="U2", user_name="Sam"))
    await app.service.handle(c.ClosePoll(**C1, poll_id=polls[0].id, user_id="U1", user_name="Dana"))
    await settle(app)
    [closed] = [p.text for p in chat.posts(did) if "people's ranking beside the owners'" in p.text]
    verdict = closed.split("**Final verdict:** ")[1]
    assert verdict.startswith(f"SPLIT: the personas agree on {llm.first}, but most people who voted chose")
    assert f"people: {polls[0].options[1]} [{polls[0].option_ids[1]}] 1 of 1" in verdict


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
