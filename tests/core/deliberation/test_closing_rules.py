"""The closing's reading of people's votes, rule by rule: which ballot counts, for which option, and for whom."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import closings
from core.models import Ballot, Poll

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
OPTIONS, IDS = ["Stabilise the core", "Cut scope", "Hire"], ["O1", "O2", "O3"]


def poll(key: str = "d1:r2:final:rank1", *, ids: list[str] | None = None, round_: int = 2, hidden: bool = False,
         closed: bool = False) -> Poll:
    return Poll(id=1, key=key, discussion_id="d1", round=round_, question="Your #1 priority", options=OPTIONS,
                option_ids=IDS if ids is None else ids, hide_results=hidden, closed=closed, created_at=NOW)


def ballot(choice: int, voter: str = "U1", name: str = "Dana", *, ai: bool = False, old: bool = False) -> Ballot:
    return Ballot(poll_id=1, voter_id=voter, voter_name=name, choice=choice, is_ai=ai, superseded=old,
                  created_at=NOW)


def test_a_ballot_means_the_id_of_the_option_it_chose_and_nothing_outside_the_list() -> None:
    assert [closings.chosen(poll(), ballot(i)) for i in range(3)] == IDS  # the first option counts too
    assert closings.chosen(poll(), ballot(3)) == "" and closings.chosen(poll(), ballot(-1)) == ""
    # A poll opened before option ids were kept: its wording is what the vote means.
    assert closings.chosen(poll(ids=[]), ballot(1)) == "Cut scope"
    assert closings.chosen(poll(ids=["O1"]), ballot(1)) == "Cut scope"


def test_each_persons_ranking_reads_their_live_ballots_place_by_place() -> None:
    places = [
        (poll("d1:final:rank2"), [ballot(0, "U1", "Dana"), ballot(2, "U2", "")]),
        (poll("d1:final:rank1"), [ballot(1, "U1", "Dana"), ballot(0, "U2", ""), ballot(2, "U3", "Eli", ai=True),
                                  ballot(2, "U1", "Dana", old=True), ballot(7, "U4", "Fay"), ballot(0, "U5", "Gus")]),
        (poll("d1:final:rank3"), [ballot(1, "U1", "Dana"), ballot(0, "U2", "")]),
    ]
    assert closings.people_ballots(places) == {
        "Dana": ["O2", "O1"],  # her third place repeats her first: counted once, where she placed it higher
        "U2": ["O1", "O3"],  # no name: known by their id
        "Gus": ["O1"],  # read after a vote for no option and a replaced one: neither stops the reading
    }, "an AI stand-in's ballot, a replaced ballot and one for no option are not a person's ranking"


def test_this_rounds_choices_are_the_first_places_live_human_ballots_and_hidden_ones_wait_for_the_close() -> None:
    live = [ballot(0, "U1"), ballot(1, "U2"), ballot(2, "U3", ai=True), ballot(2, "U4", old=True), ballot(5, "U5")]
    assert closings.people_choices([(poll("d1:r2:syn"), live)], 2) == ["O1", "O2"]
    assert closings.people_choices([(poll("d1:r2:syn", round_=1), live)], 2) == [], "another round's question"
    assert closings.people_choices([(poll("d1:final:rank2"), live)], 2) == [], "only first places are choices"
    assert closings.people_choices([(poll("d1:final:rank1"), live)], 2) == ["O1", "O2"]
    assert closings.people_choices([(poll(hidden=True), live)], 2) == [], "hidden until it closes"
    assert closings.people_choices([(poll(hidden=True, closed=True), live)], 2) == ["O1", "O2"]


def test_people_rank_up_to_three_places_and_only_between_two_options_or_more() -> None:
    from core.deliberation.choices import Option

    items = [Option(id=i, label=label) for i, label in zip(IDS, OPTIONS, strict=True)]
    assert closings.place_polls("d1:final", items[:1]) == []
    two = closings.place_polls("d1:final", items[:2])
    assert [(k, q, final) for k, q, _, final in two] == [("d1:final:rank1", "Your #1 priority", True),
                                                          ("d1:final:rank2", "Your #2 priority", True)]
    assert len(closings.place_polls("d1:final", items * 2)) == 3
    assert closings.ranking_of("d1:final:rank2") == "d1:final" and closings.ranking_of("d1:r2:syn") == ""
