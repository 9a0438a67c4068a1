"""Block Kit rendering: mrkdwn, limits, splitting, identities, the offline label, metadata."""

from __future__ import annotations

import json

from adapters.slack.render import MESSAGE_CHARS, button_label, mrkdwn, render, split_text
from core.models import Action, Persona, PollView, Post, Role
from tests.fakes.slack_api import block_error

ADA = Persona(key="ada", name="Ada", role=Role.EXPERT, title="Engines", icon=":gear:")


def test_light_markdown_becomes_mrkdwn() -> None:
    assert mrkdwn("**Agreements**\n- one\n- two") == "*Agreements*\n• one\n• two"
    assert mrkdwn("## Title\nuse *care* & <b>") == "*Title*\nuse _care_ &amp; &lt;b&gt;"
    assert mrkdwn("see [docs](https://x.test/a?b=1)") == "see <https://x.test/a?b=1|docs>"


def test_split_text_cuts_at_paragraphs_then_words() -> None:
    text = "\n\n".join(["alpha " * 100, "beta " * 100, "gamma " * 1000])
    pieces = split_text(text, 1000)
    assert all(len(p) <= 1000 for p in pieces) and pieces[0].startswith("alpha") and pieces[1].startswith("beta")
    assert " ".join("".join(pieces).split()) != "" and sum(p.count("gamma") for p in pieces) == 1000


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
