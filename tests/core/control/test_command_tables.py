"""The commands' names, bounds and defaults one by one: each flow's name, each bound on a start's numbers taken at
it and refused one past it, the longest topic, and what a command means when the adapter or the person says
nothing more. Written from what people type and what the adapters leave out, not read from the module."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from core.control import commands as c
from core.control import defaults
from core.control.permissions import Policy, is_admin, visible
from core.control.replies import UserError
from core.control.starting import validate_topic
from core.models import Discussion, NextAction

FLOWS = ["moderated", "council", "meeting", "open"]


@pytest.mark.parametrize("flow", FLOWS)
def test_each_flow_is_a_start_s_flow_and_a_channel_default(flow: str) -> None:
    assert c.StartDiscussion(topic="t", flow=flow).flow == flow  # type: ignore[arg-type]
    assert defaults.parse(f"flow={flow}") == ({"flow": flow}, [])


def test_a_flow_that_is_none_of_them_is_refused() -> None:
    with pytest.raises(ValidationError):
        c.StartDiscussion(topic="t", flow="debate")  # type: ignore[arg-type]
    assert defaults.parse("flow=debate")[1] == [
        "`--flow` takes one of `moderated`, `council`, `meeting`, `open`; you wrote `debate`."]


@pytest.mark.parametrize(("field", "at", "past"), [("experts", 2, 1), ("experts", 8, 9), ("poll_hours", 0, -1),
                                                   ("poll_hours", 720, 721)])
def test_a_start_s_number_is_taken_at_its_bound_and_refused_one_past_it(field: str, at: int, past: int) -> None:
    assert getattr(c.StartDiscussion(topic="t", **{field: at}), field) == at  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        c.StartDiscussion(topic="t", **{field: past})  # type: ignore[arg-type]


def test_a_topic_under_four_thousand_characters_is_taken_and_one_of_four_thousand_refused() -> None:
    assert validate_topic("x" * 3999) == "x" * 3999
    with pytest.raises(UserError) as refused:
        validate_topic("x" * 4000)
    assert str(refused.value) == "That topic is 4,000 characters long; please keep it under 4,000."


def test_a_command_the_adapter_says_nothing_more_of_is_a_member_s_in_the_console_channel() -> None:
    now = datetime(2026, 3, 2, tzinfo=UTC)
    d = Discussion(id="d1", topic="t", channel="C1", created_by="U1", created_at=now, updated_at=now)  # console
    cmd = c.Pause(discussion_id="d1", user_id="U2", in_channel="C1")
    assert not is_admin(Policy(), cmd)
    assert visible(Policy(), d, cmd)  # same platform, not from a direct message: its channel finds it
    assert not visible(Policy(), d, c.Pause(discussion_id="d1", user_id="U2", in_channel="C2"))


def test_a_start_that_says_nothing_more_is_a_moderated_round_of_four_run_at_once() -> None:
    start = c.StartDiscussion(topic="t")
    assert (start.platform, start.workspace, start.channel) == ("console", "", "")  # the console's own start
    assert (start.flow, start.style, start.mode, start.experts, start.confirm) == ("moderated", "parallel", "open",
                                                                                   4, False)
    assert (start.tz, start.memory, start.revisits, start.poll_hours) == ("UTC", "channel", 0, None)
    # polls show who voted and their counts; no peer review; a public channel of this workspace; asked nothing
    assert (start.anonymous, start.hide_results, start.peer_review) == (False, False, False)
    assert (start.private, start.shared, start.clarify) == (False, False, False)


def test_the_other_commands_say_nothing_more_than_they_are_given() -> None:
    assert c.ModifyRoster(discussion_id="d", persona_key="p").remove is False  # an edit, not a removal
    assert c.ChooseNextAction(discussion_id="d", action=NextAction.ANOTHER_ROUND).after_round == 0  # whichever waits
    assert c.SetDigest(platform="slack", channel="C1", cadence="daily").tz == "UTC"
    revisit = c.Revisit(decision_id=1)
    assert (revisit.tz, revisit.private, revisit.shared) == ("UTC", False, False)
