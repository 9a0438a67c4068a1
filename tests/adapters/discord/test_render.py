"""Rendering posts for Discord: limits, identities, labels and persistent buttons."""

from __future__ import annotations

from adapters.discord import render
from adapters.discord.views import CouncilButton
from core.models import Action, Persona, Post, Role

ADA = Persona(key="ada", name="Ada", role=Role.EXPERT, title="Analyst", icon=":bulb:")


def test_split_respects_the_limit_and_keeps_every_word() -> None:
    text = "\n\n".join(" ".join(f"w{p}_{i}" for i in range(120)) for p in range(12))
    chunks = render.split(text)
    assert len(chunks) > 1 and all(len(c) <= 2000 for c in chunks)
    assert " ".join(chunks).split() == text.split()
    assert render.split("x" * 4500) == ["x" * 2000, "x" * 2000, "x" * 500]


def test_webhook_names_are_made_acceptable() -> None:
    assert render.sanitize_name("Discord Expert") == "Disc0rd Expert"
    assert render.sanitize_name("clyde") == "c1yde"
    assert render.sanitize_name("everyone") == "everyone (persona)"
    assert render.sanitize_name("@here") == "here (persona)"
    assert render.sanitize_name("  ") == "Council"
    assert len(render.sanitize_name("A" * 200)) == 80
    assert render.sanitize_name("Dr. #Mara: ```x```") == "Dr. Mara x"


def test_a_persona_post_for_a_webhook() -> None:
    post = Post(kind="turn", key="k", text="y " * 1500, persona=ADA, title="Round 1 · Opening", offline=True)
    messages = render.render(post, webhook=True)
    assert len(messages) == 2 and messages[0].content.startswith("-# Round 1 · Opening\n")
    assert messages[-1].content.endswith(render.OFFLINE)
    assert render.identity(ADA) == {"username": "Ada", "avatar_url": render.AVATAR_BASE + "1f4a1.png"}
    assert messages[0].payload()["allowed_mentions"] == {"parse": []}


def test_a_persona_post_without_a_webhook_is_an_embed_with_the_persona_as_author() -> None:
    [message] = render.render(Post(kind="turn", key="k", text="Hello", persona=ADA, title="R1"), webhook=False)
    embed = message.embeds[0].to_dict()
    assert embed["author"]["name"] == "Ada · Analyst" and embed["description"] == "Hello"
    assert embed["footer"]["text"] == "R1"


def test_buttons_are_persistent_dynamic_items() -> None:
    actions = [Action(id=f"next:a{i}", label=f"Option {i} " + "x" * 90, value=f"ab12|a{i}") for i in range(6)]
    [message] = render.render(Post(kind="choice", key="k", text="Next?", actions=actions), webhook=False,
                              reply_to="ab12")
    assert message.view is not None and message.view.timeout is None
    assert all(isinstance(item, CouncilButton) for item in message.view.children)
    rows = message.payload()["components"]
    assert len(rows) == 2 and sum(len(r["components"]) for r in rows) == 7
    assert all(len(b["label"]) <= 80 and len(b["custom_id"]) <= 100 for r in rows for b in r["components"])
    assert rows[-1]["components"][-1]["custom_id"] == "cl|reply|ab12"


def test_header_and_shortcodes() -> None:
    post = Post(kind="header", key="h", title="T" * 300, text=":scroll: **Historian** :unknown_code:",
                offline=True, actions=[Action(id="ctl:stop", label="Stop", value="ab12", style="danger")])
    [message] = render.render(post, webhook=False)
    embed = message.embeds[0].to_dict()
    assert len(embed["title"]) == 256  # the topic too long for the title is shown whole above the text
    assert embed["description"] == f"**Topic:** {'T' * 300}\n\n📜 **Historian** :unknown_code:"
    assert "offline" in embed["footer"]["text"]
    assert message.payload()["components"][0]["components"][0]["style"] == 4


def test_mentions_ping_only_the_named_people() -> None:
    [message] = render.render(Post(kind="notice", key="n", text="Round 2 starts.", mentions=["42", "@here"]),
                              webhook=False)
    assert message.content == "<@42> Round 2 starts."
    assert message.payload()["allowed_mentions"] == {"parse": [], "users": ["42"]}
