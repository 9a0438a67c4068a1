"""Links a persona wrote, made plain, form by form (pure): every address is set as code whichever mark gives it
away (a scheme, `mailto:`, a dot), a link's label and address both stay readable, and prose with no address comes
back as it was."""

from __future__ import annotations

import pytest

from core.deliberation.links import plain, plain_data
from core.deliberation.roster import clean_name, clean_title


@pytest.mark.parametrize(("text", "shown"), [
    ("sign in at http://intranet/login now", "sign in at `http://intranet/login` now"),  # a scheme, no dot
    ("write to mailto:ops today", "write to `mailto:ops` today"),  # mailto, no dot
    ("try WWW.1host", "try `WWW.1host`"),  # www. and a digit after the dot
    ("see sso-login.evil.example/auth.", "see `sso-login.evil.example/auth`."),  # a domain; the full stop stays out
    ("[the docs](https://x.example/a) and <https://y.example|the wiki>",
     "the docs (`https://x.example/a`) and the wiki (`https://y.example`)"),
    ("`kept.example` but not.example", "`kept.example` but `not.example`"),  # code the model wrote stays as it is
    ("`a` then b.example, `c` then d.example", "`a` then `b.example`, `c` then `d.example`"),  # between code spans
    ("[only a label]() and <https://z.example>", "only a label and `https://z.example`"),  # no address; <url>
    ("at a.example/X!", "at `a.example/X`!"),  # only the sentence's punctuation is cut from an address
])
def test_each_form_of_address_is_set_as_code(text: str, shown: str) -> None:
    assert plain(text) == shown


@pytest.mark.parametrize("text", ["We agree on most of it.\n\nStance: O1 — pilot", "Scores of 1.5 and 2.0, also: more.",
                                  "A list: one, two; three.", "a `code span` with no address",
                                  "Costs fall, e.g. on ops, i.e. on us... as in 2.5 or U.S. law. Go to: the end."])
def test_prose_with_no_address_comes_back_as_it_was(text: str) -> None:
    assert plain(text) == text


def test_every_string_of_a_structured_answer_is_made_plain_and_its_keys_and_shape_kept() -> None:
    assert plain_data({"see.example": ["at a.example", 3, {"x": "[w](https://w.example)"}], "n": None}) == {
        "see.example": ["at `a.example`", 3, {"x": "w (`https://w.example`)"}], "n": None}


def test_a_roster_title_keeps_its_words_and_loses_its_links_and_a_name_stays_as_written() -> None:
    assert clean_title("Payments [sign in](https://bank.evil.example/a)") == \
        "Payments sign in (`https://bank.evil.example/a`)"
    assert clean_title("Billing <https://evil.example|the wiki> at sso-login.evil.example") == \
        "Billing at `sso-login.evil.example`"
    assert clean_title("Database reliability engineer") == "Database reliability engineer"
    assert clean_name("dana.smith") == "dana.smith", "a display name is a name, not an address"
