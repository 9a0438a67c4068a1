"""A person's seat, rule by rule: the seats `--seat` gives, what a person may pick, what their turn asks in plain
words, and how their reply becomes the turn (a ranking, a stance, who wrote it)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import choices, seats
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.deliberation.holders import PERSON_ICON
from core.deliberation.schemas import RankedItem
from core.models import Discussion, FlowOptions, Persona, Phase, Role, SeatHolder, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)
DANA = Persona(key="dana", name="Dana", role=Role.OWNER, title="Billing", held_by="U1")


def discussion(flow: str, *people: SeatHolder) -> Discussion:
    return Discussion(id="d", topic="t", flow=flow, created_at=T0, updated_at=T0,
                      options=FlowOptions(people=list(people)))


# the seats --seat gives ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("flow", "role"), [("moderated", Role.EXPERT), ("council", Role.ADVISOR),
                                            ("meeting", Role.OWNER), ("open", Role.EXPERT)])
def test_a_seat_takes_the_flows_speaking_role(flow: str, role: Role) -> None:
    [seat] = seats.people_seats(discussion(flow, SeatHolder(user_id="U9", name="Ines Ortega")), [])
    assert seat == Persona(key="ines_ortega", name="Ines Ortega", role=role, title=seats.IN_PERSON, icon=PERSON_ICON,
                           held_by="U9", expertise=["their own experience"])


def test_seats_are_keyed_apart_and_a_person_already_seated_is_not_seated_twice() -> None:
    taken = [Persona(key="ines", name="Ines", role=Role.EXPERT), DANA]
    out = seats.people_seats(discussion("moderated", SeatHolder(user_id="U1", name="Dana"),
                                        SeatHolder(user_id="U2", name="Ines", title="Payments"),
                                        SeatHolder(user_id="U3", name="Ines"),
                                        SeatHolder(user_id="U4", name="李"), SeatHolder(user_id="U5", name="金"),
                                        SeatHolder(user_id="U6", name="x" * 100)), taken)
    assert [(p.key, p.held_by, p.title) for p in out] == [
        ("ines_p", "U2", "Payments"), ("ines_p_p", "U3", seats.IN_PERSON), ("person_3", "U4", seats.IN_PERSON),
        ("person_4", "U5", seats.IN_PERSON), ("x" * 40, "U6", seats.IN_PERSON)]
    assert out[-1].name == "x" * 80
    assert [p.key for p in seats.with_people(discussion("moderated", SeatHolder(user_id="U2", name="Ines")),
                                             taken)] == ["ines", "dana", "ines_p"]


# what a person may pick ----------------------------------------------------------------------------------------
def state_with(options: list[Option]) -> State:
    proposals = Turn(key="d:r1:synth", discussion_id="d", round=1, step=9, phase=Phase.ROUND_SYNTHESIS,
                     persona_key="moderator", status=TurnStatus.DONE, data={"listed": choices.records(options)},
                     created_at=T0)
    return State(discussion=discussion("moderated"), personas=[DANA], turns=[proposals] if options else [])


def test_without_options_a_person_picks_for_against_or_undecided() -> None:
    assert seats.stance_choices(state_with([])) == [Option("for", "for"), Option("against", "against"),
                                                    Option("undecided", "undecided")]


def test_with_options_a_person_picks_among_the_four_latest_or_undecided() -> None:
    options = choices.extend([], ["A", "B", "C", "D", "E", "F"])
    assert seats.stance_choices(state_with(options)) == [
        Option("O3", "C [O3]"), Option("O4", "D [O4]"), Option("O5", "E [O5]"), Option("O6", "F [O6]"),
        Option("undecided", "undecided")]


# what the turn asks --------------------------------------------------------------------------------------------
def test_the_ask_lists_the_quoted_options_one_a_line_in_plain_words() -> None:
    task = "Rank these: O1: <option>Adopt &quot;trunk&quot; &amp; CI</option> <option> Keep gitflow </option>"
    text = seats.ask_text(task, DANA, "Ranked vote", "30 minutes", ranked=True)
    assert text == (
        "**Dana, it is your turn** (Ranked vote, as Billing). Rank these:\n- O1: Adopt \"trunk\" & CI\n- Keep gitflow"
        "\n\nPick each place from the menus below, or write your ranking here: one item per line, or separated by "
        "semicolons. If you don't answer within 30 minutes, an AI stand-in speaks for you this time; write here any "
        "time to take your seat back.")


@pytest.mark.parametrize(("title", "seat"), [("", ""), (seats.IN_PERSON, ""), ("Billing", ", as Billing")])
def test_the_ask_names_the_seats_title_only_when_it_has_one(title: str, seat: str) -> None:
    text = seats.ask_text("Say it.", DANA.model_copy(update={"title": title}), "Statement", "1 minute")
    assert text.startswith(f"**Dana, it is your turn** (Statement{seat}). Say it.\n\nYour next message here is "
                           "your turn. You may")


# how the reply becomes the turn --------------------------------------------------------------------------------
def test_a_listed_ranking_is_read_most_important_first_with_its_reasons_and_at_most_five() -> None:
    vote = seats.ranking("Here is mine:\n1. **Billing fixes** — cost first\n2) Mobile app\n- Platform\n* Infra\n"
                         "• Docs\n6. Extra\nStance: O1 — billing first")
    assert vote.ranking == [RankedItem(item="Billing fixes", why="cost first"), RankedItem(item="Mobile app", why=""),
                            RankedItem(item="Platform", why=""), RankedItem(item="Infra", why=""),
                            RankedItem(item="Docs", why="")]
    assert vote.stance == vote.label == "Billing fixes"


@pytest.mark.parametrize(("text", "items"), [
    ("Billing fixes; Mobile app;  Platform.", ["Billing fixes", "Mobile app", "Platform"]),
    ("Billing > Mobile > *Platform*", ["Billing", "Mobile", "Platform"]),
    ("Billing;\nMobile\nStance: for — billing", ["Billing", "Mobile"]),
    ("", ["undecided"]),
    (" ; . ", ["undecided"]),
])
def test_a_ranking_on_one_line_is_split_at_semicolons_or_arrows(text: str, items: list[str]) -> None:
    assert [i.item for i in seats.ranking(text).ranking] == items


def test_a_listed_rankings_markup_is_cut_and_a_bulleted_stance_line_is_not_an_item() -> None:
    vote = seats.ranking("1. **XML export** — _Xcode builds first_\n2. Cut scope\n**Stance:** O2 — scope\n"
                         "* _stance_: for")
    assert vote.ranking == [RankedItem(item="XML export", why="Xcode builds first"),
                            RankedItem(item="Cut scope", why="")]


def test_a_one_line_ranking_keeps_each_items_words_whole_with_no_reason() -> None:
    vote = seats.ranking("Xero sync. ; *Xcode*")
    assert vote.ranking == [RankedItem(item="Xero sync", why=""), RankedItem(item="Xcode", why="")]
    assert seats.ranking("").ranking == [RankedItem(item="undecided", why="")]


def test_a_ranked_items_words_and_reason_are_cut_at_two_hundred_characters() -> None:
    [item] = seats.ranking(f"1. {'a' * 300} — {'b' * 300}").ranking
    assert (item.item, item.why) == ("a" * 200, "b" * 200)
    assert seats.ranking("c" * 300).ranking[0].item == "c" * 200


def test_the_text_without_its_stance_line_is_one_line() -> None:
    assert seats.stances_free("first\n\n  second   part\nStance: for — x") == "first second part"
    assert seats.stances_free("first\nsecond") == "first second"


def test_a_statement_records_its_stance_line_its_words_and_who_wrote_it() -> None:
    data = seats.answer_data(Phase.STATEMENT, "  We should trial it.\nStance: O1 — the trial  ", "against", DANA, True)
    assert data == {"text": "We should trial it.\nStance: O1 — the trial", "written_by": "U1",
                    "written_by_name": "Dana", "stance": "the trial", "label": "O1", "builds_on_earlier": True,
                    "proposes_synthesis": False, "open_question": ""}


def test_without_a_stance_line_the_menus_pick_then_undecided_is_the_stance() -> None:
    picked = seats.answer_data(Phase.STATEMENT, "We  should\ntrial it.", "Against", DANA, True)
    # Kept as written (a `new:` option keeps its case); what it names is read without regard to case.
    assert (picked["label"], picked["stance"]) == ("Against", "We should trial it.")
    assert seats.answer_data(Phase.STATEMENT, "Maybe.", "", DANA, True)["label"] == "undecided"
    assert len(seats.answer_data(Phase.STATEMENT, "w " * 300, "", DANA, True)["stance"]) == 200
    assert seats.answer_data(Phase.STATEMENT, "Maybe.", "x" * 60, DANA, True)["label"] == "x" * 40


def test_only_a_stance_turn_or_an_open_floor_speech_records_a_stance() -> None:
    assert "stance" not in seats.answer_data(Phase.REBUTTAL, "Fair point.", "for", DANA, False)
    assert seats.answer_data(Phase.SPEECH, "Fair point.", "for", DANA, False)["label"] == "for"


def test_a_ranked_vote_records_the_ranking_and_who_wrote_it() -> None:
    data = seats.answer_data(Phase.RANKED_VOTE, "1. Billing\n2. Mobile", "", DANA, True)
    assert data["ranking"] == [{"item": "Billing", "why": "", "domain": ""},
                               {"item": "Mobile", "why": "", "domain": ""}]
    assert (data["label"], data["written_by"], data["written_by_name"]) == ("Billing", "U1", "Dana")
