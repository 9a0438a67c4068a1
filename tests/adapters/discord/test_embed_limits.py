"""Discord's embed and select limits: the fake refuses what Discord refuses (400, its error shape), and Council's
posts keep every limit by going on in more fields or messages, never by cutting text off."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import discord
import pytest

from adapters.discord import render
from core.models import Action, Discussion, Persona, Post, Role, Status
from tests.adapters.discord.conftest import Council
from tests.fakes import discord_rules as r

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)


def embed_text(e: dict[str, Any]) -> str:
    return "\n".join([e.get("description") or "", *(f["value"] for f in e.get("fields") or [])])


def within_limits(message: render.Message) -> None:
    body = message.payload()
    assert len(body["content"]) <= 2000
    assert r.embed_errors(body["embeds"]) == {}, r.embed_errors(body["embeds"])
    assert r.select_errors(body.get("components") or []) == {}


@pytest.mark.parametrize(("embed", "where"), [
    ({"author": {"name": "a" * 257}}, {"0": {"author": {"name": r.too_long(256)}}}),
    ({"title": "t" * 257}, {"0": {"title": r.too_long(256)}}),
    ({"description": "d" * 4097}, {"0": {"description": r.too_long(4096)}}),
    ({"footer": {"text": "f" * 2049}}, {"0": {"footer": {"text": r.too_long(2048)}}}),
    ({"fields": [{"name": "n", "value": "v" * 1025}]}, {"0": {"fields": {"0": {"value": r.too_long(1024)}}}}),
    ({"fields": [{"name": "n", "value": "v"}] * 26}, {"0": {"fields": r.too_long(25)}}),
])
def test_the_fake_names_each_embed_limit_broken_as_discord_does(embed: dict[str, Any], where: dict[str, Any]) -> None:
    assert r.embed_errors([embed]) == {"embeds": where}


def test_the_fake_counts_6000_characters_over_all_the_embeds_of_a_message() -> None:
    within = [{"description": "d" * 3000}, {"description": "d" * 3000}]
    assert r.embed_errors(within) == {}
    over = [*within, {"title": "t"}]
    assert r.embed_errors(over)["embeds"]["2"]["_errors"][0]["code"] == "MAX_EMBED_SIZE_EXCEEDED"
    assert r.select_errors([{"type": 1, "components": [{"type": 3, "options": [{}] * 26}]}]) != {}


async def test_a_message_past_a_limit_is_refused_with_discords_400_and_its_errors(council: Council) -> None:
    fake = council.fake
    route = discord.http.Route("POST", "/channels/{channel_id}/messages", channel_id=fake.channel_id)
    with pytest.raises(discord.HTTPException) as refused:
        await council.client.http.request(route, json={"embeds": [{"description": "x", "author": {"name": "a" * 300}}]})
    assert refused.value.status == 400 and refused.value.code == 50035
    assert "embeds.0.author.name" in refused.value.text and "Must be 256 or fewer in length." in refused.value.text


async def test_a_long_header_is_all_shown_within_every_limit_on_discord(council: Council) -> None:
    fake = council.fake
    lines = [f"Line {i}: " + "the roster and its reasons " * 12 for i in range(60)]  # ~20,000 characters
    d = Discussion(id="c0ffee02", topic="Topic X", platform="discord", workspace=fake.guild_id,
                   channel=fake.channel_id, status=Status.RUNNING, created_at=NOW, updated_at=NOW)
    post = Post(kind="header", key="c0ffee02:header", title="T" * 300, text="\n".join(lines), state="Round 1")
    messages = render.render(post, webhook=False)
    assert len(messages) > 1
    for m in messages:
        within_limits(m)
    d.thread_ref = await council.chat.publish(d, post)
    first = next(m for m in fake.messages[fake.channel_id] if m["id"] == d.thread_ref)
    rest = [m for m in fake.thread_messages(d.thread_ref) if m["id"] != d.thread_ref]
    shown = " ".join(" ".join(embed_text(e) for m in [first, *rest] for e in m["embeds"]).split())
    positions = [shown.index(" ".join(line.split())) for line in lines]  # split at words, never cut
    assert positions == sorted(positions) and "Round 1" in shown and "T" * 300 in shown


def test_a_persona_whose_titles_do_not_fit_the_author_and_footer_has_them_at_the_top_of_its_text() -> None:
    p = Persona(key="x", name="Ada Lovelace", role=Role.EXPERT, title="Analytical engines " * 20, icon=":gear:")
    post = Post(kind="turn", key="k", text="I think we should.", persona=p, title="Round 1 " * 300)
    messages = render.render(post, webhook=False)
    for message in messages:
        within_limits(message)
        assert message.embeds[0].to_dict()["author"]["name"] == "Ada Lovelace"
    shown = " ".join(" ".join(m.embeds[0].to_dict()["description"] for m in messages).split())
    assert " ".join(p.title.split()) in shown and " ".join(post.title.split()) in shown
    short = Persona(key="y", name="Ada", role=Role.EXPERT, title="Engines", icon=":gear:")
    [plain] = render.render(Post(kind="turn", key="k", text="Yes.", persona=short, title="Round 1"), webhook=False)
    assert plain.embeds[0].to_dict()["author"]["name"] == "Ada · Engines"  # it fits: the author line holds it


def test_a_choice_longer_than_a_menu_allows_is_split_over_menus_none_left_out() -> None:
    picks = [Action(id=f"pick:{i}", label=f"Option {i}", value=f"7|{i}") for i in range(1, 141)]
    messages = render.render(Post(kind="poll", key="k", text="Rank them", actions=[
        *picks, Action(id="poll:close", label="Close", value="7")]), webhook=False)
    menus = [c for m in messages if m.view is not None for row in m.payload()["components"]
             for c in row["components"] if c["type"] == 3]
    for m in messages:
        within_limits(m)
        assert len(m.payload().get("components") or []) <= 5
    assert [o["value"] for menu in menus for o in menu["options"]] == [str(i) for i in range(1, 141)]
    assert menus[0]["placeholder"] == "Choose (1–25)…" and menus[-1]["placeholder"] == "Choose (126–140)…"
    assert len({menu["custom_id"] for menu in menus}) == len(menus)
