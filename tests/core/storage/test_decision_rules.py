"""Decision records in the store, rule by rule, on both backends: the words a search uses; what a typed search of
only common words finds; newest first without words, best match first with them; which records a new topic
recalls (those on its subject, never those sharing only common words); the people's counts written to one record;
and the places that have records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.models import Decision, Discussion
from core.storage.decisions import words_of
from core.storage.store import Store

MARCH = datetime(2026, 3, 12, 10, 0, tzinfo=UTC)


async def record(store: Store, did: str, topic: str, *, hours: int = 0, platform: str = "slack",
                 workspace: str = "T1", decided: str = "Decided.", verdict: str = "") -> None:
    when = MARCH + timedelta(hours=hours)
    async with store.tx() as tx:
        await tx.add_discussion(Discussion(id=did, topic=topic, platform=platform, workspace=workspace,
                                           channel="C1", created_at=when, updated_at=when))
        await tx.add_decision(Decision(discussion_id=did, platform=platform, workspace=workspace, channel="C1",
                                       topic=topic, flow="meeting", decided=decided, verdict=verdict,
                                       decided_at=when))


def test_a_searchs_words_are_lowered_once_each_in_order_at_most_sixteen() -> None:
    assert words_of("Trunk trunk, BILLING; trunk-based") == ["trunk", "billing", "based"]
    assert words_of(" ".join(f"w{i}" for i in range(20))) == [f"w{i}" for i in range(16)]
    assert words_of("") == []
    assert words_of("snake_case __init__") == ["snake", "case", "init"]  # an underscore is no word to the indexes


def test_a_topics_significant_words_leave_out_short_and_common_ones() -> None:
    assert words_of("Should we move the API to gRPC before winter?", significant=True) == ["grpc", "winter"]
    assert words_of("Should we move the API to gRPC?") == ["should", "we", "move", "the", "api", "to", "grpc"]
    assert words_of("Whose keys rotate?", significant=True) == ["whose", "keys", "rotate"]  # four letters stay


async def test_a_search_of_only_common_words_finds_nothing_and_no_words_finds_the_newest(store: Store) -> None:
    for did, hours in (("d1", 0), ("d2", 2), ("d3", 1)):
        await record(store, did, f"Trunk-based development, take {did}?", hours=hours)
    async with store.tx() as tx:
        assert await tx.decisions_found("slack", "T1", None, "should would", match="any") == []
        newest = await tx.decisions_found("slack", "T1", None, "")
        blank = await tx.decisions_found("slack", "T1", None, "   ")
        two = await tx.decisions_found("slack", "T1", None, "", limit=2)
    assert [d.discussion_id for d in newest] == ["d2", "d3", "d1"]
    assert [d.discussion_id for d in blank] == ["d2", "d3", "d1"]
    assert [d.discussion_id for d in two] == ["d2", "d3"]


async def test_records_decided_at_once_come_newest_written_first(store: Store) -> None:
    for did in ("d1", "d2", "d3"):
        await record(store, did, f"Trunk-based development, take {did}?")
    async with store.tx() as tx:
        found = await tx.decisions_found("slack", "T1", None, "")
    assert [d.discussion_id for d in found] == ["d3", "d2", "d1"]


async def test_with_words_the_best_match_comes_first_then_the_newest(store: Store) -> None:
    await record(store, "weak", "Billing provider, or the mobile app, or the platform, or hiring, or travel?", hours=5)
    await record(store, "strong", "Billing: which billing provider bills us best?", hours=0)
    await record(store, "same-old", "Invoices and billing", hours=1)
    await record(store, "same-new", "Invoices and billing", hours=3)
    async with store.tx() as tx:
        found = await tx.decisions_found("slack", "T1", None, "billing")
        limited = await tx.decisions_found("slack", "T1", None, "billing", limit=1)
        elsewhere = await tx.decisions_found("discord", "T1", None, "billing")
    ids = [d.discussion_id for d in found]
    assert ids[0] == "strong" and ids.index("same-new") < ids.index("same-old") and set(ids) == {
        "weak", "strong", "same-old", "same-new"}
    assert [d.discussion_id for d in limited] == ["strong"]
    assert elsewhere == []


async def test_the_peoples_counts_are_written_to_that_discussions_record_alone(store: Store) -> None:
    await record(store, "d1", "Trunk?")
    await record(store, "d2", "Billing?")
    async with store.tx() as tx:
        await tx.set_decision_people("d1", {"O1": 3, "O2": 1}, "LEANING O1 (3 of 4)")
        one, two = await tx.decision_of("d1"), await tx.decision_of("d2")
        assert await tx.decision_of("d9") is None
        assert one is not None and two is not None
        assert await tx.decision(one.id) == one and await tx.decision(one.id + two.id + 100) is None
    assert (one.people, one.verdict) == ({"O1": 3, "O2": 1}, "LEANING O1 (3 of 4)")
    assert (two.people, two.verdict) == ({}, "")


ROTATE = "Should we rotate team leads every six months?"
# Two records on other subjects whose topics share one common word with ROTATE ("team") and whose decided prose
# shares more ("team", "every", "months", "next"): what "Earlier here" used to open with.
UNRELATED = (("monorepo", "Should we move the team to a monorepo?",
              "The team moves to one repository next quarter, every service at once."),
             ("wednesday", "Team meetings on Wednesdays?",
              "Yes: the team meets every Wednesday; we look again in six months."))


async def test_records_sharing_only_common_words_with_a_topic_are_not_recalled(store: Store) -> None:
    for did, topic, decided in UNRELATED:
        await record(store, did, topic, decided=decided)
    async with store.tx() as tx:
        anyword = await tx.decisions_found("slack", "T1", None, ROTATE, match="any")
        recalled = await tx.decisions_related("slack", "T1", None, ROTATE, limit=3)
    assert {d.discussion_id for d in anyword} == {"monorepo", "wednesday"}  # the words are there to be found
    assert recalled == []


async def test_a_record_on_the_topics_subject_is_recalled_beside_unrelated_ones(store: Store) -> None:
    for did, topic, decided in UNRELATED:
        await record(store, did, topic, decided=decided, hours=5)  # newer: recency does not bring them in
    await record(store, "leads", "Rotating team leads?", decided="Yearly, by the team's own choice.")
    await record(store, "when", "When to rotate leads?", decided="At each reorganisation.", hours=1)
    await record(store, "oncall", "Rotate the on-call lead weekly?", decided="Weekly, with a handbook.", hours=2)
    await record(store, "other", "Team leads in other workspaces?", workspace="T2")
    async with store.tx() as tx:
        recalled = await tx.decisions_related("slack", "T1", None, ROTATE, limit=3)
        one = await tx.decisions_related("slack", "T1", None, ROTATE, limit=1)
        # A short topic is judged on its own words: "Monorepo?" names one word, which the record holds.
        short = await tx.decisions_related("slack", "T1", None, "Monorepo?", limit=3)
        common = await tx.decisions_related("slack", "T1", None, "Should we, or would we?", limit=3)
    # "Rotating team leads?" holds three of the topic's words (stemmed: rotate, team, leads) and "When to rotate
    # leads?" both of its own: on the subject, the fuller match first. "Rotate the on-call lead weekly?" shares
    # two of its four (rotate, lead): half, as much as the monorepo's one of two, and so not more than a word.
    assert [d.discussion_id for d in recalled] == ["leads", "when"]
    assert [d.discussion_id for d in one] == ["leads"]
    assert [d.discussion_id for d in short] == ["monorepo"]
    assert common == []


async def test_the_peoples_vote_brings_the_verdict_a_record_quotes_up_to_date(store: Store) -> None:
    await record(store, "d1", "Trunk?", decided="Adopt trunk. LEANING O1 — people: no votes",
                 verdict="LEANING O1 — people: no votes")
    await record(store, "d2", "Billing?", decided="Stay with the provider.", verdict="SPLIT — people: no votes")
    async with store.tx() as tx:
        await tx.set_decision_people("d1", {"O1": 2}, "CONSENSUS O1 — people: O1 2 of 2")
        await tx.set_decision_people("d2", {"O2": 1}, "SPLIT — people: O2 1 of 1")
        await tx.set_decision_people("d9", {"O2": 1}, "SPLIT")  # no record: nothing to write
        one, two = await tx.decision_of("d1"), await tx.decision_of("d2")
    assert one is not None and one.decided == "Adopt trunk. CONSENSUS O1 — people: O1 2 of 2"
    assert two is not None and two.decided == "Stay with the provider."


async def test_the_places_with_records_are_listed_once_each(store: Store) -> None:
    await record(store, "d1", "Trunk?")
    await record(store, "d2", "Billing?")
    await record(store, "d3", "Hiring?", workspace="T2")
    await record(store, "d4", "Travel?", platform="discord", workspace="G1")
    async with store.tx() as tx:
        assert sorted(await tx.decision_places()) == [("discord", "G1"), ("slack", "T1"), ("slack", "T2")]
