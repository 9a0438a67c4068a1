"""Each flow chosen with `/council --flow ...` runs to its end in a Slack thread (signed requests, fake Web API)."""

from __future__ import annotations

import json

from adapters.slack.server import SlackServer
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


async def run(slack: Slack, server: SlackServer, fake: FakeSlack, text: str) -> tuple[str, list[str]]:
    await slack.command(text)
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status == Status.DONE, (d.status, d.blocked_reason)
    thread = fake.thread("C0001", d.thread_ref)
    return d.flow, [m.text + "\n" + json.dumps(m.blocks, ensure_ascii=False) for m in thread]


async def test_a_council_with_two_rounds_ends_in_the_referees_verdict(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    flow, texts = await run(slack, server, fake, "Should we rewrite billing in Rust? --flow council --rounds 2")
    assert flow == "council"
    assert "council (advisors' positions" in texts[0]  # the header names the flow
    verdict = next(t for t in texts if "Referee's reading" in t)
    assert "Stances after round 2" in verdict and "Verdict:" in verdict
    assert sum("Stance: " in t for t in texts) == 6  # three advisors x two rounds, each with its stance


async def test_a_meeting_ranks_and_people_get_a_poll_per_place(slack: Slack, server: SlackServer,
                                                                fake: FakeSlack) -> None:
    await slack.command('config owners "Dana: Billing; Eli: Mobile app; Fay: Platform"', user="U0003")  # an admin
    await server.idle()
    flow, texts = await run(slack, server, fake, "Billing rewrite or the mobile app first? --flow meeting --rounds 3")
    assert flow == "meeting"
    assert any("Dana" in t and "Billing" in t for t in texts[:1])  # the configured owners sit at the table
    recommendation = next(t for t in texts if "Council Recommendation" in t)
    for section in ("Key Arguments", "Dissents", "Suggested Next Steps", "Stances after round"):
        assert section in recommendation
    assert ("Consensus Ranking" in recommendation) == ("CONSENSUS" in recommendation)  # the heading is the verdict's
    assert any("Your #1 priority" in t for t in texts)

    d = (await server.core.service.guard.discussions())[0]  # type: ignore[union-attr]
    places = [m for m in fake.thread("C0001", d.thread_ref) if "poll:close" in json.dumps(m.blocks)]
    assert places, "each place's poll offers to close the ranking"
    first = places[0]
    [menu] = [e for b in first.blocks if b["type"] == "actions" for e in b["elements"] if e["type"] == "static_select"]
    async with server.core.store.tx() as tx:  # type: ignore[union-attr]
        options = (await tx.polls(d.id))[0].options
    assert [o["text"]["text"] for o in menu["options"]] == options, "a menu of the options to rank"
    await slack.pick(first.ts, menu["options"][0]["value"], user="U0002")
    close = next(e for b in first.blocks if b["type"] == "actions" for e in b["elements"]
                 if e["action_id"] == "poll:close")
    assert "confirm" in close, "closing the ranking for everyone asks first"
    await slack.click(first.ts, "poll:close", close["value"], user="U0002")  # Lee did not start it
    await server.idle()
    assert "Only Dana or a workspace admin" in fake.ephemerals[-1]["text"]
    await slack.click(first.ts, "poll:close", close["value"], user="U0001")
    await server.idle()
    table = [m.text + json.dumps(m.blocks, ensure_ascii=False) for m in fake.thread("C0001", d.thread_ref)
             if "ranking beside the owners" in json.dumps(m.blocks, ensure_ascii=False)]
    assert len(table) == 1 and "1 person ranked" in table[0] and "people: average rank 1.0, 1× #1" in table[0]


async def test_the_open_floor_runs_until_it_closes(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    flow, texts = await run(slack, server, fake, 'Should remote work be the default? --flow open --hints "trust"')
    assert flow == "open"
    assert any("Stances after round" in t for t in texts) and sum("Stance: " in t for t in texts) >= 4


async def test_a_one_word_topic_is_asked_about_in_the_thread_and_the_reply_starts_it(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Pricing? --flow council --rounds 1")
    await server.idle()
    assert server.core is not None
    d = (await server.core.service.guard.discussions())[0]
    assert d.status == Status.AWAITING_CONFIRMATION
    assert any("what exactly should it decide" in m.text for m in fake.thread("C0001", d.thread_ref))
    await slack.reply(d.thread_ref, "Should the Pro plan cost 10% more from Q3?", user="U0001")
    await server.idle()
    d = (await server.core.service.guard.discussions())[0]
    assert d.status == Status.DONE and d.topic.endswith("Should the Pro plan cost 10% more from Q3?")
