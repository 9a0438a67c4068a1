"""When a meeting's owners agree, rule by rule: a strict majority of the seated owners, at least two, on one option
id in their latest stance; and a middle round after such agreement becomes the one steelman round."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from core.deliberation.flows.base import State
from core.deliberation.flows.meeting import converged, steelman_round
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

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


def state(turns: list[Turn], owners: int = 4, rounds: int = 3) -> State:
    d = Discussion(id="d", topic="t", flow="meeting", auto_rounds=rounds, created_at=T0, updated_at=T0)
    return State(discussion=d, personas=[MODERATOR, *OWNERS[:owners]], turns=turns)


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
