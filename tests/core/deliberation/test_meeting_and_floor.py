"""The council meeting and the open floor end to end through the service, with the offline model at the port."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control.replies import UserError
from core.models import Phase, Role, Status, Turn, TurnStatus
from core.showing.export import export
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


async def test_a_meeting_proposes_deliberates_ranks_and_recommends(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start(topic="Billing rewrite or mobile app first?", flow="meeting"))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE and d.auto_rounds == 3
    async with app.store.tx() as tx:
        turns = await tx.turns(d.id)
        owners = [p for p in await tx.personas(d.id) if p.role == Role.OWNER]
        polls = await tx.polls(d.id)
    assert len(owners) == 4
    skip = (Phase.FINAL_SYNTHESIS, Phase.ROSTER)
    phases = {r: sorted({t.phase for t in turns if t.round == r and t.phase not in skip}) for r in (1, 2, 3)}
    assert phases[1] == [Phase.PROPOSAL] and phases[3] == [Phase.OPTIONS, Phase.RANKED_VOTE]
    # The middle round steelmans when round 1's owners converged (a majority chose one option, by the choice ids
    # their proposals recorded), and deliberates otherwise.
    firsts = Counter(str((t.data or {}).get("choice")) for t in turns
                     if t.round == 1 and t.phase == Phase.PROPOSAL and t.persona_key in {o.key for o in owners})
    top = max(firsts.values())
    converged = top >= 2 and top * 2 > len(owners)
    assert phases[2] == sorted([Phase.EXCHANGE, Phase.STEELMAN if converged else Phase.DELIBERATION]), firsts
    # An owner named in a deliberation answers in the same round.
    exchanges = [t for t in turns if t.phase == Phase.EXCHANGE]
    named = {o.key for o in owners if any(o.name in t.text for t in turns if t.round == 2 and t.step == 0
                                          and t.persona_key != o.key)}
    assert {t.persona_key for t in exchanges} == named and all(t.round == 2 for t in exchanges)
    recommendation = chat.posts(d.id)[-1 - len(polls)]
    for section in ("**Council Recommendation**", "**Key Arguments**", "**Dissents**",
                    "**Suggested Next Steps**", "**Stances after round 3**", "owners ranked this #1"):
        assert section in recommendation.text, section
    # The heading says what the verdict says: "Consensus Ranking" heads a consensus only.
    consensus = "**Verdict:** CONSENSUS" in recommendation.text
    assert ("**Consensus Ranking**" in recommendation.text) == consensus
    assert consensus or "**Owners' Ranking" in recommendation.text
    assert "nothing is executed automatically" in recommendation.text
    # People rank too: a poll per place, still open after the meeting ends.
    assert 2 <= len(polls) <= 3 and [p.question for p in polls] == [f"Your #{i} priority" for i in
                                                                     range(1, len(polls) + 1)]
    assert all(p.options == polls[0].options for p in polls) and len(polls[0].options) >= len(polls)
    assert all(p.final and not p.closed for p in polls)
    await app.service.handle(c.CastBallot(**C1, poll_id=polls[0].id, choice=1, user_id="U2", user_name="Sam"))
    doc = await export(app.store, d.id)
    assert doc is not None and doc["discussion"]["flow"] == "meeting"
    assert doc["polls"][0]["tally"][1] == 1
    assert all(t["stance"] for t in doc["turns"] if t["kind"] in ("proposal", "ranked_vote"))


async def test_an_owner_who_fails_is_nudged_once_then_skipped_visibly(app: App, chat: RecordingChat,
                                                                        llm: ScriptedLLM) -> None:
    llm.fail("Kenji Watanabe", Phase.PROPOSAL, times=1)
    llm.fail("Lucía Fernández", Phase.PROPOSAL, times=2)
    reply = await app.service.handle(start(flow="meeting", rounds=2))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE
    async with app.store.tx() as tx:
        proposals = {t.persona_key: t for t in await tx.turns(d.id) if t.phase == Phase.PROPOSAL}
    assert proposals["kenji_watanabe"].status == TurnStatus.PUBLISHED and proposals["kenji_watanabe"].attempts == 2
    assert proposals["lucia_fernandez"].status == TurnStatus.SKIPPED
    texts = [p.text for p in chat.posts(d.id)]
    assert sum("nudging them once more" in t for t in texts) == 2
    assert any("Lucía Fernández could not respond" in t and "skipped" in t for t in texts)
    nudged = [p for p in llm.prompts if p.purpose.persona == "Kenji Watanabe" and p.purpose.phase == Phase.PROPOSAL]
    assert "The moderator nudges you" in nudged[-1].instruction


async def test_configured_owners_take_the_seats_instead_of_generated_ones(app: App, llm: ScriptedLLM) -> None:
    await app.service.handle(c.SetOwners(platform="console", channel="C1", owners=["Dana: Billing", "Eli: Mobile"],
                                         user_id="U1", user_name="Dana", is_admin=True))
    reply = await app.service.handle(start(flow="meeting", rounds=2))
    await settle(app)
    async with app.store.tx() as tx:
        owners = [(p.name, p.title) for p in await tx.personas(reply.discussion_id) if p.role == Role.OWNER]
    assert owners == [("Dana", "Billing"), ("Eli", "Mobile")]
    assert Phase.ROSTER not in {p.purpose.phase for p in llm.prompts}


async def test_the_open_floor_seats_generated_personas_and_gives_the_floor_to_the_highest_bid(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start(topic="Should remote work be the default?", flow="open",
                                           hints=["trust", "cost"]))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE
    async with app.store.tx() as tx:
        turns = await tx.turns(d.id)
        people = [p for p in await tx.personas(d.id) if p.role == Role.EXPERT]
    assert len(people) == 4 and len({p.name for p in people}) == 4
    cultures = [re.search(r"name culture: (\w+)", p.reply_tendency).group(1) for p in people]  # type: ignore[union-attr]
    assert len(set(cultures)) == 4, "every participant has a name culture of their own"
    assert sum("outlier" in p.reply_tendency for p in people) == 1
    roster_prompt = next(p for p in llm.prompts if p.purpose.phase == Phase.ROSTER)
    assert '<hint>\ntrust\n</hint>' in roster_prompt.instruction and roster_prompt.tier == "light"
    bids = [p for p in llm.prompts if p.purpose.phase == Phase.BID]
    assert bids and {p.tier for p in bids} == {"light"}
    speeches = sorted((t for t in turns if t.phase == Phase.SPEECH), key=lambda t: (t.round, t.step))
    for i, s in enumerate(speeches):  # the speaker had the highest bid of the step before (ties: who had spoken
        # less) among those who may speak: the last speaker sits out while another has spoken fewer than twice
        before = [t.persona_key for t in speeches[:i]]
        last = before[-1] if before else None
        waiting = any(before.count(p.key) < 2 for p in people if p.key != last)
        step_bids = [t for t in turns if t.phase == Phase.BID and (t.round, t.step) == (s.round, s.step - 1)
                     and not (waiting and t.persona_key == last)]
        assert s.persona_key in {t.persona_key for t in step_bids}
        top = max(int((t.data or {})["urgency"]) for t in step_bids)
        assert int((next(t for t in step_bids if t.persona_key == s.persona_key).data or {})["urgency"]) == top

    def policy_met(so_far: list[Turn]) -> bool:
        """The floor's closing rule, read from the speeches' recorded fields: everyone spoke twice, each one's
        latest speech builds on earlier ones, someone proposed a synthesis, the last leaves no question open."""
        said = [t for t in so_far if t.data]
        if not said or any(sum(1 for t in so_far if t.persona_key == p.key) < 2 for p in people):
            return False
        latest = {t.persona_key: t for t in said}
        return (all((t.data or {}).get("builds_on_earlier") for t in latest.values())
                and any((t.data or {}).get("proposes_synthesis") for t in said)
                and not str((said[-1].data or {}).get("open_question", "")).strip())

    # The floor closes at the first speech that meets the rule, or at the cap: neither sooner nor later.
    met_at = next((n for n in range(1, len(speeches) + 1) if policy_met(speeches[:n])), None)
    assert len(speeches) == min(met_at or d.options.max_speeches, d.options.max_speeches), (met_at, len(speeches))
    bid_keys = {t.key for t in turns if t.phase == Phase.BID}
    assert not bid_keys & set(chat.keys(d.id)), "bids are never posted"
    final = chat.posts(d.id)[-2]
    assert final.kind == "synthesis" and "**Stances after round" in final.text


async def test_closing_the_ranking_shows_the_peoples_tally_beside_the_owners(
    app: App, chat: RecordingChat
) -> None:
    reply = await app.service.handle(start(topic="Billing rewrite or mobile app first?", flow="meeting"))
    await settle(app)
    did = reply.discussion_id
    async with app.store.tx() as tx:
        polls = await tx.polls(did)
    first, second = polls[0], polls[1]
    options = first.options
    ballots = [(first, 1, "U2", "Sam"), (second, 0, "U2", "Sam"), (first, 0, "U3", "Lee"),
               (first, 1, "U3", "Lee")]  # Lee changes her mind: only her last ballot counts
    for poll, choice, user_id, name in ballots:
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=choice, user_id=user_id, user_name=name))
    assert any(a.id == "poll:close" for a in chat.posts(did)[-1].actions), "the ranking offers to close it"

    refused = c.ClosePoll(**C1, poll_id=second.id, user_id="U3", user_name="Lee")
    with pytest.raises(UserError, match="Only Dana or a workspace admin"):
        await app.service.handle(refused)
    await app.service.handle(c.ClosePoll(**C1, poll_id=second.id, user_id="U1", user_name="Dana"))
    await settle(app)
    async with app.store.tx() as tx:
        assert all(p.closed for p in await tx.polls(did)), "one close ends every place of the ranking"
    [table] = [p.text for p in chat.posts(did) if "people's ranking beside the owners'" in p.text]
    assert "_2 people ranked, 4 owners._" in table
    # Sam: #1 options[1], #2 options[0]; Lee: #1 options[1]. Left out counts as rank 6: (2 + 6) / 2 = 4.0.
    assert f"**{options[1]} [{first.option_ids[1]}]** — owners: average rank" in table
    assert "people: average rank 1.0, 2× #1" in table
    assert "people: average rank 4.0, 0× #1" in table
    # The recommendation's verdict was edited in place: the people's side counts each person's first choice only
    # (Sam's #2 is not a vote), the same as the table's.
    picked = f"{options[1]} [{first.option_ids[1]}]"
    recommendation = next(p.text for p in chat.posts(did) if "**Council Recommendation**" in p.text)
    assert f"people: {picked} 2 of 2" in recommendation and f"people: {picked} 2 of 2" in table
    await app.service.handle(c.ClosePoll(**C1, poll_id=first.id, user_id="U1", user_name="Dana"))
    await settle(app)
    assert sum("people's ranking beside the owners'" in p.text for p in chat.posts(did)) == 1, "shown once"


async def test_each_later_meeting_round_opens_with_a_post_of_the_recorded_positions(
    app: App, chat: RecordingChat
) -> None:
    """Seed 004: the moderator states the positions from the round before at the start of each round after the
    first, in the thread, from each owner's recorded choice (an id), not from anyone's prose."""
    reply = await app.service.handle(start(topic="Billing rewrite or mobile app first?", flow="meeting"))
    await settle(app)
    async with app.store.tx() as tx:
        turns = await tx.turns(reply.discussion_id)
        owners = [p for p in await tx.personas(reply.discussion_id) if p.role == Role.OWNER]
    texts = [p.text for p in chat.posts(reply.discussion_id)]
    # Round 1's proposals run in parallel: each `new:` option takes its own id, never a sibling's.
    proposed = [(t.data["listed"][0]["id"], t.data["label"]) for t in turns if t.phase == Phase.PROPOSAL and t.data]
    ids: dict[str, str] = {}
    for id_, label in proposed:
        assert ids.setdefault(id_, label.removeprefix("new: ")) == label.removeprefix("new: "), (id_, proposed)
    for r in (1, 2):
        [post] = [t for t in texts if t.startswith(f"**Round {r + 1} of 3** — the moderator states the positions "
                                                   f"from round {r}:")]
        first_of_next = next(t for t in turns if t.round == r + 1 and t.text)
        assert texts.index(post) < texts.index(next(t for t in texts if first_of_next.text[:60] in t))
        last = {t.persona_key: t for t in turns if t.round == r and t.data and "choice" in t.data}
        listed = {str(o["id"]): str(o["label"]) for t in turns if t.round <= r and t.data
                  for o in t.data.get("listed", [])}
        for o in owners:
            choice = str(last[o.key].data["choice"]) if o.key in last and last[o.key].data else "undecided"
            shown = f"{listed[choice]} [{choice}]" if choice in listed else choice
            assert f"- {o.name}: {shown} — " in post, (o.name, shown, post)
