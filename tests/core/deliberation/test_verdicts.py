"""Honest verdicts and tallies by meaning: every seated persona counts, people are heard, wordings merge."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import example, given
from hypothesis import strategies as st

from core.deliberation import stances, tally
from core.deliberation.flows.base import State
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)


def persona(key: str, role: Role = Role.EXPERT) -> Persona:
    return Persona(key=key, name=key.capitalize(), role=role)


def spoke(who: str, text: str, round_: int = 1) -> Turn:
    return Turn(key=f"d:r{round_}:{who}", discussion_id="d", round=round_, step=1, phase=Phase.STATEMENT,
                persona_key=who, status=TurnStatus.PUBLISHED, text=text, data=stances.parse(text), created_at=T0)


def test_a_persona_without_a_readable_stance_counts_as_undecided() -> None:
    seated = [persona("ana"), persona("ben"), persona("cy"), persona("contrarian", Role.CONTRARIAN),
              persona("moderator", Role.MODERATOR)]
    s = State(discussion=Discussion(id="d", topic="t", created_at=T0, updated_at=T0), personas=seated,
              turns=[spoke("ana", "x\nStance: for — a trial"), spoke("ben", "y\nStance: for — yes"),
                     spoke("cy", "My stance is against this"), spoke("contrarian", "Is that really true?")])
    rows = stances.table(s, 1)
    assert [(r.persona, r.label) for r in rows] == [("Ana", "for"), ("Ben", "for"), ("Cy", "undecided"),
                                                   ("Contrarian", "undecided")]  # the moderator takes no stance
    verdict = stances.verdict([r.label for r in rows])
    assert not verdict.startswith("CONSENSUS") and "of 4" in verdict


def test_people_who_voted_otherwise_deny_a_consensus() -> None:
    assert stances.verdict(["for", "for", "for"], ["against"]).startswith("SPLIT")
    assert stances.verdict(["for", "for", "for"], ["For", "for", "against"]).startswith("CONSENSUS: for")
    # The people's side is shown in the personas' terms.
    shown = stances.verdict(["ship it", "ship it"], ["Ship it!", "wait"])
    assert "personas: ship it 2 of 2" in shown and "people: ship it 1 · wait 1 of 2" in shown


def test_no_stances_and_no_votes_are_said_so() -> None:
    assert stances.verdict([]) == "NO VERDICT: no stances recorded"
    assert stances.verdict(["", ""]).startswith("NO VERDICT: no persona took a position")


def test_one_item_in_three_wordings_is_one_item() -> None:
    ranked = tally.tally({"A": ["Pack opening UX", "Billing"], "B": ["Pack-opening UX", "Billing"],
                          "C": ["Billing", "pack opening ux."], "D": ["the pack opening UX", "Billing"]})
    assert [(t.item, t.firsts) for t in ranked] == [("Pack opening UX", 3), ("Billing", 1)]


def test_a_free_text_item_maps_to_the_option_it_names() -> None:
    options = ["Stabilise the core first", "Ship the customer-facing fix"]
    assert tally.match("stabilise core first", options) == "Stabilise the core first"
    assert tally.match("Ship the customer facing fix!", options) == "Ship the customer-facing fix"
    both = "Ship the customer-facing fix and stabilise the core first"
    assert tally.match(both, options) is None  # names two: no guess
    assert tally.match("Rewrite billing", options) is None


def test_an_item_listed_twice_in_one_ranking_counts_once_at_its_best_place() -> None:
    ranked = tally.tally({"A": ["Billing", "Mobile", "billing."], "B": ["Mobile", "Billing"]})
    assert {t.item: t.voters for t in ranked} == {"Billing": 2, "Mobile": 2}
    assert tally.dedupe(["Billing", "Mobile", "billing.", "The billing"]) == ["Billing", "Mobile"]


# Property tests -------------------------------------------------------------------------------------------
LABELS = st.sampled_from(["for", "against", "undecided", "", "ship it", "Ship-it", "wait", "the wait"])


@given(st.lists(LABELS, min_size=0, max_size=8), st.lists(LABELS, max_size=6))
@example(["for", "for", "for"], ["against"])  # a person who voted otherwise
@example(["Ship it", "ship-it", "the ship it"], [])  # one position in three wordings
def test_consensus_only_when_every_persona_agrees_and_most_people_do_not_object(personas: list[str],
                                                                               people: list[str]) -> None:
    verdict = stances.verdict(personas, people)
    if verdict.startswith("CONSENSUS"):
        keys = {tally.key(x) for x in personas}
        assert len(keys) == 1 and len(personas) >= 2
        (top,) = keys
        assert top and top not in stances.UNDECIDED
        otherwise = [p for p in people if tally.key(p) != top]
        assert len(otherwise) * 2 < len(people) or not people


@given(st.lists(LABELS, min_size=1, max_size=8), st.lists(LABELS, max_size=6))
def test_adding_an_undecided_persona_never_makes_a_consensus(personas: list[str], people: list[str]) -> None:
    assert not stances.verdict([*personas, ""], people).startswith("CONSENSUS")


@given(st.lists(LABELS, min_size=1, max_size=8))
def test_the_verdict_counts_every_persona(personas: list[str]) -> None:
    assert f"of {len(personas)}" in stances.verdict(personas)


@given(st.lists(LABELS, min_size=2, max_size=8))
def test_personas_naming_one_position_in_any_wording_agree(personas: list[str]) -> None:
    decided = [p for p in personas if tally.key(p) not in stances.UNDECIDED]
    if len(decided) == len(personas) and len({tally.key(p) for p in decided}) == 1:
        assert stances.verdict(personas).startswith("CONSENSUS")


WORDS = st.sampled_from(["Billing", "billing", "Billing.", "the billing", "Mobile app", "mobile-app", "Search",
                         "SEARCH!", "an search", "Pack opening UX", "pack-opening ux"])


@given(st.dictionaries(st.text(min_size=1, max_size=3), st.lists(WORDS, max_size=6), max_size=6))
def test_the_tally_lists_each_meaning_once_with_sane_ranks(ballots: dict[str, list[str]]) -> None:
    ranked = tally.tally(ballots)
    keys = [tally.key(t.item) for t in ranked]
    assert len(keys) == len(set(keys))
    assert keys == sorted(set(keys), key=keys.index)
    assert all(1 <= t.average <= tally.MISSING_RANK and 0 <= t.firsts <= t.voters <= len(ballots) for t in ranked)
    assert [t.average for t in ranked] == sorted(t.average for t in ranked)
    assert sum(t.firsts for t in ranked) == sum(1 for items in ballots.values() if tally.dedupe(items))
