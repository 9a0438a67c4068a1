"""The closing's reading of people's votes, rule by rule: which ballot counts, for which option, and for whom."""

from __future__ import annotations

from datetime import UTC, datetime

from core.deliberation import closings, stances
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.deliberation.schemas import MeetingRecommendation, RankedItem, RankedVote
from core.models import Ballot, Discussion, Persona, Phase, Poll, Role, Turn, TurnStatus

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
        "Dana": ["O2", "O1", ""],  # her third place repeats her first: counted once, where she placed it higher
        "U2": ["O1", "O3", ""],  # no name: known by their id
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
    items = [Option(id=i, label=label) for i, label in zip(IDS, OPTIONS, strict=True)]
    assert closings.place_polls("d1:final", items[:1]) == []
    two = closings.place_polls("d1:final", items[:2])
    assert [(k, q, final) for k, q, _, final in two] == [("d1:final:rank1", "Your #1 priority", True),
                                                          ("d1:final:rank2", "Your #2 priority", True)]
    assert len(closings.place_polls("d1:final", items * 2)) == 3
    assert closings.ranking_of("d1:final:rank2") == "d1:final" and closings.ranking_of("d1:r2:syn") == ""


SHOWN = {"O1": "Stabilise", "O2": "Cut scope", "O3": "Hire", "O4": "Outsource"}
OWNERS = {"Eli": ["O1", "O2", "O3"], "Fay": ["O1", "O3", "O2"]}


def test_the_peoples_ranking_is_shown_item_by_item_beside_the_owners_with_who_put_what_first() -> None:
    people = {"Dana": ["O2", "O1"], "U2": ["O2", "O1", "O4"]}
    lines = closings.people_beside_owners(OWNERS, people, SHOWN).splitlines()
    assert lines[:3] == ["**The people's ranking beside the owners'**", "_2 people ranked, 2 owners._", ""]
    # The owners' order (O2 and O3 tie on 2.5: by id), then what only people ranked.
    assert lines[3:7] == [
        "1. **Stabilise [O1]** — owners: average rank 1.0, 2× #1 · people: average rank 2.0, 0× #1",
        "2. **Cut scope [O2]** — owners: average rank 2.5, 0× #1 · people: average rank 1.0, 2× #1",
        "3. **Hire [O3]** — owners: average rank 2.5, 0× #1 · people: not ranked",
        f"4. **Outsource [O4]** — owners: not ranked · people: average rank {(6 + 3) / 2:.1f}, 0× #1",
    ]
    assert lines[7:9] == ["", "People put **Cut scope [O2]** first; the owners did not."]
    assert lines[9:] == ["", f"**Final verdict:** {stances.verdict(['O1', 'O1'], ['O2', 'O2'], SHOWN)}"]
    # The seated owners' first choices, where given, are the owners' side of the verdict.
    given = closings.people_beside_owners(OWNERS, people, SHOWN, ["O2", ""]).splitlines()
    assert given[-1] == f"**Final verdict:** {stances.verdict(['O2', ''], ['O2', 'O2'], SHOWN)}"


def test_one_person_agreeing_with_the_owners_and_nobody_ranking_say_so() -> None:
    agreed = closings.people_beside_owners(OWNERS, {"Dana": ["O1"]}, SHOWN).splitlines()
    assert agreed[1] == "_1 person ranked, 2 owners._"
    assert "People and owners put the same option first." in agreed
    alone = closings.people_beside_owners(OWNERS, {}, SHOWN).splitlines()
    assert alone[1] == "_0 people ranked, 2 owners._"
    assert "_Nobody ranked: the owners' ranking stands alone._" in alone
    assert not [line for line in alone if "first;" in line or "same option first" in line]
    assert alone[-1] == f"**Final verdict:** {stances.verdict(['O1', 'O1'], [], SHOWN)}"


def test_an_owners_ballot_shows_each_option_once_with_its_id_and_marks_what_names_none() -> None:
    options = [Option(id=i, label=label) for i, label in zip(IDS, OPTIONS, strict=True)]
    vote = RankedVote(ranking=[RankedItem(item="O2", why="weekly breakage", domain="billing"),
                               RankedItem(item=" Do not cut scope ", why="users wait"),
                               RankedItem(item="cut scope", why="again"),  # O2 once more, by its label
                               RankedItem(item="O1", why="later")],
                      stance="scope first", label="O2")
    assert closings.ranking_text(vote, options).split("\n") == [
        "1. **Cut scope** [O2] _(affects billing)_ — weekly breakage",
        "2. _Do not cut scope (unmatched: names no option on the list, not counted)_ — users wait",
        "3. _cut scope (unmatched: repeats an option placed higher, not counted)_ — again",
        "4. **Stabilise the core** [O1] — later",
        "",
        "Stance: O2 (Cut scope) — scope first",
    ]
    unread = RankedVote(ranking=[RankedItem(item="Something else", why="x"), RankedItem(item="O1", why="y")],
                        stance="mine", label="x")
    # The #1 as written names no option: the ballot's first choice is unmatched, never the #2.
    assert closings.ranking_text(unread, options).endswith("\n\nStance: undecided (their #1 names no option) — mine")
    assert closings.ranking_text(RankedVote(ranking=[], stance="none", label=""), options) == \
        "\n\nStance: undecided — none"


def _meeting(*rankings: tuple[str, list[str]]) -> State:

    d = Discussion(id="d", topic="Q3 priorities", flow="meeting", round=3, created_at=NOW, updated_at=NOW)
    owners = [Persona(key=name.lower(), name=name, role=Role.OWNER, title="t") for name, _ in rankings]
    listed = Turn(key="d:r3:s0:moderator", discussion_id="d", round=3, step=0, phase=Phase.OPTIONS,
                  persona_key="moderator", status=TurnStatus.DONE, created_at=NOW, finished_at=NOW,
                  data={"listed": [{"id": i, "label": label} for i, label in zip(IDS, OPTIONS, strict=True)]})
    votes = [Turn(key=f"d:r3:s1:{name.lower()}", discussion_id="d", round=3, step=1, phase=Phase.RANKED_VOTE,
                  persona_key=name.lower(), status=TurnStatus.DONE, created_at=NOW, finished_at=NOW,
                  data={"ranking": [{"item": i, "why": f"{name} on {i}"} for i in items], "stance": "s",
                        "label": items[0] if items else ""})
             for name, items in rankings]
    return State(discussion=d, personas=owners, turns=[listed, *votes])


def test_the_recommendation_heads_with_its_verdict_and_names_who_left_the_winner_out() -> None:
    rec = MeetingRecommendation(key_arguments=["Eli: invoices"], dissents=[], next_steps=["Ship the fix"])
    split = _meeting(("Eli", ["O1", "O2"]), ("Fay", ["O1", "O3"]), ("Gus", ["O2", "O3"]))
    text, ids = closings.recommendation("Q3 priorities", split, rec, stances.Verdict("SPLIT", "", "split"))
    lines = text.split("\n")
    assert ids == ["O1", "O2", "O3"] and lines[3] == "**Owners' Ranking (split: no consensus)**"
    # Averages with a left-out option counted 6th: O1 (1 + 1 + 6) / 3, O2 (2 + 6 + 1) / 3, O3 (6 + 2 + 2) / 3; each
    # reason from the owners who placed it highest.
    assert lines[4:7] == [
        "1. **Stabilise the core [O1]** — Eli on O1 (Eli); Fay on O1 (Fay) (average rank 2.7; 2 owners ranked this #1)",
        "2. **Cut scope [O2]** — Gus on O2 (Gus) (average rank 3.0; 1 owner ranked this #1)",
        "3. **Hire [O3]** — Fay on O3 (Fay); Gus on O3 (Gus) (average rank 3.3; 0 owners ranked this #1)"]
    assert "- Gus left Stabilise the core [O1] out of their top three (their #1: Cut scope [O2])" in lines
    assert "**The owners are split** after 3 rounds: people decide." in lines
    agreed = _meeting(("Eli", ["O1", "O2"]), ("Fay", ["O1", "O3"]))
    text, _ = closings.recommendation("Q3 priorities", agreed, rec, stances.Verdict("CONSENSUS", "O1", "agreed"))
    lines = text.split("\n")
    assert lines[3] == "**Consensus Ranking**" and "- None — the owners agree" in lines
    assert not [line for line in lines if "owners are split" in line]
    leaning, _ = closings.recommendation("Q3 priorities", agreed, rec, stances.Verdict("LEANING", "O1", "lean"))
    assert "- None voiced, but the owners' first choices differ" in leaning.split("\n")
    assert "**Owners' Ranking (leaning, not a consensus)**" in leaning.split("\n")
    nobody, ids = closings.recommendation("Q3 priorities", _meeting(("Eli", [])), rec,
                                          stances.Verdict("NO VERDICT", "", "none"))
    assert ids == [] and "- (no votes were cast)" in nobody and "- None: no owner cast a ranking" in nobody
    assert "**Owners' Ranking**" in nobody.split("\n") and "owners are split" not in nobody
    third = _meeting(("Eli", ["O1", "O2"]), ("Fay", ["O1", "O3"]), ("Hal", ["O2", "O3", "O1"]))
    text, _ = closings.recommendation("Q3 priorities", third, rec, stances.Verdict("CONSENSUS", "O1", "agreed"))
    assert "Hal left" not in text, "the winner third is still in an owner's top three"
    alone, _ = closings.recommendation("Q3 priorities", _meeting(("Eli", ["O1"])), rec,
                                       stances.Verdict("LEANING", "O1", "lean"))
    assert "owners are split" not in alone, "one option ranked: nothing for people to decide between"


def test_picking_an_option_already_placed_at_another_place_is_refused_with_a_message() -> None:
    first = poll("d1:final:rank1").model_copy(update={"id": 1})
    second = poll("d1:final:rank2").model_copy(update={"id": 2})
    other = poll("d1:r2:poll").model_copy(update={"id": 3})
    places = [(first, [ballot(1, "U1", "Dana")]), (second, []), (other, [ballot(0, "U2", "Lee")])]
    said = closings.repeated_place(places, second, "U1", 1)
    assert said == ("You already put Cut scope at #1: pick another option for this place (each option takes one "
                    "place in your ranking).")
    assert closings.repeated_place(places, second, "U1", 0) == ""  # another option: taken
    assert closings.repeated_place(places, second, "U2", 1) == ""  # someone else's #1 is theirs
    assert closings.repeated_place(places, first, "U1", 1) == ""  # the same place again: a change of mind
    assert closings.repeated_place(places, other, "U2", 0) == ""  # not a place in a ranking


def test_a_persons_latest_vote_on_any_poll_of_the_round_stands_and_counts_once() -> None:
    later = NOW.replace(minute=5)
    synthesis, final = poll("d1:r2:poll").model_copy(update={"id": 1}), poll("d1:r2:final:poll").model_copy(
        update={"id": 2})
    voted = [(synthesis, [ballot(0, "U1", "Dana"), ballot(2, "U2", "Lee")]),
             (final, [ballot(1, "U1", "Dana").model_copy(update={"created_at": later})])]
    assert sorted(closings.people_choices(voted, 2)) == ["O2", "O3"]  # Dana once, as she voted last; Lee once
