"""Decision records as people and personas read them: one line each, what was decided with its verdict once,
when, and a link; the prompt's block the same, without a second tally or a separate people's vote."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation.memory import block
from core.models import Decision, Discussion
from core.showing.memory import earlier_post, line

MARCH = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)
VERDICT = "CONSENSUS: Trial [O1] — personas: Trial [O1] 3 of 3; people: Trial [O1] 2 of 2"


def record(decided: str, verdict: str = VERDICT, **kw: object) -> Decision:
    fields = {"id": 7, "link": "https://chat.example/t/1"} | kw
    return Decision(discussion_id="d1", platform="slack", topic="Should we   move to trunk?", flow="council",
                    decided=decided, verdict=verdict, people={"Trial [O1]": 2}, decided_at=MARCH,
                    **fields)  # type: ignore[arg-type]


def test_a_council_record_quoting_its_verdict_shows_it_once_on_one_line() -> None:
    shown = line(record(f"Run a four-week trial. {VERDICT}"), "Europe/Berlin")
    assert shown == (f"• **Should we move to trunk?** · ⟦t:{int(MARCH.timestamp())}:Europe/Berlin⟧ — "
                     f"Run a four-week trial. {VERDICT} · https://chat.example/t/1")


def test_a_record_whose_prose_holds_no_verdict_gets_it_once_after_the_prose() -> None:
    shown = line(record("Adopt trunk, with flags."))
    assert shown.endswith(f"— Adopt trunk, with flags. {VERDICT} · https://chat.example/t/1")
    assert shown.count("2 of 2") == 1 and "\n" not in shown
    assert line(record("Adopt trunk.", verdict="", link="")).endswith("— Adopt trunk.")  # no verdict, no link


def test_long_prose_is_cut_and_the_verdict_kept_whole() -> None:
    shown = line(record("word " * 100))
    assert f"… {VERDICT}" in shown and len(shown) < 200 + len(VERDICT) + 120


def test_the_opening_lists_one_line_per_record_each_with_its_revisit_button() -> None:
    d = Discussion(id="d2", topic="Trunk again?", platform="slack", created_at=MARCH, updated_at=MARCH)
    post = earlier_post(d, [record("Adopt trunk."), record(f"Trial. {VERDICT}", id=8)])
    assert len(post.text.splitlines()) == 3 and post.text.count(VERDICT) == 2  # heading + two records
    assert [a.value for a in post.actions] == ["7", "8"]


def test_every_prompt_reads_each_record_once_with_its_verdict() -> None:
    text = block([record(f"Run a four-week trial. {VERDICT}"), record("Adopt trunk.", verdict="")])
    assert text.count(VERDICT) == 1 and "Tally" not in text and "People's vote" not in text
    assert "Decided: Run a four-week trial. " + VERDICT in text and "Decided: Adopt trunk.\n" in text
    assert block([]) == ""
    assert text.count("<decision") == 2 and block([record("x")] * 5).count("<decision") == 3  # at most three
