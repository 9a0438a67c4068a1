"""One moderated round in a Slack thread, as a team reads it: Dana replies and votes, then asks for the synthesis.
Every message is counted by what it is (the key in its metadata); one not in the expected list fails the test."""

from __future__ import annotations

import json
import re
from collections import Counter

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's


def kind(key: str, discussion_id: str) -> str:
    """A post's kind read from its key: the last part that is no round, step or counter."""
    parts = [p for p in key.removeprefix(discussion_id + ":").split(":")
             if not re.fullmatch(r"r\d+|s\d+|\d+", p)]
    return ":".join(parts[:1] + (["poll"] if parts[-1:] == ["poll"] and len(parts) > 1 else []))


async def test_one_round_reads_one_post_per_event(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we rewrite billing in Rust? --flow moderated")
    await server.idle()
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    await slack.reply(d.thread_ref, "We lost 3 customers in March to billing errors; what would Rust fix?")
    before = len(fake.calls)
    await server.idle()
    [mine] = [m for m in fake.thread("C0001", d.thread_ref) if m.user == "U0001"]
    after = [(c.method, c.params.get("name")) for c in fake.calls[before:]
             if c.method in ("reactions.add", "chat.postMessage")]
    assert after[0] == ("reactions.add", "eyes"), "heard at once: 👀 before any turn's post"
    poll = next(m for m in fake.thread("C0001", d.thread_ref) if "vote:0" in json.dumps(m.blocks))
    await slack.click(poll.ts, "vote:0", json.loads(json.dumps(poll.blocks))[1]["elements"][0]["value"])
    await server.idle()
    choice = next(m for m in fake.thread("C0001", d.thread_ref) if "next:synthesize" in json.dumps(m.blocks))
    header = fake.find("C0001", d.thread_ref)
    assert header is not None
    offered = [e["action_id"] for m in (header, choice) for b in m.blocks if b["type"] == "actions"
               for e in b["elements"]]
    assert not {"ctl:pause", "ctl:synthesize"} & set(offered) and {"next:pause", "next:synthesize"} <= set(offered), \
        "Pause and Synthesize offered once: on the round's choice, not again on the header"
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize|1")
    await server.idle()

    thread = fake.thread("C0001", d.thread_ref)
    bots = [m for m in thread if m.user != "U0001"]
    keys = [str(((m.metadata or {}).get("event_payload") or {}).get("key") or "") or ("charts" if m.files else "")
            for m in bots]
    assert all(keys), [m.text for m, k in zip(bots, keys, strict=True) if not k]
    counted = Counter(kind(k, d.id) for k in keys)
    experts = ["amara_okafor", "kenji_watanabe", "lucia_fernandez", "priya_raghunathan"]
    assert counted == Counter({
        "header": 1,
        "roster": 1,  # the question on the table: the roster's answers as the options people and personas choose from
        "moderator": 2,  # the opening and the round's synthesis
        **{e: 2 for e in experts},  # a statement and a rebuttal each
        "contrarian": 1, "cross_domain": 1,
        "moderator:poll": 1,  # the round's vote
        "h1": 1,  # the Moderator's answer to Dana
        "document": 1,  # one canvas notice per discussion
        "choice": 1,  # the round's choice, which shows what Dana chose
        "final": 1, "final:poll": 1, "charts": 1,
    }), counted
    checks = [(kind(k, d.id), e["type"]) for m, k in zip(bots, keys, strict=True)
              for b in m.blocks if b["type"] == "actions" for e in b["elements"] if e["action_id"] == "check:claims"]
    assert {t for _, t in checks} == {"overflow"}, "in each post's menu, never a button of its own"
    # Check claims only where the evidence rules find a claim (the statements' figures, the analogy's dated crash):
    # never on the Moderator's answer to Dana, the rebuttals, or any post of the bot's own.
    assert Counter(k for k, _ in checks) == Counter({**{e: 1 for e in experts}, "cross_domain": 1}), checks
    [choice_now] = [m for m in bots if m.ts == choice.ts]
    assert "Dana chose *Synthesize*" in json.dumps(choice_now.blocks, ensure_ascii=False), "shown where it was made"
    assert sum("chose *Synthesize*" in json.dumps(m.blocks, ensure_ascii=False) for m in bots) == 1
    [charts] = [m for m in bots if m.files]
    assert "\n" not in charts.text and "Bar chart of" not in charts.text, "a one-line caption, not its alt text"
    assert mine.reactions.get("white_check_mark") == ["UBOT"], "answered: ✅ once the Moderator's answer is in"
