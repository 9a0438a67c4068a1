"""A channel's defaults at their edges (pure): the sentence each bad value gets, how a value is shown back, a value
holding `=`, and which of a start's own values a channel's default still fills (an explicit empty or off one)."""

from __future__ import annotations

import pytest

from core.control import commands as c
from core.control import defaults
from core.control.replies import UserError


def warnings_for(text: str) -> list[str]:
    values, warnings = defaults.parse(text)
    assert values == {}
    return warnings


def test_a_bad_flow_is_named_with_the_flows_there_are() -> None:
    assert warnings_for("flow=nope") == ["`--flow` takes one of `moderated`, `council`, `meeting`, `open`; you wrote "
                                         "`nope`."]


def test_a_bad_poll_length_is_named_as_the_default_it_is() -> None:
    [warning] = warnings_for("poll_hours=0")
    assert warning.startswith("`poll_hours` takes a whole number of hours from 1 to 720") and warning.endswith(
        "you wrote `0`")


@pytest.mark.parametrize(("typed", "warning"), [
    ("peer_review=maybe", "`peer_review` takes `on` or `off`; you wrote `maybe`"),
    ("peer_review=yes", "`peer_review` takes `on` or `off`; you wrote `yes`"),
    ("poll_reminders=sometimes", "`poll_reminders` is `on` or `off`; you wrote `sometimes`"),
])
def test_a_bad_switch_says_which_words_it_takes(typed: str, warning: str) -> None:
    assert warnings_for(typed) == [warning]


@pytest.mark.parametrize(("typed", "value"), [
    ("on", True), ("off", False), ("true", True), ("false", False), ("TRUE", True), ("Off", False),
    ("False", False), ("ON", True),
])
def test_peer_review_takes_on_off_and_the_stored_true_false(typed: str, value: bool) -> None:
    assert defaults.parse(f"peer_review={typed}") == ({"peer_review": value}, [])
    assert defaults.still_valid({"peer_review": typed}) == {"peer_review": value}


def test_each_bad_model_entry_is_named_in_one_warning() -> None:
    [warning] = warnings_for("models=bogus,alsobogus")
    assert warning.startswith("`models`: `bogus` is not `provider:model`")
    first, second = warning.removeprefix("`models`: ").split("; `")
    assert "`alsobogus` is not `provider:model`" in "`" + second and "alsobogus" not in first


def test_a_value_may_hold_an_equals_sign() -> None:
    assert defaults.parse("models=heavy=anthropic:claude-x") == ({"models": "heavy=anthropic:claude-x"}, [])


def test_nothing_valid_lists_every_warning_in_one_sentence() -> None:
    with pytest.raises(UserError) as refused:
        defaults.read("rounds=99 tier=gold")
    assert str(refused.value) == ("No default set: `rounds` takes a whole number from 1 to 10; you wrote `99`; "
                                  "`--tier` takes one of `light`, `medium`, `heavy`; you wrote `gold`. For example "
                                  "`flow=meeting rounds=3 tier=medium lang=German`, or `off` to clear them.")


def test_a_confirmation_lists_what_was_not_applied_with_one_full_stop() -> None:
    values, warnings = defaults.parse("rounds=3 flow=nope")
    assert defaults.confirmation(values, warnings).endswith(
        "⚠️ Not applied: `--flow` takes one of `moderated`, `council`, `meeting`, `open`; you wrote `nope`.")


@pytest.mark.parametrize(("values", "shown"), [
    ({"peer_review": True}, "peer_review=on"),
    ({"peer_review": False}, "peer_review=off"),
    ({"models": "heavy=anthropic:a anthropic:b"}, "models='heavy=anthropic:a anthropic:b'"),
    ({"lang": "Brazilian Portuguese"}, "lang=Brazilian Portuguese"),
    ({"rounds": 3, "flow": "meeting"}, "flow=meeting rounds=3"),
])
def test_values_are_shown_as_typed(values: dict[str, object], shown: str) -> None:
    assert defaults.describe(values) == shown


def start(**given: object) -> c.StartDiscussion:
    return c.StartDiscussion(topic="Four-day week?", platform="slack", channel="C1", in_channel="C1", user_id="U1",
                             **given)  # type: ignore[arg-type]


@pytest.mark.parametrize("field", ["rounds", "poll_hours"])
def test_a_start_that_left_a_number_empty_takes_the_channels(field: str) -> None:
    assert getattr(defaults.apply(start(**{field: None}), {field: 5}), field) == 5
    assert getattr(defaults.apply(start(**{field: 7}), {field: 5}), field) == 7


def test_a_start_without_models_takes_the_channels_and_one_with_models_keeps_its_own() -> None:
    assert defaults.apply(start(models=""), {"models": "anthropic:x"}).models == "anthropic:x"
    assert defaults.apply(start(models="anthropic:y"), {"models": "anthropic:x"}).models == "anthropic:y"


def test_a_start_without_peer_review_takes_the_channels_and_one_with_it_keeps_it() -> None:
    assert defaults.apply(start(peer_review=False), {"peer_review": True}).peer_review is True
    assert defaults.apply(start(peer_review=True), {"peer_review": False}).peer_review is True
