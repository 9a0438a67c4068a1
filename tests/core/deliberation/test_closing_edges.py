"""The closing's rules at their edges: the recommendation as posted, line by line; who a stand-in's ranking is
credited to; places people left empty; polls listed in any order; picks outside a poll; and other rankings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation import closings, stances
from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import owner_ballots
from core.deliberation.schemas import MeetingRecommendation
from core.models import Author, Ballot, Discussion, Persona, Phase, Poll, Role, Turn, TurnStatus

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
OPTIONS = ["Stabilise the core", "Cut scope", "Hire", "Outsource", "Pause", "Rewrite"]
IDS = [f"O{i}" for i in range(1, len(OPTIONS) + 1)]
SHOWN = dict(zip(IDS, OPTIONS, strict=True))
REC = MeetingRecommendation(key_arguments=["Eli: invoices break weekly", "Fay: users wait on scope"],
                            dissents=["Fay: scope before stability"], next_steps=["Ship the fix", "Review in May"])


def _listed(n: int) -> Turn:
    return Turn(key="d:r3:s0:moderator", discussion_id="d", round=3, step=0, phase=Phase.OPTIONS,
                persona_key="moderator", status=TurnStatus.DONE, created_at=NOW, finished_at=NOW,
                data={"listed": [{"id": i, "label": SHOWN[i]} for i in IDS[:n]]})


def _vote(key: str, items: list[str], author: Author = Author.PERSONA) -> Turn:
    return Turn(key=f"d:r3:s1:{key}", discussion_id="d", round=3, step=1, phase=Phase.RANKED_VOTE, persona_key=key,
                status=TurnStatus.DONE, created_at=NOW, finished_at=NOW, author=author,
                data={"ranking": [{"item": i, "why": f"{key} on {i}"} for i in items], "stance": "s",
                      "label": items[0] if items else ""})


def _meeting(*rankings: tuple[str, list[str]], options: int = 3) -> State:
    d = Discussion(id="d", topic="Q3 priorities", flow="meeting", round=3, created_at=NOW, updated_at=NOW)
    owners = [Persona(key=name, name=name, role=Role.OWNER, title="t") for name, _ in rankings]
    return State(discussion=d, personas=owners, turns=[_listed(options), *(_vote(n, i) for n, i in rankings)])


def test_a_split_recommendation_is_posted_section_by_section() -> None:
    # Fay's #2 and #3 name no option: shown as not counted, in her words. O2: (2 + 1) / 2; O1: (1 + 6) / 2.
    state = _meeting(("Eli", ["O1", "O2"]), ("Fay", ["O2", "Go faster", "Hire more people"]))
    text, ids = closings.recommendation("Q3 priorities", state, REC,
                                        stances.Verdict("SPLIT", "", "SPLIT — the owners differ"))
    assert ids == ["O2", "O1"]
    assert text.split("\n") == [
        "**Council Recommendation**",
        "**Topic:** Q3 priorities",
        "",
        "**Owners' Ranking (split: no consensus)**",
        "1. **Cut scope [O2]** — Fay on O2 (Fay) (average rank 1.5; 1 owner ranked this #1)",
        "2. **Stabilise the core [O1]** — Eli on O1 (Eli) (average rank 3.5; 1 owner ranked this #1)",
        "_Not counted (names no option on the list): Fay: Go faster; Hire more people_",
        "",
        "**Verdict:** SPLIT — the owners differ",
        "",
        "**Key Arguments**",
        "- Eli: invoices break weekly",
        "- Fay: users wait on scope",
        "",
        "**Dissents**",
        "- Fay: scope before stability",
        "",
        "**The owners are split** after 3 rounds: people decide.",  # two options ranked: people choose
        "",
        "**Suggested Next Steps**",
        "- Ship the fix",
        "- Review in May",
        "",
        "_A recommendation only: nothing is executed automatically._",
    ]


def test_a_recommendation_without_votes_says_so_in_its_own_lines() -> None:
    rec = MeetingRecommendation(key_arguments=["Eli: invoices"], dissents=[], next_steps=["Ask again"])
    text, ids = closings.recommendation("Q3 priorities", _meeting(("Eli", [])), rec,
                                        stances.Verdict("NO VERDICT", "", "NO VERDICT: no stances recorded"))
    assert ids == []
    assert text.split("\n") == [
        "**Council Recommendation**", "**Topic:** Q3 priorities", "", "**Owners' Ranking**",
        "- (no votes were cast)", "", "**Verdict:** NO VERDICT: no stances recorded", "", "**Key Arguments**",
        "- Eli: invoices", "", "**Dissents**", "- None: no owner cast a ranking", "", "**Suggested Next Steps**",
        "- Ask again", "", "_A recommendation only: nothing is executed automatically._"]


def test_the_recommendation_ranks_five_options_at_most_and_people_rank_those_five() -> None:
    # Six options ranked: O5 comes last, (5 + 6) / 2, and is neither shown nor put to people.
    state = _meeting(("Eli", ["O1", "O2", "O3", "O4", "O5"]), ("Fay", ["O6", "O1", "O2", "O3", "O4"]), options=6)
    text, ids = closings.recommendation("Q3 priorities", state, REC, stances.Verdict("SPLIT", "", "split"))
    assert len(ids) == 5 and "O5" not in ids and set(ids) == {"O1", "O2", "O3", "O4", "O6"}
    ranking = text.split("**Verdict:**")[0]
    assert "[O5]" not in ranking and ranking.count("average rank") == 5


def test_an_owner_who_put_the_winner_fourth_or_ranked_nothing_dissents() -> None:
    fourth = _meeting(("Eli", ["O1", "O2"]), ("Gus", ["O1", "O3"]), ("Fay", ["O2", "O3", "O4", "O1"]), options=4)
    text, _ = closings.recommendation("Q3 priorities", fourth, REC, stances.Verdict("LEANING", "O1", "lean"))
    assert "- Fay left Stabilise the core [O1] out of their top three (their #1: Cut scope [O2])" in text.split("\n")
    silent = _meeting(("Eli", ["O1"]), ("Fay", []))
    text, _ = closings.recommendation("Q3 priorities", silent, REC, stances.Verdict("SPLIT", "", "split"))
    assert "- Fay left Stabilise the core [O1] out of their top three (their #1: none)" in text.split("\n")


def test_a_ranking_a_stand_in_cast_for_a_held_seat_is_that_seats_first_choice() -> None:
    d = Discussion(id="d", topic="Q3 priorities", flow="meeting", round=3, created_at=NOW, updated_at=NOW)
    dana = Persona(key="dana", name="Dana", role=Role.OWNER, title="t", held_by="U1")
    eli = Persona(key="eli", name="Eli", role=Role.OWNER, title="t")
    # Dana answers a question in her own words after her stand-in ranked: the ranking is still the stand-in's.
    answer = Turn(key="d:r3:s9:dana", discussion_id="d", round=3, step=9, phase=Phase.ANSWER, persona_key="dana",
                  status=TurnStatus.DONE, text="Billing first.", author=Author.PERSON, created_at=NOW,
                  finished_at=NOW + timedelta(minutes=1))
    state = State(discussion=d, personas=[dana, eli], turns=[_listed(3), _vote("dana", ["O2", "O1"], Author.STAND_IN),
                                                              answer])
    ballots = owner_ballots(state)[0]
    assert closings.seated_first_choices(state, ballots) == ["O2", ""], "Eli cast no ranking: undecided"


def _poll(key: str, *, id_: int = 1, ids: list[str] | None = None, round_: int = 2) -> Poll:
    return Poll(id=id_, key=key, discussion_id="d1", round=round_, question="q", options=OPTIONS[:3],
                option_ids=IDS[:3] if ids is None else ids, created_at=NOW)


def _ballot(choice: int, voter: str = "U1", name: str = "Dana", *, ai: bool = False,
            at: datetime = NOW, poll: int = 1) -> Ballot:
    return Ballot(poll_id=poll, voter_id=voter, voter_name=name, choice=choice, is_ai=ai, created_at=at)


def test_a_place_left_empty_stays_empty_and_polls_that_are_no_place_are_passed_over() -> None:
    only_second = [(_poll("d1:final:rank2"), [_ballot(0)])]
    assert closings.people_ballots(only_second) == {"Dana": ["", "O1"]}, "no #1: the #2 does not move up"
    mixed = [(_poll("d1:r2:syn", id_=3), [_ballot(2)]), (_poll("d1:final:rank1"), [_ballot(1)])]
    assert closings.people_ballots(mixed) == {"Dana": ["O2"]}


def test_this_rounds_choices_read_past_other_polls_and_ballots_that_do_not_count() -> None:
    earlier_first = [(_poll("d1:r1:syn", id_=1, round_=1), [_ballot(0)]), (_poll("d1:r2:syn", id_=2), [_ballot(1)])]
    assert closings.people_choices(earlier_first, 2) == ["O2"]
    ai_first = [(_poll("d1:r2:syn"), [_ballot(2, "U3", "Eve", ai=True), _ballot(0, "U1")])]
    assert closings.people_choices(ai_first, 2) == ["O1"]


def test_a_persons_later_vote_stands_whichever_poll_is_listed_first() -> None:
    later = NOW + timedelta(minutes=5)
    final = (_poll("d1:r2:final:poll", id_=2), [_ballot(1, at=later, poll=2)])
    synthesis = (_poll("d1:r2:poll", id_=1), [_ballot(0, at=NOW)])
    assert closings.people_choices([final, synthesis], 2) == ["O2"]
    assert closings.people_choices([synthesis, final], 2) == ["O2"]


def test_the_peoples_ranking_beside_owners_who_cast_nothing() -> None:
    alone = closings.people_beside_owners({}, {"Dana": ["O1"]}, SHOWN).split("\n")
    assert "People put **Stabilise the core [O1]** first; the owners did not." in alone
    empty = closings.people_beside_owners({"Eli": [], "Fay": ["O1"]}, {}, SHOWN).split("\n")
    assert empty[-1].startswith("**Final verdict:** ") and "undecided 1 of 2" in empty[-1], \
        "an owner who ranked nothing is undecided"
    given = stances.Verdict("LEANING", "O1", "LEANING: the recommendation's own verdict")
    shown = closings.people_beside_owners({"Eli": ["O1"]}, {"Dana": ["O2"]}, SHOWN, final=given).split("\n")
    assert shown[-1] == "**Final verdict:** LEANING: the recommendation's own verdict"


def test_a_pick_repeating_another_place_is_refused_wherever_the_polls_are_listed() -> None:
    first, second = _poll("d1:final:rank1", id_=1), _poll("d1:final:rank2", id_=2)
    places = [(second, []), (first, [_ballot(0, poll=1)])]  # the poll picked on comes first
    said = closings.repeated_place(places, second, "U1", 0)
    assert said.startswith("You already put Stabilise the core at #1"), "the first option is an option too"
    assert closings.repeated_place(places, second, "U1", 1) == ""


def test_a_pick_outside_the_poll_is_no_repeat_and_another_ranking_is_not_this_one() -> None:
    first, second = _poll("d1:final:rank1", id_=1), _poll("d1:final:rank2", id_=2)
    places = [(first, [_ballot(2, poll=1)]), (second, [])]
    assert closings.repeated_place(places, second, "U1", 3) == "", "one past the last option"
    assert closings.repeated_place(places, second, "U1", -1) == "", "no option, not the last one"
    other = _poll("d2:final:rank1", id_=3)
    theirs = [(other, [_ballot(0, poll=3)]), (second, [])]
    assert closings.repeated_place(theirs, second, "U1", 0) == "", "another discussion's ranking"


def test_a_pick_on_a_poll_opened_before_ids_were_kept_compares_its_wording() -> None:
    for ids in ([], ["O1"]):  # no ids, or fewer than the options: the wording is what a pick means
        first, second = _poll("d1:final:rank1", id_=1, ids=ids), _poll("d1:final:rank2", id_=2, ids=ids)
        places = [(first, [_ballot(1, poll=1)]), (second, [])]
        assert closings.repeated_place(places, second, "U1", 1).startswith("You already put Cut scope at #1")
        assert closings.repeated_place(places, second, "U1", 2) == ""
