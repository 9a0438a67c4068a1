"""One question on the table, end to end through signed Slack payloads: advisors and people choose from the same
options, and a person counts once a question whatever polls of the round they vote on."""

from __future__ import annotations

import json
import re

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_threads import only
from tests.fakes.slack_api import FakeSlack, Msg

server = skipping.server  # the app on skipping time, in place of the conftest's


def polls(fake: FakeSlack, thread: str) -> list[Msg]:
    return [m for m in fake.thread("C0001", thread) if '"vote:0"' in json.dumps(m.blocks)]


def vote_buttons(m: Msg) -> list[dict[str, str]]:
    return [e for b in m.blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"].startswith("vote:")]


def verdict_of(m: Msg) -> str:
    found = re.search(r"Verdict:\*?\*? (.+)", m.text)
    assert found is not None, m.text
    return found.group(1)


async def test_a_council_on_an_either_or_topic_offers_its_alternatives_and_counts_a_persons_vote(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Postgres or MySQL for the new service? --flow council --rounds 1")
    await server.idle()
    d = await only(server)
    thread = fake.thread("C0001", d.thread_ref)
    asked = next(m for m in thread if "The question:" in m.text)
    assert "Choose Postgres [O1]" in asked.text and "Choose MySQL for the new service [O2]" in asked.text
    # The advisors' stances name those options, shown with their labels.
    advisors = [m for m in thread if "Stance: O" in m.text]
    assert advisors and all(re.search(r"Stance: O[12] \(Choose (Postgres|MySQL for the new service)\)", m.text)
                            for m in advisors)
    [poll] = polls(fake, d.thread_ref)
    labels = [b["text"]["text"] for b in vote_buttons(poll)]
    assert labels == ["Choose Postgres", "Choose MySQL for the new service"], "never For / Against"
    closing = next(m for m in fake.thread("C0001", d.thread_ref) if "Referee's reading" in m.text)
    before = verdict_of(closing)
    assert "people: no votes" in before and not re.search(r"(: |· )(for|against) \d", before)
    poll_id = vote_buttons(poll)[1]["value"].split("|")[0]
    await slack.click(poll.ts, "vote:1", f"{poll_id}|1", user="U0002")
    await server.idle()
    edited = fake.find("C0001", closing.ts)
    assert edited is not None
    after = verdict_of(edited)
    assert "people: Choose MySQL for the new service [O2] 1 of 1" in after, after
    assert set(re.findall(r"\[(O\d+)\]", after)) <= {"O1", "O2"}
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    assert record.people == {"Choose MySQL for the new service [O2]": 1} and record.verdict == after


async def test_one_person_voting_on_both_polls_of_a_round_counts_once(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we move to trunk-based development?")
    await server.idle()
    d = await only(server)
    [round_poll] = polls(fake, d.thread_ref)
    first_id = vote_buttons(round_poll)[1]["value"].split("|")[0]
    label = vote_buttons(round_poll)[1]["text"]["text"]  # the question's second answer
    await slack.click(round_poll.ts, "vote:1", f"{first_id}|1", user="U0002")  # Lee: the second option
    await server.idle()
    choice = next(m for m in fake.thread("C0001", d.thread_ref) if '"next:synthesize"' in json.dumps(m.blocks))
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize")
    await server.idle()
    final = polls(fake, d.thread_ref)[-1]
    assert final.ts != round_poll.ts
    final_id = next(b["value"] for b in vote_buttons(final) if b["text"]["text"] == label).split("|")[0]
    index = [b["text"]["text"] for b in vote_buttons(final)].index(label)
    await slack.click(final.ts, f"vote:{index}", f"{final_id}|{index}", user="U0002")  # Lee again, same option
    await server.idle()
    closing = next(m for m in fake.thread("C0001", d.thread_ref) if "Final synthesis" in m.text)
    edited = fake.find("C0001", closing.ts)
    assert edited is not None
    verdict = verdict_of(edited)
    assert f"people: {label} [O2] 1 of 1" in verdict, verdict  # one person, one vote: never "2 of 2"
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    assert record.people == {f"{label} [O2]": 1}
    # She changes her mind on the final poll: her latest choice stands, still counted once.
    await slack.click(final.ts, "vote:0", f"{final_id}|0", user="U0002")
    await server.idle()
    edited = fake.find("C0001", closing.ts)
    assert edited is not None and "people: " in verdict_of(edited) and " 1 of 1" in verdict_of(edited)
    assert f"{label} [O2]" not in verdict_of(edited).split("people:")[1]
