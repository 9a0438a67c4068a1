"""A digest's decided items, dissent and open questions each name the discussion they come from, with its thread's
link and its page's, whether the model wrote the lists or the stored syntheses did; a line that names no
discussion the digest covers is left out."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from core.deliberation.schemas import (
    Agreement,
    Debate,
    DigestItem,
    DigestSummary,
    FinalSynthesis,
    RoundSynthesis,
)
from core.models import Discussion, Schedule, Usage
from core.showing.digest import Covered, Material, fallback_summary, prompt, render

MARCH = datetime(2026, 3, 12, 9, 0, tzinfo=UTC)


def covered(did: str, topic: str, synthesis: dict[str, object] | None = None, page: str = "") -> Covered:
    d = Discussion(id=did, topic=topic, platform="console", channel="C1", created_at=MARCH, updated_at=MARCH)
    return Covered(discussion=d, synthesis=synthesis, link=f"https://chat.example/{did}", page=page)


def material(items: list[Covered]) -> Material:
    schedule = Schedule(kind="digest", target="C1", trigger="cron:0 9 * * *", next_run_at=None)
    return Material(schedule=schedule, start=MARCH - timedelta(days=1), end=MARCH, covered=items, cost=Usage())


def section(text: str, title: str) -> list[str]:
    return text.split(f"**{title}**\n")[1].split("\n\n")[0].splitlines()


def test_each_item_names_its_discussion_with_the_thread_and_the_page() -> None:
    trunk = covered("d1", "Trunk-based development?", page="https://council.example/d/d1?exp=1&sig=ab")
    billing = covered("d2", "Which [billing] provider?")
    summary = DigestSummary(
        decided=[DigestItem(discussion=2, text="Stay with the current provider"),
                 DigestItem(discussion=1, text="A reversible trial")],
        dissent=[DigestItem(discussion=1, text="How long the trial runs")],
        open_questions=[DigestItem(discussion=3, text="Who pays?"),  # no third discussion: nobody can trace it
                        DigestItem(discussion=2, text="When to review?")])
    text = render(material([trunk, billing]), summary, "k", offline=False).text
    assert section(text, "Decided") == [
        "- Stay with the current provider — [Which (billing) provider?](https://chat.example/d2)",
        "- A reversible trial — [Trunk-based development?](https://chat.example/d1)"
        " · [page](https://council.example/d/d1?exp=1&sig=ab)"]
    assert section(text, "Dissent that remains") == [
        "- How long the trial runs — [Trunk-based development?](https://chat.example/d1)"
        " · [page](https://council.example/d/d1?exp=1&sig=ab)"]
    assert section(text, "Open questions") == [
        "- When to review? — [Which (billing) provider?](https://chat.example/d2)"]
    assert "Who pays?" not in text
    untraced = DigestSummary(decided=[], dissent=[DigestItem(discussion=5, text="Who pays?")], open_questions=[])
    assert "Dissent" not in render(material([trunk]), untraced, "k", offline=False).text  # no empty heading


def test_an_item_whose_thread_gave_no_link_still_names_its_discussion_by_id() -> None:
    unlinked = replace(covered("d7", "Rotate on-call weekly?"), link="")
    summary = DigestSummary(decided=[DigestItem(discussion=1, text="Weekly rotation")],
                            dissent=[DigestItem(discussion=1, text="Handover cost")],
                            open_questions=[DigestItem(discussion=1, text="Who covers holidays?")])
    text = render(material([unlinked]), summary, "k", offline=False).text
    for title, said in (("Decided", "Weekly rotation"), ("Dissent that remains", "Handover cost"),
                        ("Open questions", "Who covers holidays?")):
        assert section(text, title) == [f"- {said} — “Rotate on-call weekly?” (`d7`)"]


def test_the_prompt_numbers_each_discussion_as_the_items_refer_to_them() -> None:
    blocks = [b.text for b in prompt([covered("d1", "Trunk?"), covered("d2", "Billing?")]).shared]
    assert blocks[0].startswith('<discussion number="1" topic="Trunk?"')
    assert blocks[1].startswith('<discussion number="2" topic="Billing?"')


def test_without_the_model_each_item_comes_from_its_own_discussions_synthesis() -> None:
    final = FinalSynthesis(
        executive_summary="Trial it.", insights=[], agreements=[Agreement(point="Start small", supporters=[])],
        unresolved_debates=[Debate(topic="Evidence threshold", positions=[])], open_questions=["Who pays?"],
        recommendations=["Run a four-week trial"])
    rs = RoundSynthesis(summary="Mostly agreed.", agreements=["Keep the provider"], disagreements=["Price"],
                        insights=[], open_questions=["Renewal date?"], next_topic_suggestions=[], proposals=[])
    items = [covered("d0", "Nothing yet?"), covered("d1", "Trunk?", {"kind": "final", "data": final.model_dump()}),
             covered("d2", "Billing?", {"kind": "round", "data": rs.model_dump()})]
    summary = fallback_summary(items)
    assert [(i.discussion, i.text) for i in summary.decided] == [(2, "Run a four-week trial"),
                                                                  (3, "Keep the provider")]
    assert [(i.discussion, i.text) for i in summary.dissent] == [(2, "Evidence threshold"), (3, "Price")]
    assert [(i.discussion, i.text) for i in summary.open_questions] == [(2, "Who pays?"), (3, "Renewal date?")]
    text = render(material(items), summary, "k", offline=False).text
    assert "- Keep the provider — [Billing?](https://chat.example/d2)" in section(text, "Decided")

