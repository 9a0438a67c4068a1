"""The meeting's rules at their edges, on hand-built states: the positions post as people read it, a meeting with
nobody to run it, and the other edges its rule tests leave open."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.deliberation.choices import Option
from core.deliberation.flows.base import State, Transition, TurnPlan
from core.deliberation.flows.meeting import Meeting, options_text, positions, positions_post
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
OWNERS = [Persona(key=k, name=k.title(), role=Role.OWNER, title="t") for k in ("eli", "fay", "gus")]
MODERATOR = Persona(key="moderator", name="Mo", role=Role.MODERATOR, title="t")


def _stance(who: str, round_: int, choice: str, listed: list[dict[str, str]] | None = None) -> Turn:
    data: dict[str, Any] = {"stance": f"{who} because", "label": choice.lower(), "choice": choice}
    if listed:
        data["listed"] = listed
    return Turn(key=f"d:r{round_}:s0:{who}", discussion_id="d", round=round_, step=0, phase=Phase.DELIBERATION,
                persona_key=who, status=TurnStatus.DONE, text="t", data=data, created_at=T0, finished_at=T0)


def _state(turns: list[Turn], personas: list[Persona], round_: int = 1, rounds: int = 3) -> State:
    d = Discussion(id="d", topic="t", flow="meeting", auto_rounds=rounds, round=round_, created_at=T0, updated_at=T0)
    return State(discussion=d, personas=personas, turns=turns)


def test_the_positions_post_lists_each_owner_on_a_line_of_its_own() -> None:
    turns = [_stance("eli", 1, "O1", [{"id": "O1", "label": "Billing fixes"}]), _stance("fay", 1, "O1")]
    post = positions_post(_state(turns, [MODERATOR, *OWNERS]))
    assert post.split("\n") == [
        "**Round 2 of 3** — the moderator states the positions from round 1:",
        "- Eli: Billing fixes [O1] — eli because",
        "- Fay: Billing fixes [O1] — fay because",
        "- Gus: undecided — no stance recorded this round",  # Gus said nothing: undecided, and said so
    ]


def test_a_positions_post_with_no_owner_says_nobody_recorded_one() -> None:
    assert positions_post(_state([], [MODERATOR])).split("\n") == [
        "**Round 2 of 3** — the moderator states the positions from round 1:",
        "- (no owner recorded a position)"]


def test_a_meeting_without_a_moderator_has_no_writer() -> None:
    assert Meeting().writer(_state([], OWNERS), Phase.FINAL_SYNTHESIS) is None
    assert Meeting().writer(_state([], [MODERATOR, *OWNERS]), Phase.FINAL_SYNTHESIS) == MODERATOR


def test_a_round_before_the_last_opens_the_next_with_the_positions_and_the_last_goes_to_the_final() -> None:
    assert Meeting().after_round(_state([], [MODERATOR, *OWNERS], round_=2, rounds=3)) == \
        Transition(round=3, notice="positions")
    assert Meeting().after_round(_state([], [MODERATOR, *OWNERS], round_=3, rounds=3)) == Transition(pending="final")
    assert Meeting().after_round(_state([], [MODERATOR, *OWNERS], round_=4, rounds=3)) == Transition(pending="final")


def test_the_positions_stated_are_none_when_no_owner_sits() -> None:
    assert positions(_state([], [MODERATOR]), 1) == ""


def _task(phase: Phase, who: Persona, state: State, round_: int, step: int = 0) -> str:
    plan = TurnPlan(key=f"d:r{round_}:s{step}:{who.key}", round=round_, step=step, phase=phase, persona_key=who.key)
    return Meeting().task(state, plan, who)


def test_the_roster_asks_for_owners_of_the_domains_the_decision_touches() -> None:
    d = Discussion(id="d", topic="t", flow="meeting", experts=4, created_at=T0, updated_at=T0)
    task = _task(Phase.ROSTER, MODERATOR, State(discussion=d, personas=[MODERATOR], turns=[]), 1)
    for said in ("Name 4 domain owners for this meeting: the product or system areas this decision touches, each "
                 "owned by one person.",
                 "Give each a realistic full name (different name cultures), the domain as the title, 2-4 areas of "
                 "expertise, a thinking style, a natural bias and a reply tendency.",
                 "Make sure their domains pull in different directions."):
        assert said in task, said


def test_a_proposal_asks_for_three_to_five_sentences_and_a_new_option() -> None:
    task = _task(Phase.PROPOSAL, OWNERS[0], _state([], [MODERATOR, *OWNERS]), 1)
    for said in ("Round 1 of 3: your opening proposal.",
                 "Assess the topic from your domain's point of view and write a proposal of three to five sentences: "
                 "what the team should prioritise and why, with evidence.",
                 "Your stance label puts your proposal on the table: `new: <your proposal in at most five words>`."):
        assert said in task, said


DELIBERATE = ("Challenge proposals you disagree with and say why from your domain; defend yours if challenged, with "
              "evidence; revise your position if an argument is compelling.")
LABEL = ("Your stance label is the id of the option you support (such as O2), or `new: <your option in at most five "
         "words>` to put one on the table that is not there yet.")


def test_a_deliberation_asks_to_challenge_defend_and_revise_and_to_name_whom_to_ask() -> None:
    turns = [_stance("eli", 1, "O1", [{"id": "O1", "label": "Billing fixes"}])]
    task = _task(Phase.DELIBERATION, OWNERS[0], _state(turns, [MODERATOR, *OWNERS], round_=2), 2)
    assert task.startswith("Round 2 of 3: deliberation. The moderator states the positions from round 1:\n")
    for said in (DELIBERATE, 'To ask another owner ("Fay", "Gus") directly, address them by name: they answer you '
                 "this round.", "120-200 words.", LABEL):
        assert said in task, said
    # With no position to state, the task goes straight on.
    alone = _task(Phase.DELIBERATION, OWNERS[0], _state([], [MODERATOR], round_=2), 2)
    assert alone.startswith(f"Round 2 of 3: deliberation. {DELIBERATE}")


def test_a_steelman_round_argues_against_the_emerging_choice() -> None:
    task = _task(Phase.STEELMAN, OWNERS[0], _state([], [MODERATOR], round_=2), 2)
    assert task.startswith("Round 2 of 3: steelman. The owners converged quickly, so argue the strongest case "
                           "AGAINST the emerging choice, then say whether it changes your position. " + DELIBERATE)


def test_an_exchange_answers_by_name() -> None:
    task = _task(Phase.EXCHANGE, OWNERS[1], _state([], [MODERATOR, *OWNERS], round_=2), 2, 1)
    assert task == ("Another owner addressed you by name in round 2. Answer them directly and by name in 60-120 "
                    f"words: concede, counter, or propose a middle way. {LABEL}")


def test_the_options_task_fixes_three_to_six_options_and_lists_none_when_none_were_chosen() -> None:
    task = _task(Phase.OPTIONS, MODERATOR, _state([], [MODERATOR, *OWNERS], round_=3), 3)
    assert task == ("Round 3 of 3: before the final vote, fix the list of options the owners will rank: three to six "
                    "distinct options from what was proposed and argued, each in a few words, merging wordings that "
                    "mean the same thing. Add nothing nobody argued for.")


def test_the_final_vote_states_the_last_rounds_positions_and_asks_for_an_ordering() -> None:
    turns = [_stance("eli", 2, "O1", [{"id": "O1", "label": "Billing fixes"}])]
    task = _task(Phase.RANKED_VOTE, OWNERS[1], _state(turns, [MODERATOR, *OWNERS], round_=3), 3, 1)
    assert task.startswith("Round 3 of 3: final vote. The moderator states the positions from round 2:\n")
    assert '"Eli": "Billing fixes" [O1]' in task
    assert ("\nSubmit your final priority ordering, top three to five, most important first, each with one line on why "
            "it sits there and which domain it affects most. This is your last word.\nRank from these options only, "
            "each by its id (such as O2), each at most once:\nO1: <option>") in task
    bare = _task(Phase.RANKED_VOTE, OWNERS[1], _state([], [MODERATOR, *OWNERS], round_=3), 3, 1)
    assert bare.endswith("This is your last word."), "no option to rank from: no list"


def test_the_recommendation_task_recommends_only_and_leaves_the_consensus_to_the_tally() -> None:
    task = _task(Phase.FINAL_SYNTHESIS, MODERATOR, _state([], [MODERATOR, *OWNERS], round_=3), 3)
    assert task.startswith(
        "Write the council's recommendation. The ranking itself is tallied from the owners' votes and added for you; "
        "give the two or three strongest arguments made (attributed), the notable dissents (naming who holds them; "
        "leave the list empty if there were none), and two or three actionable next steps for people to take. "
        "Recommend only: nothing is executed automatically. Do not call it a consensus: the tally decides that. "
        "The owners' tally, which your dissents must agree with:\n")


def test_a_phase_the_meeting_has_no_task_for_asks_to_speak_from_the_domain() -> None:
    assert _task(Phase.OPENING, OWNERS[0], _state([], [MODERATOR, *OWNERS], round_=2), 2) == \
        "Speak from your domain. 100-150 words."


def test_the_positions_an_owner_reads_give_each_owner_a_line_and_quote_only_a_reason_given() -> None:
    listed = [{"id": "O1", "label": "Billing fixes"}]
    turns = [_stance("eli", 1, "O1", listed), _stance("fay", 1, "O1")]
    assert turns[1].data is not None
    turns[1].data["stance"] = ""  # Fay chose without a reason
    stated = positions(_state(turns, [MODERATOR, *OWNERS[:2]]), 1)
    assert stated.split("\n") == ["The moderator states the positions from round 1:", '- "Eli": "Billing fixes" [O1]',
                                  '<stance name="Eli">', "eli because", "</stance>", '- "Fay": "Billing fixes" [O1]']


def test_the_options_for_the_vote_are_posted_under_their_heading() -> None:
    text = options_text([Option("O2", "Mobile app")])
    assert text.split("\n") == ["**Options for the final vote**", "1. Mobile app [O2]"]
