"""A recorded stance as people read it (pure): the line a post ends with for each kind of choice, what a turn's
record keeps of it, and the stance table's rows as chat text, written out in full rather than read from the module."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.deliberation import stances
from core.deliberation.choices import Option
from core.deliberation.flows.base import State
from core.deliberation.question import OPENS
from core.deliberation.stances import Row
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

SHOWN = {"O1": "Stabilise the core first", "O2": "Ship the new API"}
ON_TABLE = [Option(id="O1", label="Stabilise the core first"), Option(id="O2", label="Ship the new API")]


@pytest.mark.parametrize(("data", "said"), [
    ({"choice": "O2", "stance": "the API is overdue"}, "Stance: O2 (Ship the new API) — the API is overdue"),
    ({"choice": "O1", "stance": "  "}, "Stance: O1 (Stabilise the core first)"),
    ({"choice": "O1"}, "Stance: O1 (Stabilise the core first)"),
    ({"choice": "unreadable", "label": "O7", "stance": "as I said"},
     "Stance: O7 _(names no option on the table: counted as undecided)_ — as I said"),
    ({"choice": "unreadable"}, "Stance: _(names no option on the table: counted as undecided)_"),
    ({"choice": "for", "stance": "yes"}, "Stance: for — yes"),
    ({"choice": "O9"}, "Stance: option O9"),
    ({"stance": "no choice made"}, "Stance: undecided — no choice made"),
    ({}, "Stance: undecided"),
])
def test_each_kind_of_choice_is_said_as_a_post_ends_with_it(data: dict[str, str], said: str) -> None:
    assert stances.line(data, SHOWN) == said


def test_a_turns_record_keeps_its_choice_and_the_line_its_post_ends_with() -> None:
    record = stances.record({"label": "O2", "stance": "the API is overdue"}, ON_TABLE)
    assert record["choice"] == "O2"
    assert record["shown"] == "Ship the new API [O2]"
    assert record["said"] == "Stance: O2 (Ship the new API) — the API is overdue"


def test_a_record_without_a_label_is_undecided() -> None:
    record = stances.record({"stance": "not sure yet"}, ON_TABLE)
    assert (record["choice"], record["said"]) == ("undecided", "Stance: undecided — not sure yet")


def test_a_new_option_is_said_with_its_new_id_and_the_label_it_was_given() -> None:
    record = stances.record({"label": "new: Freeze features", "stance": "neither"}, ON_TABLE)
    assert record["choice"] == "O3"
    assert record["said"] == "Stance: O3 (Freeze features) — neither"
    assert record["shown"] == "Freeze features [O3]"


def test_the_table_as_chat_text_names_each_persona_their_choice_and_the_contrarian_aside() -> None:
    rows = [Row(persona="Ana", choice="O1", stance="core first", before=None, label="Stabilise the core first [O1]"),
            Row(persona="Bo", choice="undecided", stance="unsure", before="O1", label=""),
            Row(persona="Cy", choice="O2", stance="ship", before="O2", counted=False, label="Ship the new API [O2]")]
    shown = stances.text(rows, 2, with_verdict=False)
    assert shown == ("**Stances after round 2**\n"
                     "- Ana: **Stabilise the core first [O1]** (new) — core first\n"
                     f"- Bo: **undecided** ({rows[1].change}) — unsure\n"
                     f"- Cy: **Ship the new API [O2]** ({rows[2].change}) — ship _(the Contrarian: shown, not "
                     "counted)_")


def test_the_tables_verdict_names_the_options_by_their_labels() -> None:
    rows = [Row(persona="Ana", choice="O1", stance="a", before=None), Row(persona="Bo", choice="O1", stance="b",
                                                                           before=None)]
    with_names = stances.text(rows, 1, shown=SHOWN)
    assert "Stabilise the core first" in with_names.split("**Verdict:**")[1]


def test_a_stance_recorded_before_choices_were_kept_is_read_against_the_options() -> None:
    at = datetime(2026, 11, 2, tzinfo=UTC)

    def turn(round_: int, step: int, persona: str, phase: Phase, data: dict[str, object]) -> Turn:
        return Turn(key=f"d:r{round_}:s{step}:{persona}", discussion_id="d", round=round_, step=step, phase=phase,
                    persona_key=persona, status=TurnStatus.PUBLISHED, text="…", data=data, created_at=at)

    opening = turn(1, 0, "moderator", Phase.OPENING,
                   {OPENS: True, "listed": [{"id": o.id, "label": o.label} for o in ON_TABLE]})
    state = State(discussion=Discussion(id="d", topic="Core or API?", round=2, created_at=at, updated_at=at),
                  personas=[Persona(key="e1", name="Ana", role=Role.EXPERT, title="Core")],
                  turns=[opening, turn(1, 1, "e1", Phase.STATEMENT, {"label": "O1", "stance": "core first"}),
                         turn(2, 1, "e1", Phase.STATEMENT, {"label": "O1", "stance": " as before "})])
    [row] = stances.table(state, 2)
    assert (row.choice, row.before, row.change, row.stance) == ("O1", "O1", "unchanged", "as before")
