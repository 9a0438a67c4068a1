"""Buttons, votes, modals and failures, clicked through signed interaction payloads."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from adapters.slack.server import SlackServer
from core.models import Discussion, Phase, Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack, fixture
from tests.adapters.slack.test_threads import only
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack, Msg

server = skipping.server  # the app on skipping time, in place of the conftest's


def with_action(fake: FakeSlack, thread: str, prefix: str) -> list[Msg]:
    return [m for m in fake.thread("C0001", thread) if prefix in json.dumps(m.blocks)]


def buttons(m: Msg) -> list[dict[str, Any]]:
    return [e for b in m.blocks if b["type"] == "actions" for e in b["elements"]]


async def first_poll(slack: Slack, server: SlackServer, fake: FakeSlack, command: str) -> tuple[Discussion, Msg, int]:
    """Start a discussion with `command` and find the poll its first round ends with: (discussion, message, id)."""
    await slack.command(command)
    await server.idle()
    d = await only(server)
    [poll] = with_action(fake, d.thread_ref, '"vote:0"')
    return d, poll, int(buttons(poll)[0]["value"].split("|")[0])


async def test_next_action_buttons_work_for_anyone_and_say_who_chose(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    [choice] = with_action(fake, d.thread_ref, '"next:another_round"')
    labels = [b["text"]["text"] for b in buttons(choice)]
    assert labels[:5] == ["Deep dive", "Different topic", "Another round", "Synthesize", "Pause"]
    await slack.click(choice.ts, "next:another_round", f"{d.id}|another_round", user="U0002")
    await server.idle()
    d = await only(server)
    assert d.round == 2 and d.status == Status.WAITING
    settled = fake.find("C0001", choice.ts)
    assert settled is not None and not buttons(settled) and "Lee chose *Another round*" in json.dumps(settled.blocks)
    said = [m.ts for m in fake.thread("C0001", d.thread_ref) if "chose *Another round*" in json.dumps(m.blocks)]
    assert said == [choice.ts], "the choice is shown once, in the message where it was made"
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize", user="U0002")  # a stale click
    await server.idle()
    assert (await only(server)).round == 2


async def test_votes_one_per_person_changeable_counted_in_place(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    d, poll, poll_id = await first_poll(slack, server, fake, "Should we move the office to Lisbon?")
    await slack.click(poll.ts, "vote:0", f"{poll_id}|0", user="U0001")
    await slack.click(poll.ts, "vote:1", f"{poll_id}|1", user="U0001")  # changed her mind
    await slack.click(poll.ts, "vote:1", f"{poll_id}|1", user="U0002")
    await server.idle()
    shown = fake.find("C0001", poll.ts)
    assert shown is not None and shown.edits >= 1  # a burst of votes may share one edit: the last counts
    text = json.dumps(shown.blocks)
    assert "0 votes" in text and "2 votes (Dana, Lee)" in text
    assert [e["text"] for e in fake.ephemerals][-1].startswith("Your vote:")
    choice = with_action(fake, d.thread_ref, '"next:synthesize"')[0]
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize")
    await server.idle()
    # One event, one message: the poll itself now reads as closed, and no copy of it is posted below.
    closing = [m for m in fake.thread("C0001", d.thread_ref) if "Poll closed" in m.text]
    assert [m.ts for m in closing] == [poll.ts]
    # The round's stances named the question's options: the personas stand on this poll beside the people.
    assert "personas:" in closing[0].text and "2 votes (Dana, Lee)" in closing[0].text
    assert not buttons(closing[0]), "a closed poll offers no vote"


async def test_anonymous_hidden_polls_show_no_names_or_counts_until_closed(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    d, poll, poll_id = await first_poll(slack, server, fake, "Should we adopt OKRs? --anonymous --hidden")
    await slack.click(poll.ts, "vote:0", f"{poll_id}|0", user="U0002")
    await server.idle()
    shown = fake.find("C0001", poll.ts)
    assert shown is not None and "1 ballot cast" in shown.text and "Lee" not in shown.text
    choice = with_action(fake, d.thread_ref, '"next:pause"')[0]
    await slack.click(choice.ts, "next:another_round", f"{d.id}|another_round")
    await server.idle()
    closing = [m for m in fake.thread("C0001", d.thread_ref) if "Poll closed" in m.text]
    assert [m.ts for m in closing] == [poll.ts] and "1 vote" in closing[0].text and "Lee" not in closing[0].text


async def test_roster_confirmation_with_a_modify_modal(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Which cloud should we standardise on? --confirm --experts 3")
    await server.idle()
    d = await only(server)
    assert d.status == Status.AWAITING_CONFIRMATION
    [confirm] = with_action(fake, d.thread_ref, '"roster:start"')
    await slack.click(confirm.ts, "roster:modify", d.id, user="U0002")  # not the starter: no roster is read
    await server.idle()
    # The form opens at once (its trigger lasts 3 s), loading; the refusal then takes its place, and no roster shows.
    [refused] = fake.views
    shown = json.dumps(refused["view"])
    assert "Only Dana or a workspace admin can edit the roster of this discussion." in shown
    assert "name:" not in shown and refused["view"].get("callback_id") != "council_roster"
    await slack.click(confirm.ts, "roster:modify", d.id)
    await server.idle()
    [_, view] = fake.views
    assert view["view"]["callback_id"] == "council_roster"
    assert json.loads(view["view"]["private_metadata"]) == {"discussion_id": d.id, "channel": "C0001"}
    names = [b["block_id"] for b in view["view"]["blocks"] if b.get("block_id", "").startswith("name:")]
    assert len(names) == 3
    submission = fixture("view_submission")
    submission["view"] |= {"callback_id": "council_roster", "private_metadata": view["view"]["private_metadata"],
                           "state": {"values": {
        names[0]: {"value": {"type": "plain_text_input", "value": "Grace Hopper"}},
        "add_name": {"value": {"type": "plain_text_input", "value": "Ada Lovelace"}},
        "add_title": {"value": {"type": "plain_text_input", "value": "Analytical engines"}},
    }}}
    assert (await slack.interaction(submission))[0] == 200
    await server.idle()
    header = fake.find("C0001", d.thread_ref)
    assert header is not None and "Grace Hopper" in json.dumps(header.blocks) and "Ada Lovelace" in json.dumps(
        header.blocks)
    await slack.click(confirm.ts, "roster:start", d.id, user="U0002")  # another member: refused privately
    await server.idle()
    assert (await only(server)).status == Status.AWAITING_CONFIRMATION
    assert fake.ephemerals[-1]["user"] == "U0002"
    assert fake.ephemerals[-1]["text"] == "Only Dana or a workspace admin can start this discussion."
    await slack.click(confirm.ts, "roster:start", d.id, user="U0003")  # an admin may
    await server.idle()
    d = await only(server)
    assert d.status == Status.WAITING and d.round == 1
    started = fake.find("C0001", confirm.ts)
    assert started is not None and "Ines started the discussion" in json.dumps(started.blocks)


async def test_the_start_form_starts_a_discussion_or_explains_what_is_missing(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    empty = fixture("view_submission")
    empty["view"]["state"]["values"]["topic"]["value"]["value"] = "  "
    status, body = await slack.interaction(empty)
    assert status == 200 and json.loads(body) == {"response_action": "errors",
                                                  "errors": {"topic": "Please give a topic for the council."}}
    status, body = await slack.interaction(fixture("view_submission"))
    assert status == 200 and body == ""
    await server.idle()
    d = await only(server)
    assert d.topic == "How should we price the new API tier?" and d.mode == "debate" and d.experts == 3
    assert d.roles == ["finance", "customer support"] and d.auto_rounds == 1 and d.status == Status.DONE
    experts = [m for m in fake.thread("C0001", d.thread_ref) if m.username and "Round 1" in json.dumps(m.blocks)]
    assert experts


async def test_llm_failures_offer_retry_skip_stop_in_the_thread(
    slack: Slack, server: SlackServer, fake: FakeSlack, llm: ScriptedLLM
) -> None:
    llm.fail("Moderator", Phase.OPENING, times=1)
    await slack.command("Should we hire a platform team?")
    await server.idle()
    d = await only(server)
    assert d.status == Status.BLOCKED
    [error] = with_action(fake, d.thread_ref, '"fail:retry"')
    assert [b["text"]["text"] for b in buttons(error)] == ["Retry", "Skip", "Stop"]
    assert "blocked" in error.text and "overloaded" in error.text
    header = fake.find("C0001", d.thread_ref)
    assert header is not None and "Blocked" in json.dumps(header.blocks), "the header says it is blocked"
    assert [b["text"]["text"] for b in buttons(header)] == ["Retry", "Stop", "Export"]
    await slack.click(error.ts, "fail:skip", d.id, user="U0003")  # the opening can't be skipped
    await server.idle()
    assert "can't be skipped" in fake.ephemerals[-1]["text"] and fake.ephemerals[-1]["user"] == "U0003"
    await slack.click(error.ts, "fail:retry", d.id, user="U0003")
    await server.idle()
    assert (await only(server)).status == Status.WAITING
    header = fake.find("C0001", d.thread_ref)
    assert header is not None and "Waiting for the next step" in json.dumps(header.blocks)
    assert [b["text"]["text"] for b in buttons(header)] == ["Stop", "Export"], "the choice offers the next step"
    thread = fake.thread("C0001", d.thread_ref)
    assert not any("is thinking" in m.text for m in thread)
    settled = fake.find("C0001", error.ts)
    assert settled is not None and not buttons(settled) and "Ines chose *Retry*" in json.dumps(settled.blocks)


async def test_deep_dive_asks_for_the_topic_with_the_suggestion_filled_in(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    [choice] = with_action(fake, d.thread_ref, '"next:deep_dive"')
    await slack.click(choice.ts, "next:deep_dive", f"{d.id}|deep_dive", user="U0002")
    await server.idle()
    assert (await only(server)).round == 1, "nothing is chosen until the form is sent"
    [opened] = fake.views
    form = opened["view"]
    suggestion = form["blocks"][0]["element"]["initial_value"]
    assert form["callback_id"] == "council_next_topic" and suggestion

    submit = fixture("view_submission")
    submit["user"] = {"id": "U0002", "username": "lee", "name": "lee", "team_id": "T0001"}
    submit["view"] |= {"callback_id": "council_next_topic", "private_metadata": form["private_metadata"]}
    submit["view"]["state"]["values"] = {"topic": {"value": {"type": "plain_text_input", "value": "   "}}}
    status, body = await slack.interaction(submit)
    assert status == 200 and json.loads(body)["errors"] == {"topic": "Please give the topic for the next round."}
    submit["view"]["state"]["values"]["topic"]["value"]["value"] = "Offline &lt;sync&gt; for field staff"
    await slack.interaction(submit)
    await server.idle()
    d = await only(server)
    assert d.round == 2 and d.round_topic == "Offline <sync> for field staff"
    assert any("chose" in m.text and "Offline" in m.text for m in fake.thread("C0001", d.thread_ref))


def assert_choice_offers_pause_and_synthesize(fake: FakeSlack, thread: str) -> None:
    """One message in the thread offers Pause and Synthesize: the round's choice, still open."""
    offering = [m for m in [*fake.thread("C0001", thread), fake.find("C0001", thread)] if m is not None and
                {"Pause", "Synthesize"} & {(b.get("text") or {}).get("text") for b in buttons(m)}]
    assert len(offering) == 1, [m.text for m in offering]
    [choice] = offering
    assert {"Pause", "Synthesize"} <= {(b.get("text") or {}).get("text") for b in buttons(choice)}
    assert '"next:another_round"' in json.dumps(choice.blocks), "it is the round's choice"


async def test_a_typed_schedule_leaves_pause_and_synthesize_on_the_round_s_choice_alone(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    assert_choice_offers_pause_and_synthesize(fake, d.thread_ref)
    await slack.command(f'schedule {d.id} "tomorrow 09:00"')
    await server.idle()
    text, labels = header_state(fake, d.thread_ref)
    assert "next round <!date^" in text, "the header shows the round scheduled"
    assert labels == ["Stop", "Export"], "Pause and Synthesize stay on the round's choice, not twice"
    assert_choice_offers_pause_and_synthesize(fake, d.thread_ref)


def header_state(fake: FakeSlack, thread: str) -> tuple[str, list[str]]:
    """What the thread's parent says of the discussion now, and the labels of its buttons."""
    header = fake.find("C0001", thread)
    assert header is not None
    return json.dumps(header.blocks, ensure_ascii=False), [b["text"]["text"] for b in buttons(header)]


async def test_the_header_shows_where_the_discussion_stands_and_only_the_buttons_that_fit(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    text, labels = header_state(fake, d.thread_ref)
    assert "Waiting for the next step to be chosen" in text and "Round 1 ·" in text
    assert f"${d.cost_usd:.2f} spent of ${d.budget_usd:.2f}" in text, "the running cost is in the header"
    assert labels == ["Stop", "Export"], "Pause and Synthesize are on the round's choice, not twice"

    await slack.click(d.thread_ref, "ctl:pause", d.id)
    await server.idle()
    text, labels = header_state(fake, d.thread_ref)
    assert "Paused · Round 1" in text and "Waiting for Resume" in text
    assert labels == ["Resume", "Synthesize", "Stop", "Export"], "no Pause on a paused discussion"

    await slack.command(f'schedule {d.id} "tomorrow 09:00"')
    await server.idle()
    text, _ = header_state(fake, d.thread_ref)
    assert "next round <!date^" in text, "the scheduled round, in each reader's zone"

    await slack.click(d.thread_ref, "ctl:resume", d.id)
    await server.idle()
    assert (await only(server)).status == Status.WAITING
    text, labels = header_state(fake, d.thread_ref)
    # A round is scheduled, and the round's choice waits in the thread until it starts: the one place for them.
    assert "Waiting for the next step to be chosen" in text and labels == ["Stop", "Export"]
    assert_choice_offers_pause_and_synthesize(fake, d.thread_ref)

    await slack.click(d.thread_ref, "ctl:stop", d.id)
    await server.idle()
    text, labels = header_state(fake, d.thread_ref)
    assert "Stopped in round 1" in text and labels == ["Export"]
    edits = [str(u.params["blocks"]) for u in fake.called("chat.update") if u.params.get("ts") == d.thread_ref]
    states = ("Running", "Waiting for the next step", "Pausing", "Paused", "Stopped")
    shown = [next(s for s in states if s in e) + (" (scheduled)" if "next round <!date^" in e else "") for e in edits]
    assert shown == ["Running", "Waiting for the next step", "Pausing", "Paused", "Paused (scheduled)", "Running",
                     "Waiting for the next step (scheduled)", "Stopped"], "one edit per change of state, in order"


async def test_a_persons_quick_clicks_count_in_the_order_they_were_made(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    _, poll, poll_id = await first_poll(slack, server, fake, "Should we move the office to Porto?")
    answer = asyncio.Event()

    async def slow_lookup() -> None:  # Slack answers the first click's look-up only once the second click is in
        await asyncio.wait_for(answer.wait(), 30)  # a guard against a hang, not a pace

    fake.latency["users.info"].append(slow_lookup)
    await slack.click(poll.ts, "vote:0", f"{poll_id}|0", user="U0003")
    await slack.click(poll.ts, "vote:1", f"{poll_id}|1", user="U0003")  # she changed her mind at once
    answer.set()
    await server.idle()
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [live] = [b for b in await tx.ballots(poll_id) if b.voter_id == "U0003"]
    assert live.choice == 1, "her last click is her vote"
    shown = fake.find("C0001", poll.ts)
    assert shown is not None
    lines = [line for line in json.dumps(shown.blocks).split("\\n") if "Ines" in line]
    assert len(lines) == 1 and lines[0].startswith("2. ") and "1 vote (Ines)" in lines[0], "shown on option 2"
