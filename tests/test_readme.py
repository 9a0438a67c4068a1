"""The README agrees with itself and with the code: every place it gives the number of experts gives the bounds
and the default the start command takes."""

from __future__ import annotations

import re
from pathlib import Path

from core.control.commands import StartDiscussion

README = (Path(__file__).resolve().parents[1] / "README.md").read_text()
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}


def bounds() -> tuple[int, int, int]:
    field = StartDiscussion.model_fields["experts"]
    low = next(m.ge for m in field.metadata if hasattr(m, "ge"))
    high = next(m.le for m in field.metadata if hasattr(m, "le"))
    return low, high, field.default


def test_the_intro_and_the_flow_table_give_the_experts_the_code_takes() -> None:
    low, high, default = bounds()
    intro = re.search(r"(\w+) to (\w+) experts generated for the topic \((\w+) unless asked\)", README)
    assert intro is not None, "the intro says how many experts a council has"
    assert tuple(WORDS[w] for w in intro.groups()) == (low, high, default)
    row = re.search(r"\| `moderated` \(default\) \| a moderator, (\d+)–(\d+) experts", README)
    assert row is not None and (int(row[1]), int(row[2])) == (low, high)
    given = re.findall(r"`-?-?experts(?: N)?` \((\d+)–(\d+)(?:, default (\d+))?\)", README)
    assert len(given) >= 3, given  # the open floor's row, the console's and Discord's options
    for a, b, d in given:
        assert (int(a), int(b)) == (low, high) and (not d or int(d) == default), (a, b, d)
    assert not re.search(r"\b(three or four|3 or 4|3–4) experts", README), "an older count left behind"
