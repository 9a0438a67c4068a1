"""A channel may review every new discussion's rounds by default: `/council config defaults peer_review=on`."""

from __future__ import annotations

from core.control import commands as c
from core.control import defaults


def start(**kw: object) -> c.StartDiscussion:
    return c.StartDiscussion(topic="Adopt Rust?", user_id="U1", **kw)  # type: ignore[arg-type]


def test_peer_review_is_a_channel_default_read_as_on_or_off() -> None:
    values, warnings = defaults.parse("peer_review=on flow=council")
    assert values == {"peer_review": True, "flow": "council"} and not warnings
    assert "peer_review=on" in defaults.confirmation(values, warnings)
    assert defaults.parse("peer_review=maybe")[1] == ["`peer_review` takes `on` or `off`; you wrote `maybe`"]
    assert defaults.still_valid({"peer_review": True}) == {"peer_review": True}  # as it was stored
    assert defaults.still_valid({"peer_review": False}) == {"peer_review": False}


def test_a_start_without_the_flag_takes_the_channels_and_one_with_it_keeps_it() -> None:
    assert defaults.apply(start(peer_review=False), {"peer_review": True}).peer_review is True
    assert defaults.apply(start(), {"peer_review": True}).peer_review is True
    assert defaults.apply(start(peer_review=True), {"peer_review": False}).peer_review is True
    assert defaults.apply(start(), {}).peer_review is False
