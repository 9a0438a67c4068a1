"""Block Kit rendering: mrkdwn, limits, splitting, identities, the offline label, metadata."""

from __future__ import annotations

import json

import pytest

from adapters.slack.announce import announcement
from adapters.slack.interactions import action_command
from adapters.slack.markup import mrkdwn, split_text
from adapters.slack.render import MESSAGE_CHARS, button_label, render
from adapters.slack.translate import Who
from core.control.commands import CastBallot
from core.models import Action, Persona, PollView, Post, Role
from tests.fakes.slack_api import LIMITS, block_error, block_text

ADA = Persona(key="ada", name="Ada", role=Role.EXPERT, title="Engines", icon=":gear:")


def test_light_markdown_becomes_mrkdwn() -> None:
    assert mrkdwn("**Agreements**\n- one\n- two") == "*Agreements*\n• one\n• two"
    assert mrkdwn("## Title\nuse *care* & <b>") == "*Title*\nuse _care_ &amp; &lt;b&gt;"
    assert mrkdwn("see [docs](https://x.test/a?b=1)") == "see <https://x.test/a?b=1|docs>"


@pytest.mark.parametrize(("text", "shown"), [
    ("~~struck~~ and __under__", "~struck~ and *under*"),
    ("### Heading", "*Heading*"),
    ("intro\n\n  - indented", "intro\n\n  • indented"),
    ("intro\n\u2003+ after a wide space", "intro\n\u2003• after a wide space"),
    ("* starred", "• starred"),
    ("*only italic*", "_only italic_"),
    ("when ⟦t:1700000000:America/New_York⟧", "when <!date^1700000000^{date_short_pretty} {time}|"),
])
def test_each_mark_is_converted_wherever_it_stands(text: str, shown: str) -> None:
    assert mrkdwn(text).startswith(shown)


def test_a_turn_with_no_marks_comes_back_only_escaped() -> None:
    text = "Trunk-based work - as we saw - costs 3 + 4 hours & more.\n\nStance: O1 — pilot"
    assert mrkdwn(text) == text.replace("&", "&amp;")


def test_split_text_cuts_at_paragraphs_then_words() -> None:
    text = "\n\n".join(["alpha " * 100, "beta " * 100, "gamma " * 1000])
    pieces = split_text(text, 1000)
    assert all(len(p) <= 1000 for p in pieces) and pieces[0].startswith("alpha") and pieces[1].startswith("beta")
    assert " ".join(pieces).split() == text.split(), "every word, once, in order"


def test_long_turns_split_into_messages_slack_accepts() -> None:
    post = Post(kind="turn", key="k", text=("**Evidence.** " + "word " * 2000 + "\n\n") * 6, persona=ADA,
                title="Round 1 · Statement", offline=True)
    messages = render(post)
    assert len(messages) > 1
    for i, m in enumerate(messages):
        assert not block_error(m.blocks) and len(m.blocks) <= 50
        assert sum(len(json.dumps(b)) for b in m.blocks) < MESSAGE_CHARS + 3000
        assert m.username == "Ada" and m.icon_emoji == ":gear:" and "Offline model" in json.dumps(m.blocks)
        assert m.metadata == {"event_type": "council_post", "event_payload": {"key": "k", "part": i}}


def test_buttons_polls_and_edits() -> None:
    assert len(button_label("x" * 200)) == 75
    view = PollView(poll_id=3, question="Which?", options=["A " * 60, "B"], counts=[1, 0], voters=[["Dana"], []])
    post = Post(kind="poll", key="p", text="**Vote: Which?**\n1. A — 1 vote (Dana)", poll=view,
                actions=[Action(id="vote:0", label="A " * 60, value="3|0"),
                         Action(id="vote:1", label="B", value="3|1")])
    [m] = render(post)
    buttons = [e for b in m.blocks if b["type"] == "actions" for e in b["elements"]]
    assert [b["value"] for b in buttons] == ["3|0", "3|1"] and len(buttons[0]["text"]["text"]) <= 75
    edit = Post(kind="header", key="h:roster", replaces="h", title="T" * 300, text="x", roster=[ADA])
    [h] = render(edit)
    assert h.metadata["event_payload"]["key"] == "h" and not block_error(h.blocks)
    assert "*Ada* — Engines _(expert)_" in json.dumps(h.blocks, ensure_ascii=False)


def test_mentions_open_the_first_section_and_the_notification_text() -> None:
    post = Post(kind="notice", key="k", text="⏰ Scheduled round 2 starts now.",
                mentions=["U0001", "W02ABC", "U0001", "cli-user", "123456789012345678", "<@U9>", "USLACKBOT", ""])
    [m] = render(post)
    assert m.text == "<@U0001> <@W02ABC> ⏰ Scheduled round 2 starts now."  # each once; non-Slack ids dropped
    assert m.blocks[0]["text"]["text"] == m.text
    [titled] = render(post.model_copy(update={"title": "Reminder", "offline": True}))
    assert titled.text.startswith("<@U0001> <@W02ABC> [offline model] *Reminder*")
    assert titled.blocks[0]["text"]["text"] == "<@U0001> <@W02ABC> *Reminder*"
    [header] = render(Post(kind="header", key="h", title="Topic", text="Hello", mentions=["U0001"]))
    assert header.text == "<@U0001> Council: Topic"
    assert next(b for b in header.blocks if b["type"] == "section")["text"]["text"] == "<@U0001> Hello"
    [nobody] = render(post.model_copy(update={"mentions": ["cli-user"]}))
    assert nobody.text == "⏰ Scheduled round 2 starts now."


def test_markdown_links_become_slack_links_that_emphasis_and_splitting_leave_whole() -> None:
    assert mrkdwn("- [Plan](https://x.test/a_b__c__d*e*?q=1&r=2) · **done**") == \
        "• <https://x.test/a_b__c__d*e*?q=1&amp;r=2|Plan> · *done*"
    assert mrkdwn("[Foo](https://en.wikipedia.org/wiki/Foo_(bar)).") == "<https://en.wikipedia.org/wiki/Foo_(bar)|Foo>."
    assert mrkdwn("[a|b <c>](https://x.test)") == "<https://x.test|a¦b &lt;c&gt;>"
    assert mrkdwn("[not a link](javascript:alert(1))") == "[not a link](javascript:alert(1))"
    text = mrkdwn(" ".join(f"[topic number {i}](https://x.test/{i})" for i in range(200)))
    pieces = split_text(text, 500)
    assert all(len(p) <= 500 and p.count("<") == p.count(">") for p in pieces)


def test_an_announcement_too_long_for_one_message_names_everything_in_the_first() -> None:
    lines = [f"- [Topic {i} {'x' * 70}](https://x.test/archives/C1/p{i:016d}) · done · " + "detail " * 60
             if i % 2 else f"- “Unlinked topic {i}” · done · " + "detail " * 60 for i in range(80)]
    post = Post(kind="notice", key="digest:1:x", title="Council digest", text="**Council digest** · today\n\n"
                "**Discussions (80)**\n" + "\n".join(lines) + "\n\nCost this period: $0.00")
    top, replies = announcement(post)
    assert replies and not block_error(top.blocks) and block_text(top.blocks) <= LIMITS["block_text"]
    shown = json.dumps(top.blocks, ensure_ascii=False)
    assert all(f"|Topic {i} " in shown if i % 2 else f"“Unlinked topic {i}”" in shown for i in range(80))
    assert top.metadata["event_payload"] == {"key": "digest:1:x", "part": 0}
    assert [r.metadata["event_payload"]["part"] for r in replies] == list(range(1, len(replies) + 1))
    assert all(not block_error(r.blocks) and block_text(r.blocks) <= LIMITS["block_text"] for r in replies)
    assert "Cost this period" in json.dumps([r.blocks for r in replies])
    short = post.model_copy(update={"text": "**Council digest** · today\n\n- [A](https://x.test/a) · done"})
    assert announcement(short)[1] == []
    between = post.model_copy(update={"text": "\n\n".join(["word " * 380] * 5)})  # two by render, one here
    assert len(render(between)) == 2 and announcement(between)[1] == []


def test_a_choice_longer_than_a_select_allows_is_split_over_menus_each_naming_its_range() -> None:
    picks = [Action(id=f"pick:{i}", label=f"Option {i}", value=f"7|{i}") for i in range(1, 131)]
    [message] = render(Post(kind="poll", key="d1:poll", text="Rank them", actions=picks))
    assert not block_error(message.blocks)
    menus = [e for b in message.blocks if b["type"] == "actions" for e in b["elements"]
             if e["type"] == "static_select"]
    assert [m["action_id"] for m in menus] == ["pick", "pick:2"]
    assert [len(m["options"]) for m in menus] == [LIMITS["select_options"], 130 - LIMITS["select_options"]]
    assert [o["value"] for m in menus for o in m["options"]] == [f"7|{i}" for i in range(1, 131)]  # none left out
    assert [m["placeholder"]["text"] for m in menus] == ["Choose (1–100)…", "Choose (101–130)…"]
    assert action_command("pick:2", "7|120", Who("U1")) == CastBallot(poll_id=7, choice=120, user_id="U1",
                                                                      user_name="U1", is_admin=False, groups=[])
