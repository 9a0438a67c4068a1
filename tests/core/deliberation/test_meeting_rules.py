"""The meeting's rules one by one, on hand-built states: agreement and the steelman round, who answers whom, the
options owners argue for and the ones fixed for the vote, the rankings and their tally, and each turn's task."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from core.deliberation.choices import Option
from core.deliberation.flows import meeting
from core.deliberation.flows.base import State, StepSpec, TurnPlan
from core.deliberation.flows.meeting import (
    Meeting,
    addressed,
    converged,
    fixed_options,
    options_on_table,
    options_text,
    owner_ballots,
    owners_from_config,
    positions,
    steelman_round,
    tally_summary,
)
from core.models import Author, Discussion, HumanMessage, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
OWNERS = [Persona(key=k, name=k.title(), role=Role.OWNER, title="t") for k in ("eli", "fay", "gus", "hal")]
MODERATOR = Persona(key="moderator", name="Mo", role=Role.MODERATOR, title="t")


def stance(who: str, round_: int, choice: str | None = None, label: str = "", phase: Phase = Phase.DELIBERATION
           ) -> Turn:
    data: dict[str, Any] = {"stance": "because", "label": label or (choice or "").lower()}
    if choice is not None:
        data["choice"] = choice
    return Turn(key=f"d:r{round_}:s1:{who}:{phase.value}", discussion_id="d", round=round_, step=1, phase=phase,
                persona_key=who, status=TurnStatus.DONE, text="t", data=data, created_at=T0, finished_at=T0)


def said(who: str, round_: int, text: str, phase: Phase = Phase.DELIBERATION, step: int = 0) -> Turn:
    return Turn(key=f"d:r{round_}:s{step}:{who}:{phase.value}", discussion_id="d", round=round_, step=step,
                phase=phase, persona_key=who, status=TurnStatus.DONE, text=text, created_at=T0, finished_at=T0)


def proposal(who: str, id_: str, label: str) -> Turn:
    """Round 1: an owner's `new:` label puts an option on the table under its id and chooses it."""
    turn = said(who, 1, "t", Phase.PROPOSAL)
    turn.data = {"stance": "because", "label": f"new: {label}", "choice": id_, "listed": [{"id": id_, "label": label}]}
    return turn


def options_turn(*options: tuple[str, str], skipped: bool = False) -> Turn:
    """The moderator's turn that fixes the options of the final vote (round 3); a skipped one recorded nothing."""
    listed = [{"id": id_, "label": label} for id_, label in options]
    return Turn(key="d:r3:s0:moderator", discussion_id="d", round=3, step=0, phase=Phase.OPTIONS,
                persona_key="moderator", status=TurnStatus.SKIPPED if skipped else TurnStatus.DONE, text="t",
                data=None if skipped else {"options": [label for _, label in options], "listed": listed},
                created_at=T0, finished_at=T0)


def vote(who: str, items: list[tuple[str, str]], author: Author = Author.PERSONA) -> Turn:
    """An owner's final ranking (round 3), each item with its reason."""
    data = {"ranking": [{"item": item, "why": why} for item, why in items], "stance": "s", "label": items[0][0]}
    return Turn(key=f"d:r3:s1:{who}", discussion_id="d", round=3, step=1, phase=Phase.RANKED_VOTE, persona_key=who,
                status=TurnStatus.DONE, text="t", data=data, author=author, created_at=T0, finished_at=T0)


def state(turns: list[Turn], owners: int = 4, rounds: int | None = 3, round_: int = 1) -> State:
    d = Discussion(id="d", topic="t", flow="meeting", auto_rounds=rounds, round=round_, created_at=T0, updated_at=T0)
    return State(discussion=d, personas=[MODERATOR, *OWNERS[:owners]], turns=turns)


BILLING, MOBILE, PLATFORM = ("O1", "Billing fixes"), ("O2", "Mobile app"), ("O3", "Platform work")
PROPOSALS = [proposal("eli", *BILLING), proposal("fay", *MOBILE), proposal("gus", *PLATFORM)]


def test_owners_converge_when_a_strict_majority_of_them_at_least_two_pick_one_option() -> None:
    three_of_four = [stance("eli", 1, "O1"), stance("fay", 1, "O1"), stance("gus", 1, "O1"), stance("hal", 1, "O2")]
    assert converged(state(three_of_four), 1)
    two_of_four = [stance("eli", 1, "O1"), stance("fay", 1, "O1"), stance("gus", 1, "O2"), stance("hal", 1, "O3")]
    assert not converged(state(two_of_four), 1), "half is not a majority"
    assert converged(state(two_of_four[:2], owners=3), 1), "two of three"
    assert not converged(state([stance("eli", 1, "O1")], owners=1), 1), "one owner alone is not agreement"
    assert not converged(state([]), 1)
    # Positions that name no option, or no stance at all, add to nobody's count.
    sides = [stance("eli", 1, "for"), stance("fay", 1, "for"), stance("gus", 1, "for")]
    assert not converged(state(sides, owners=3), 1)


def test_an_owners_latest_stance_up_to_the_round_is_what_counts() -> None:
    moved = [stance("eli", 1, "O1"), stance("fay", 1, "O1"), stance("gus", 1, "O2"), stance("eli", 2, "O3")]
    assert converged(state(moved, owners=3), 1) and not converged(state(moved, owners=3), 2), "Eli moved away"
    later = [stance("eli", 1, "O1"), stance("fay", 1, "O2"), stance("gus", 1, "O3"), stance("fay", 2, "O1")]
    assert not converged(state(later, owners=3), 1) and converged(state(later, owners=3), 2), \
        "a stance taken in a later round does not count for an earlier one"
    # A stance recorded before choices were kept is read from its label, against the options on the table.
    listed = Turn(key="d:r1:s0:moderator", discussion_id="d", round=1, step=0, phase=Phase.OPENING,
                  persona_key="moderator", status=TurnStatus.DONE, text="t", created_at=T0, finished_at=T0,
                  data={"listed": [{"id": "O1", "label": "Stabilise the core"}]})
    old = [listed, stance("eli", 1, None, "stabilise the core"), stance("fay", 1, None, "o1")]
    assert converged(state(old, owners=3), 1)


def test_a_middle_round_after_agreement_is_the_one_steelman_round() -> None:
    agreed = [stance("eli", 1, "O1"), stance("fay", 1, "O1"), stance("gus", 1, "O2")]
    assert steelman_round(state(agreed, owners=3, rounds=3), 2)
    assert not steelman_round(state(agreed, owners=3, rounds=3), 1), "the first round is never one"
    assert not steelman_round(state(agreed, owners=3, rounds=3), 3), "nor the last"
    assert not steelman_round(state(agreed, owners=3, rounds=2), 2)
    assert steelman_round(state(agreed, owners=3, rounds=4), 2)
    assert not steelman_round(state(agreed[1:], owners=3, rounds=4), 2), "no agreement in round 1"
    late = [stance("eli", 2, "O1"), stance("fay", 2, "O1"), stance("gus", 1, "O2")]
    assert not steelman_round(state(late, owners=3, rounds=4), 2), "round 2's agreement is for round 3"
    assert steelman_round(state(late, owners=3, rounds=4), 3)
    held = [*agreed, stance("eli", 2, "O1", phase=Phase.STEELMAN)]
    assert not steelman_round(state(held, owners=3, rounds=4), 3), "one steelman round a meeting"
    same_round = [*agreed, stance("eli", 2, "O1", phase=Phase.STEELMAN)]
    assert steelman_round(state(same_round, owners=3, rounds=4), 2), "its own steelman turns do not end it"


def test_a_meeting_started_without_a_number_of_rounds_votes_in_its_third() -> None:
    phases = [[spec.phase for spec in Meeting().steps(state(PROPOSALS, rounds=None, round_=r))] for r in (2, 3)]
    assert phases == [[Phase.DELIBERATION, Phase.EXCHANGE], [Phase.OPTIONS, Phase.RANKED_VOTE]]


def test_an_owner_another_owner_named_in_this_rounds_deliberation_answers_in_it() -> None:
    turns = [*PROPOSALS,
             said("eli", 2, "Fay, the app can wait. As Eli I keep billing first."),  # naming himself asks nobody
             said("gus", 3, "Hal, argue the platform case.", Phase.STEELMAN)]
    s = state(turns, rounds=4)
    assert addressed(s, 2) == [OWNERS[1]] and addressed(s, 3) == [OWNERS[3]], "each round's own addresses only"
    # The moderator reopening a paused round, and an answer in an exchange, ask nobody to answer.
    s.turns += [said("moderator", 3, "Where were we: Eli and Fay disagreed.", Phase.REOPENING),
                said("fay", 3, "Eli, I concede the point.", Phase.EXCHANGE, step=1)]
    assert addressed(s, 3) == [OWNERS[3]]


def test_the_options_on_the_table_are_those_the_owners_latest_stances_chose_in_the_order_they_were_put_there() -> None:
    turns = [*PROPOSALS, stance("eli", 2, "O3"), stance("fay", 2, "O1"), stance("gus", 2, "for")]
    assert options_on_table(state(turns, round_=2)) == [Option(*BILLING), Option(*PLATFORM)]
    # A stance recorded before choices were kept names an option by its id or its whole label.
    old = [*PROPOSALS, stance("eli", 2, None, "o3"), stance("fay", 2, None, "billing fixes")]
    assert options_on_table(state(old, round_=2)) == [Option(*BILLING), Option(*PLATFORM)]


def test_the_fixed_options_are_the_moderators_and_none_before_it_fixed_them() -> None:
    assert fixed_options(state(PROPOSALS)) == [], "the owners' proposals are not the vote's options"
    merged = ("O4", "Mobile and platform together")
    assert fixed_options(state([*PROPOSALS, options_turn(BILLING, merged)])) == [Option(*BILLING), Option(*merged)]
    assert fixed_options(state([*PROPOSALS, options_turn(BILLING, merged, skipped=True)])) == [], \
        "a skipped options turn fixed nothing"


def test_the_positions_stated_for_a_round_are_each_owners_choice_in_it() -> None:
    stated = positions(state(PROPOSALS), 1)
    assert "round 1" in stated
    for shown in ('"Eli": "Billing fixes" [O1]\n<stance name="Eli">\nbecause\n</stance>',
                  '"Fay": "Mobile app" [O2]', '"Gus": "Platform work" [O3]', '"Hal": undecided'):
        assert shown in stated, shown


def test_at_most_eight_configured_owners_sit_and_none_takes_the_moderators_seat() -> None:
    lines = ["Moderator: Operations", *(f"{name}: Domain {name}" for name in
                                       ("Ann", "Ben", "Cai", "Dov", "Eva", "Fin", "Gil", "Ida"))]
    owners = owners_from_config(lines)
    assert [p.name for p in owners] == ["Moderator", "Ann", "Ben", "Cai", "Dov", "Eva", "Fin", "Gil"]
    assert meeting.MODERATOR.key not in {p.key for p in owners} and len({p.key for p in owners}) == 8


def test_the_options_for_the_vote_are_numbered_from_one_in_their_order_with_their_ids() -> None:
    text = options_text([Option(*MOBILE), Option("O5", "Billing fixes")])
    assert text.splitlines()[1:] == ["1. Mobile app [O2]", "2. Billing fixes [O5]"]


def ranked() -> State:
    """Three owners ranked the fixed options; Hal's vote was skipped."""
    skipped = vote("hal", [("O1", "x")])
    skipped.status, skipped.data = TurnStatus.SKIPPED, None
    return state([*PROPOSALS, options_turn(BILLING, MOBILE, PLATFORM),
                  vote("eli", [("O1", "eli: billing first"), ("O2", "eli: mobile second"), ("o1", "said twice")]),
                  vote("fay", [("O2", "fay: mobile first"), ("Billing fixes", "fay: billing second")]),
                  vote("gus", [("mobile app", ""), ("  Keep gitflow forever ", "habit"), ("O3", "gus: platform")]),
                  skipped], round_=3)


def test_each_ballot_names_each_fixed_option_once_and_keeps_items_naming_none_apart() -> None:
    ballots, _, unmatched = owner_ballots(ranked())
    # Each item keeps its place as written: a repeat or an item naming no option leaves its place empty.
    assert ballots == {"Eli": ["O1", "O2", ""], "Fay": ["O2", "O1"], "Gus": ["O2", "", "O3"]}
    assert unmatched == {"Gus": ["Keep gitflow forever"]}


def test_an_options_reason_comes_from_every_owner_who_ranked_it_highest_and_from_nobody_lower() -> None:
    _, reasons, _ = owner_ballots(ranked())
    assert reasons == {
        "O1": "eli: billing first (Eli)",  # not Fay's, who ranked it second
        "O2": "fay: mobile first (Fay); (Gus)",  # two owners ranked it first; Gus gave no reason
        "O3": "gus: platform (Gus)",
    }


def test_a_ranking_an_ai_stand_in_cast_is_credited_to_the_stand_in() -> None:
    s = state([options_turn(BILLING, MOBILE), vote("eli", [("O2", "users wait")], author=Author.STAND_IN)])
    ballots, reasons, _ = owner_ballots(s)
    assert ballots == {"AI stand-in for Eli": ["O2"]} and reasons == {"O2": "users wait (AI stand-in for Eli)"}


def test_the_tally_the_moderator_reads_ranks_by_average_then_lists_each_ballot_and_what_matched_nothing() -> None:
    # A left-out option counts as rank 6: O2 (2 + 1 + 1) / 3, O1 (1 + 2 + 6) / 3, O3 (6 + 6 + 3) / 3: Gus wrote
    # Platform work third, after an item naming no option, and it stays third.
    assert tally_summary(ranked()).splitlines() == [
        '1. "Mobile app" [O2]: average rank 1.3, 2× #1',
        '2. "Billing fixes" [O1]: average rank 3.0, 1× #1',
        '3. "Platform work" [O3]: average rank 5.0, 0× #1',
        '- "Eli" ranked: #1 "Billing fixes" [O1], #2 "Mobile app" [O2], #3 unmatched',
        '- "Fay" ranked: #1 "Mobile app" [O2], #2 "Billing fixes" [O1]',
        '- "Gus" ranked: #1 "Mobile app" [O2], #2 unmatched, #3 "Platform work" [O3]',
        '- "Gus" also named, matching no option:', "<item>", "Keep gitflow forever", "</item>",
    ]


def test_a_meetings_rounds_propose_then_deliberate_with_exchanges_then_fix_the_options_and_rank() -> None:
    owners = OWNERS[:4]
    assert Meeting().steps(state([])) == [StepSpec(0, Phase.PROPOSAL, owners)]
    # Round 3 of 4: Hal, named in this round, answers; Fay, named in the round before, already had her turn.
    talked = [*PROPOSALS, said("eli", 2, "Fay, why mobile?"), said("gus", 3, "Hal, what does ops need?")]
    assert Meeting().steps(state(talked, rounds=4, round_=3)) == [
        StepSpec(0, Phase.DELIBERATION, owners), StepSpec(1, Phase.EXCHANGE, [OWNERS[3]])]
    agreed = [proposal("eli", *BILLING), stance("fay", 1, "O1", phase=Phase.PROPOSAL),
              stance("gus", 1, "O1", phase=Phase.PROPOSAL)]
    assert Meeting().steps(state(agreed, round_=2)) == [StepSpec(0, Phase.STEELMAN, owners),
                                                        StepSpec(1, Phase.EXCHANGE, [])]
    assert Meeting().steps(state(talked, round_=3)) == [StepSpec(0, Phase.OPTIONS, [MODERATOR]),
                                                        StepSpec(1, Phase.RANKED_VOTE, owners)]


def plan(phase: Phase, who: str, round_: int, step: int = 0) -> TurnPlan:
    return TurnPlan(key=f"d:r{round_}:s{step}:{who}", round=round_, step=step, phase=phase, persona_key=who)


def offered(task: str) -> list[tuple[str, str]]:
    """The options a task lists: each id with its label quoted (the owners' words are material)."""
    return re.findall(r"^(O\d+): <option>\s*(.+?)\s*</option>", task, re.M | re.S)


def test_round_one_asks_each_owner_for_a_proposal_in_round_one_of_the_meetings_rounds() -> None:
    assert "Round 1 of 4" in Meeting().task(state([], rounds=4), plan(Phase.PROPOSAL, "eli", 1), OWNERS[0])


def test_a_deliberation_states_the_positions_of_the_round_before_and_names_the_other_owners_to_address() -> None:
    s = state(PROPOSALS, round_=2)
    task = Meeting().task(s, plan(Phase.DELIBERATION, "eli", 2), OWNERS[0])
    assert "Round 2 of 3" in task and "steelman" not in task.lower()
    for shown in ('"Billing fixes" [O1]', '"Mobile app" [O2]', '"Platform work" [O3]'):
        assert shown in task, shown
    to_ask = task.split("To ask another owner (")[1].split(")")[0]
    assert to_ask == ", ".join(f'"{o.name}"' for o in OWNERS[1:]), "the others, not himself"
    # Nudged after a failed try, the owner gets the same facts.
    s.turns.append(Turn(key="d:r2:s0:eli", discussion_id="d", round=2, step=0, phase=Phase.DELIBERATION,
                        persona_key="eli", status=TurnStatus.FAILED, created_at=T0))
    nudged = Meeting().task(s, plan(Phase.DELIBERATION, "eli", 2), OWNERS[0])
    assert nudged.startswith("The moderator nudges you") and "Round 2 of 3" in nudged
    assert nudged.split("To ask another owner (")[1].split(")")[0] == to_ask


def test_a_steelman_round_asks_for_the_strongest_case_against_the_emerging_choice() -> None:
    agreed = [proposal("eli", *BILLING), stance("fay", 1, "O1", phase=Phase.PROPOSAL),
              stance("gus", 1, "O1", phase=Phase.PROPOSAL)]
    task = Meeting().task(state(agreed, round_=2), plan(Phase.STEELMAN, "eli", 2), OWNERS[0])
    assert "Round 2 of 3: steelman" in task
    assert '"Billing fixes" [O1]' in task


def test_the_moderator_fixes_the_vote_from_the_options_the_owners_chose_last() -> None:
    chose = [*PROPOSALS, stance("eli", 2, "O3"), stance("fay", 2, "O1"), stance("gus", 2, "for")]
    task = Meeting().task(state(chose, round_=3), plan(Phase.OPTIONS, "moderator", 3), MODERATOR)
    assert offered(task) == [BILLING, PLATFORM] and "Round 3 of 3" in task
    # When no owner chose an option there is no list to show, not an empty one.
    none = [stance("eli", 2, "for"), stance("fay", 2, "undecided")]
    task = Meeting().task(state(none, round_=3), plan(Phase.OPTIONS, "moderator", 3), MODERATOR)
    assert offered(task) == [] and "chose last" not in task


def test_the_owners_rank_from_the_fixed_options_else_from_those_they_chose_last() -> None:
    chose = [*PROPOSALS, stance("eli", 2, "O1"), stance("fay", 2, "O2"), stance("gus", 2, "O3")]
    merged = ("O4", "Mobile and platform together")
    ranking = plan(Phase.RANKED_VOTE, "hal", 3, step=1)
    task = Meeting().task(state([*chose, options_turn(BILLING, merged)], round_=3), ranking, OWNERS[3])
    assert offered(task) == [BILLING, merged]
    task = Meeting().task(state([*chose, options_turn(BILLING, merged, skipped=True)], round_=3), ranking, OWNERS[3])
    assert offered(task) == [BILLING, MOBILE, PLATFORM], "the moderator's options turn was skipped"
    # With no option at all, nothing tells the owner to rank from an empty list (that would forbid any ranking).
    bare = [stance("eli", 2, "for"), options_turn(skipped=True)]
    task = Meeting().task(state(bare, round_=3), ranking, OWNERS[3])
    assert offered(task) == [] and "options only" not in task


def test_the_recommendation_is_written_from_the_owners_tally() -> None:
    s = ranked()
    final = TurnPlan(key="d:final:r3", round=3, step=0, phase=Phase.FINAL_SYNTHESIS, persona_key="moderator")
    assert tally_summary(s) in Meeting().task(s, final, MODERATOR)


def test_a_person_who_wrote_in_the_thread_is_answered_by_name() -> None:
    s = state(PROPOSALS, round_=2)
    s.humans = [HumanMessage(id=7, discussion_id="d", author_id="U2", author_name="Priya", text="Refunds?",
                             created_at=T0)]
    answer = TurnPlan(key="d:h7", round=2, step=99, phase=Phase.ANSWER, persona_key="moderator", reply_to=7)
    assert '"Priya"' in Meeting().task(s, answer, MODERATOR)
