"""A channel's defaults, rule by rule: what `/council config defaults …` reads (each bad field named, the rest
kept), what survives when read back, what the confirmation says, and what a start that said otherwise keeps."""

from __future__ import annotations

import pytest

from core.control import commands as c
from core.control import defaults
from core.control.replies import UserError

KEPT = ("(I keep `flow`, `rounds`, `style`, `tier`, `lang`, `experts`, `models`, `poll_hours`, `poll_reminders`, "
        "`peer_review`)")


def test_every_field_is_read_into_its_value() -> None:
    values, warnings = defaults.parse('FLOW=Meeting rounds=3 tier=medium lang="Brazilian Portuguese" style=debate '
                                      "experts=8")
    assert values == {"flow": "meeting", "rounds": 3, "tier": "medium", "lang": "Brazilian Portuguese",
                      "style": "debate", "experts": 8}
    assert warnings == []


@pytest.mark.parametrize(("text", "warning"), [
    ("rounds", "`rounds` is not `field=value` (for example `flow=meeting rounds=3 tier=medium lang=German`)"),
    ("rounds= ", "`rounds=` is not `field=value` (for example `flow=meeting rounds=3 tier=medium lang=German`)"),
    ("colour=red", f"`colour` is not a default I keep {KEPT}"),
    ("rounds=0", "`rounds` takes a whole number from 1 to 10; you wrote `0`"),
    ("rounds=11", "`rounds` takes a whole number from 1 to 10; you wrote `11`"),
    ("experts=1", "`experts` takes a whole number from 2 to 8; you wrote `1`"),
    ("experts=9", "`experts` takes a whole number from 2 to 8; you wrote `9`"),
    ("experts=-3", "`experts` takes a whole number from 2 to 8; you wrote `-3`"),
    ("tier=huge", "`--tier` takes one of `light`, `medium`, `heavy`; you wrote `huge`."),
])
def test_each_bad_field_is_named_and_the_rest_apply(text: str, warning: str) -> None:
    values, warnings = defaults.parse(f"{text} rounds=10 experts=2")
    assert warnings == [warning]
    assert values == {"rounds": 10, "experts": 2}


def test_an_unclosed_quote_is_read_word_by_word() -> None:
    values, warnings = defaults.parse('lang="Brazilian rounds=2')
    assert values == {"rounds": 2} and len(warnings) == 1 and "`--lang`" in warnings[0]


def test_stored_defaults_read_back_keep_only_what_is_still_valid() -> None:
    saved = {"flow": "meeting", "rounds": "3", "colour": "red", "tier": "bogus", "lang": "Brazilian Portuguese"}
    assert defaults.still_valid(saved) == {"flow": "meeting", "rounds": 3, "lang": "Brazilian Portuguese"}


@pytest.mark.parametrize("text", ["off", " None ", "CLEAR"])
def test_off_clears_the_defaults(text: str) -> None:
    assert defaults.read(text) == ({}, [])


def test_nothing_valid_is_refused_with_what_was_wrong_and_an_example() -> None:
    with pytest.raises(UserError) as refused:
        defaults.read("colour=red")
    assert str(refused.value) == (f"No default set: `colour` is not a default I keep {KEPT}. For example "
                                  "`flow=meeting rounds=3 tier=medium lang=German`, or `off` to clear them.")
    with pytest.raises(UserError) as empty:
        defaults.read("  ")
    assert str(empty.value) == ("No default set: For example `flow=meeting rounds=3 tier=medium lang=German`, or "
                                "`off` to clear them.")


def test_the_confirmation_lists_the_values_in_one_order_and_what_was_not_applied() -> None:
    assert defaults.read("rounds=3 flow=meeting bogus") == ({"rounds": 3, "flow": "meeting"},
                                                            ["`bogus` is not `field=value` (for example "
                                                             "`flow=meeting rounds=3 tier=medium lang=German`)"])
    assert defaults.confirmation({"rounds": 3, "flow": "meeting"}, ["a", "b"]) == (
        "New discussions in this channel start with flow=meeting rounds=3 unless their start says otherwise."
        "\n⚠️ Not applied: a; b.")
    assert defaults.confirmation({}, []) == "New discussions in this channel use the built-in defaults again."


def test_a_start_keeps_what_it_said_and_takes_the_channels_defaults_for_the_rest() -> None:
    channel = {"flow": "meeting", "rounds": 3, "experts": 6, "lang": "German"}
    plain = defaults.apply(c.StartDiscussion(topic="t"), channel)
    assert (plain.flow, plain.rounds, plain.experts, plain.lang) == ("meeting", 3, 6, "German")
    own = defaults.apply(c.StartDiscussion(topic="t", flow="council", rounds=2, experts=5, lang="French"), channel)
    assert (own.flow, own.rounds, own.experts, own.lang) == ("council", 2, 5, "French")
    unsaid = defaults.apply(c.StartDiscussion(topic="t", rounds=None, experts=4), channel)
    assert (unsaid.rounds, unsaid.experts) == (3, 6)  # the values a start gives when it says nothing
    start = c.StartDiscussion(topic="t")
    assert defaults.apply(start, {}) is start


def test_a_channel_s_models_are_read_as_routes_and_kept_as_a_spec_that_reads_back() -> None:
    values, warnings = defaults.parse("models=openai:gpt-5.1,ollama:llama3.3 tier=medium")
    assert warnings == [] and values["models"] == "openai:gpt-5.1 ollama:llama3.3"
    assert defaults.still_valid(values) == values
    _, warnings = defaults.parse("models=gpt-5.1")
    assert warnings == ["`models`: `gpt-5.1` is not `provider:model` (for example `openai:gpt-5.1 "
                        "anthropic:claude-sonnet-5-5 ollama:llama3.3` or `heavy=anthropic:claude-opus-5-5`)"]
    assert defaults.describe(values) == "tier=medium models='openai:gpt-5.1 ollama:llama3.3'"
    assert defaults.parse(defaults.describe(values))[0] == values  # the confirmation's words set it again
