"""Pure rules of the meeting and the open floor: steelman, tally, bids, the termination policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation import tally
from core.deliberation.flows import meeting, open_floor
from core.deliberation.flows.base import State
from core.models import Discussion, FlowOptions, HumanMessage, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)


def turn(key: str, who: str, phase: Phase, round_: int, step: int, data: dict, at: int = 0) -> Turn:
    return Turn(key=key, discussion_id="d", round=round_, step=step, phase=phase, persona_key=who,
                status=TurnStatus.PUBLISHED, text="...", data=data, created_at=T0,
                finished_at=T0 + timedelta(minutes=at))


def test_owners_who_agree_after_round_one_get_a_steelman_round_once() -> None:
    owners = [Persona(key=k, name=k.upper(), role=Role.OWNER) for k in ("a", "b", "c")]
    d = Discussion(id="d", topic="t", flow="meeting", auto_rounds=4, round=2, created_at=T0, updated_at=T0)
    agree = [turn(f"p{k}", k, Phase.PROPOSAL, 1, 0, {"label": "O1", "stance": "s", "choice": "O1"}) for k in "abc"]
    s = State(discussion=d, personas=[meeting.MODERATOR, *owners], turns=agree)
    assert meeting.Meeting().steps(s)[0].phase == Phase.STEELMAN
    s.turns[0] = turn("pa", "a", Phase.PROPOSAL, 1, 0, {"label": "O2", "stance": "s", "choice": "O2"})
    s.turns[1] = turn("pb", "b", Phase.PROPOSAL, 1, 0, {"label": "for", "stance": "s", "choice": "for"})
    assert meeting.Meeting().steps(s)[0].phase == Phase.DELIBERATION
    d.round = 4
    assert [x.phase for x in meeting.Meeting().steps(s)] == [Phase.OPTIONS, Phase.RANKED_VOTE]


def test_three_of_four_owners_choosing_one_id_get_the_steelman() -> None:
    owners = [Persona(key=k, name=k.upper(), role=Role.OWNER) for k in "abcd"]
    d = Discussion(id="d", topic="t", flow="meeting", auto_rounds=3, round=2, created_at=T0, updated_at=T0)
    listed = turn("o", "a", Phase.PROPOSAL, 1, 0, {"listed": [{"id": "O1", "label": "Stabilise the core"},
                                                            {"id": "O2", "label": "Ship the fix"}]})
    labels = {"a": "O1", "b": "Stabilise the core", "c": "o1", "d": "O2"}  # an id, or the option's whole label
    s = State(discussion=d, personas=[meeting.MODERATOR, *owners],
              turns=[listed, *(turn(f"p{k}", k, Phase.PROPOSAL, 1, 0, {"label": v, "stance": "s"})
                               for k, v in labels.items())])
    assert meeting.Meeting().steps(s)[0].phase == Phase.STEELMAN
    # 2 of 4 is no majority; "stabilise core" is not the option's label and names nothing
    s.turns[3] = turn("pc", "c", Phase.PROPOSAL, 1, 0, {"label": "stabilise core", "stance": "s"})
    assert meeting.Meeting().steps(s)[0].phase == Phase.DELIBERATION


def test_the_tally_is_by_average_rank_with_first_places() -> None:
    ranked = tally.tally({"A": ["O1", "O2", "O3"], "B": ["O2", "O1"], "C": ["O1"]})
    assert [(t.item, round(t.average, 2), t.firsts) for t in ranked] == [
        ("O1", 1.33, 2), ("O2", 3.0, 1), ("O3", 5.0, 0)]
    assert tally.first_choices({"A": ["O4"], "B": []}) == ["O4"]


def floor(bids: dict[str, int], spoken: tuple[str, ...] = (), humans: list[str] | None = None) -> State:
    people = [Persona(key=k, name=f"{k.capitalize()} Doe", role=Role.EXPERT, expertise=["x"]) for k in bids]
    d = Discussion(id="d", topic="t", flow="open", created_at=T0, updated_at=T0, options=FlowOptions())
    turns = [turn(f"s{i}", who, Phase.SPEECH, 1, 2 * i + 2, {"text": "t"}, at=i) for i, who in enumerate(spoken)]
    step = 2 * len(spoken) + 1
    turns += [turn(f"d:r1:s{step}:{k}", k, Phase.BID, 1, step, {"urgency": u, "point": "p"}) for k, u in bids.items()]
    msgs = [HumanMessage(discussion_id="d", author_id="U", author_name="Sam", text=t,
                         created_at=T0 - timedelta(minutes=1)) for t in humans or []]
    return State(discussion=d, personas=[open_floor.LEAD, *people], turns=turns, humans=msgs)


def test_the_highest_bid_speaks_ties_go_to_who_spoke_least_and_people_raise_bids() -> None:
    assert open_floor.winner(floor({"ana": 8, "ben": 6}), 1, 1).key == "ana"  # type: ignore[union-attr]
    tie = floor({"ana": 7, "ben": 7}, spoken=("ana",))
    assert open_floor.winner(tie, 1, 3).key == "ben"  # type: ignore[union-attr]
    named = floor({"ana": 8, "ben": 6}, humans=["Ben, what do you make of this?"])
    assert open_floor.winner(named, 1, 1).key == "ben"  # type: ignore[union-attr]


def test_the_floor_closes_only_when_the_policy_holds() -> None:
    def speech(who: str, i: int, **flags: object) -> Turn:
        data = {"text": "t", "stance": "s", "label": "for", "builds_on_earlier": False, "proposes_synthesis": False,
                "open_question": ""} | flags
        return turn(f"s{i}", who, Phase.SPEECH, 1, 2 * i + 2, data, at=i)

    s = floor({"ana": 1, "ben": 1})
    s.turns = [speech("ana", 0), speech("ben", 1), speech("ana", 2, builds_on_earlier=True),
               speech("ben", 3, builds_on_earlier=True, proposes_synthesis=True)]
    assert open_floor.policy_met(s)
    s.turns[-1] = speech("ben", 3, builds_on_earlier=True, proposes_synthesis=True, open_question="Ana, why?")
    assert not open_floor.policy_met(s), "a question left hanging keeps the floor open"
    s.turns = s.turns[:3]
    assert not open_floor.policy_met(s), "Ben has spoken only once"
    s.discussion.options.max_speeches = 3
    assert open_floor.closed(s), "the cap closes the floor anyway"
