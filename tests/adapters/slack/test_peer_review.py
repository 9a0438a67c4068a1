"""Peer review from Slack: `--peer-review` on /council, and a reviewed round in the thread (the fake counts posts)."""

from __future__ import annotations

from adapters.slack import translate as tr
from adapters.slack.server import SlackServer
from core.control import commands as c
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.fakes.llm import ScriptedLLM
from tests.fakes.slack_api import FakeSlack, Msg

server = skipping.server  # the app on skipping time, in place of the conftest's

WHO = tr.Who("U1", "Dana")


def start(text: str) -> c.StartDiscussion:
    cmd = tr.parse_council(text, who=WHO, team_id="T1", channel_id="C1", default_tz="UTC").command
    assert isinstance(cmd, c.StartDiscussion)
    return cmd


def test_the_peer_review_flag() -> None:
    assert start("Adopt Rust? --peer-review --flow council").peer_review is True
    assert start("Adopt Rust?").peer_review is False
    assert "`--peer-review`" in tr.HELP


def thread(fake: FakeSlack, anchor: str) -> list[Msg]:
    return [m for m in fake.messages if m.thread_ts == anchor]


async def test_a_reviewed_council_adds_one_post_per_round_and_names_the_authors_there_alone(
        slack: Slack, server: SlackServer, fake: FakeSlack, llm: ScriptedLLM) -> None:
    await slack.command("Should we adopt Rust? --flow council --rounds 2 --no-memory")
    await server.idle()
    await slack.command("Should we adopt Go? --flow council --rounds 2 --peer-review --no-memory")
    await server.idle()
    plain_anchor, reviewed_anchor = [m.ts for m in fake.messages if m.thread_ts is None and m.metadata][:2]
    plain, reviewed = thread(fake, plain_anchor), thread(fake, reviewed_anchor)
    aggregates = [m for m in reviewed if "Peer review, round" in m.text + str(m.blocks)]
    assert len(aggregates) == 2, [m.text[:60] for m in reviewed]
    assert len(reviewed) == len(plain) + 2, "one aggregate per round, and no review posted on its own"
    # Three advisors review each round: six light calls, none of them a post under a persona's name.
    asked = [p for p in llm.prompts if p.purpose.phase.value == "peer_review"]
    assert len(asked) == 6 and {p.tier for p in asked} == {"light"}
    for prompt in asked:
        words = "\n".join([*(b.text for b in prompt.shared), prompt.instruction])
        for name in ("Pragmatist", "Visionary", "Skeptic", ":hammer_and_wrench:", ":telescope:", ":mag:"):
            assert name.lower() not in words.lower() or name == prompt.purpose.persona, (name, words)
    first = aggregates[0].text + str(aggregates[0].blocks)
    assert all(name in first for name in ("Pragmatist", "Visionary", "Skeptic"))
    # Shown before the referee's verdict, which reads every round's aggregate.
    verdict = next(i for i, m in enumerate(reviewed) if m.username == "Referee" and "verdict" in (
        m.text + str(m.blocks)).lower())
    assert reviewed.index(aggregates[1]) < verdict
    [final] = [p for p in llm.prompts if p.purpose.phase.value == "final_synthesis" and "Go" in p.purpose.topic]
    assert "Round 1:" in final.instruction and "Round 2:" in final.instruction
