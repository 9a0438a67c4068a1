"""Who a roster turn seats, rule by rule: a meeting's owners, the open floor's slots (each its own name culture,
about one in five an outlier, a short plan filled), and the participant a slot becomes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import seating
from core.deliberation.roster import EXPERT_ICONS
from core.deliberation.schemas import ExpertSpec, FloorPlan, Slot
from core.models import Discussion, Persona, Role

T0 = datetime(2026, 11, 2, tzinfo=UTC)
MODERATOR = Persona(key="moderator", name="Moderator", role=Role.MODERATOR)
HISTORIAN = Persona(key="historian", name="Historian", role=Role.HISTORIAN)


def spec(name: str, **extra: object) -> ExpertSpec:
    return ExpertSpec(**({"name": name, "title": f"{name}'s title", "expertise": ["x"], "thinking_style": "calm",
                          "bias": "b", "reply_tendency": "asks"} | extra))  # type: ignore[arg-type]


def slot(culture: str = "", brief: str = "A regulator", position: str = " for ", tone: str = " blunt ") -> Slot:
    return Slot(brief=brief, name_culture=culture, position=position, tone=tone)


def test_a_meeting_seats_its_moderator_and_the_owners_only() -> None:
    d = Discussion(id="d", topic="t", flow="meeting", experts=2, created_at=T0, updated_at=T0)
    out = seating.roster(d, [MODERATOR, HISTORIAN], {"experts": [spec("Ana Lima").model_dump(),
                                                                 spec("Ben Okoro").model_dump()]})
    assert [(p.key, p.role) for p in out] == [("moderator", Role.MODERATOR), ("ana_lima", Role.OWNER),
                                              ("ben_okoro", Role.OWNER)]


def test_an_open_floor_seats_its_moderator_and_one_slot_per_participant() -> None:
    d = Discussion(id="d", topic="t", flow="open", experts=3, created_at=T0, updated_at=T0)
    out = seating.roster(d, [MODERATOR, HISTORIAN], {"slots": [slot("Korean").model_dump()]})
    assert [p.key for p in out] == ["moderator", "slot1", "slot2", "slot3"]


def test_the_moderated_flow_seats_the_whole_roster_around_its_experts() -> None:
    d = Discussion(id="d", topic="t", flow="moderated", experts=1, created_at=T0, updated_at=T0)
    keys = [p.key for p in seating.roster(d, [], {"experts": [spec("Ana Lima").model_dump()]})]
    assert keys[0] == "moderator" and keys[1] == "ana_lima" and len(keys) > 2


@pytest.mark.parametrize(("count", "picked"), [(1, set()), (2, set()), (3, {2}), (4, {3}), (5, {4}), (9, {4}),
                                               (10, {4, 9})])
def test_about_one_participant_in_five_is_an_outlier(count: int, picked: set[int]) -> None:
    assert seating.outliers(count) == picked


def test_each_slot_has_its_own_name_culture_and_a_short_plan_is_filled() -> None:
    plan = FloorPlan(slots=[slot("Korean"), slot(" korean "), slot(""), slot("Nigerian")])
    out = seating.slots(plan, 6)
    notes = [p.reply_tendency for p in out]
    assert notes == ["name culture: Korean", "name culture: Nigerian", "name culture: Brazilian",
                     "name culture: German", "name culture: Indian; outlier", "name culture: Japanese"]
    assert [p.key for p in out] == [f"slot{i}" for i in range(1, 7)]
    assert [p.name for p in out] == [f"Participant {i}" for i in range(1, 7)]
    assert [p.icon for p in out] == EXPERT_ICONS[:6] and {p.role for p in out} == {Role.EXPERT}
    assert (out[0].title, out[0].thinking_style, out[0].bias) == ("A regulator", "blunt", "for")
    assert (out[5].title, out[5].bias, out[5].thinking_style) == ("A practitioner with a view of their own",
                                                                  "undecided", "plain")


def test_a_plan_longer_than_the_floor_is_cut_and_every_culture_used_gets_a_numbered_one() -> None:
    out = seating.slots(FloorPlan(slots=[slot(c) for c in ["X"] * 20]), 14)
    cultures = [p.reply_tendency.split(": ")[1].removesuffix("; outlier") for p in out]
    assert len(out) == 14 and len(set(cultures)) == 14
    assert cultures[:2] == ["X", "Korean"] and cultures[-1] == "culture 13"
    assert [i for i, p in enumerate(out) if p.reply_tendency.endswith("; outlier")] == [4, 9]


def test_a_slots_fields_are_cut_to_what_a_post_shows() -> None:
    [p] = seating.slots(FloorPlan(slots=[slot("Korean", brief="b" * 300, position="p" * 300, tone="t" * 100)]), 1)
    assert (len(p.title), len(p.bias), len(p.thinking_style)) == (200, 200, 80)
    [q] = seating.slots(FloorPlan(slots=[slot("Korean", brief="**Dana** <@U1>")]), 1)
    assert "**" not in q.title and "<@" not in q.title


def test_the_participant_a_slot_becomes_keeps_its_key_and_its_note() -> None:
    [placeholder] = seating.slots(FloorPlan(slots=[slot("Korean")]), 1)
    seated = seating.seat(placeholder, spec("Ji-woo Park", expertise=[f"e{i}" for i in range(9)],
                                            reply_tendency="asks back"))
    assert (seated.key, seated.name, seated.title) == ("slot1", "Ji-woo Park", "Ji-woo Park's title")
    assert seated.expertise == [f"e{i}" for i in range(6)]
    assert (seated.thinking_style, seated.bias) == ("calm", "b")
    assert seated.reply_tendency == "asks back (name culture: Korean)"


def test_a_participant_without_a_name_title_or_expertise_keeps_the_slots() -> None:
    [placeholder] = seating.slots(FloorPlan(slots=[slot("Korean", brief="t" * 150)]), 1)
    seated = seating.seat(placeholder, spec("<@U1>", title="**", expertise=[]))
    assert (seated.name, seated.title) == ("Participant 1", "t" * 120)
    assert seated.expertise == ["their own experience"]
    assert seating.seat(placeholder, spec("Ana", title="a" * 300)).title == "a" * 120
