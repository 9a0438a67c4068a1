"""Cited references nobody gave, rule by rule: each form of reference a persona may cite is marked once where it
stands; one people gave (in any of those forms) is not; what only looks like a reference is left alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.deliberation.evidence import _REF, MARK, mark_unverified


@pytest.mark.parametrize("ref", ["#4521", "issue 88", "Issues 88", "ticket #12", "tickets 12", "PR 7", "prs #7",
                                 "pull request #301", "Pull Requests 301", "bug ABC-123", "bugs abc-123",
                                 "incident INC-4410", "Incidents #4410"])
def test_each_form_of_reference_nobody_gave_is_marked_where_it_stands(ref: str) -> None:
    assert mark_unverified(f"As {ref} showed, it broke.", "") == f"As {ref} {MARK} showed, it broke."


@pytest.mark.parametrize(("cited", "given"), [
    ("#4521", "see #4521"), ("issue 4521", "ticket #4521"), ("PR #7", "pull request 7"),
    ("bug ABC-123", "incident abc-123"), ("Ticket #12", "the TICKET 12 we filed"),
])
def test_a_reference_people_gave_is_not_marked_whatever_its_form(cited: str, given: str) -> None:
    assert mark_unverified(f"Per {cited}, yes.", f"Topic: {given}") == f"Per {cited}, yes."


def test_only_the_number_people_gave_counts() -> None:
    text = "#12, #123 and bug XYZ-12 say so."
    assert mark_unverified(text, "#12 and bug ABC-12") == f"#12, #123 {MARK} and bug XYZ-12 {MARK} say so."
    # Another project's key that ends the same is another ticket.
    assert mark_unverified("bug XYZ-7", "bug YZ-7") == f"bug XYZ-7 {MARK}"


def test_a_reference_already_marked_is_marked_once() -> None:
    once = f"#4521 {MARK} and issue 9 {MARK}"
    assert mark_unverified(once, "") == once
    assert mark_unverified("#4521 and #4521", "") == f"#4521 {MARK} and #4521 {MARK}"


@pytest.mark.parametrize("text", ["&#39;quoted&#39;", "https://example.org/#42", "word#42", "issue", "the bug",
                                  "PR review", "3 tickets"])
def test_what_only_looks_like_a_reference_is_left_alone(text: str) -> None:
    assert mark_unverified(text, "") == text


def test_a_reference_at_the_start_of_a_line_is_marked() -> None:
    assert mark_unverified("Fixed in:\n#88\nthen", "") == f"Fixed in:\n#88 {MARK}\nthen"


@pytest.mark.parametrize("text", ["tugs 5", "bissue 5", "mistakes 5", "spr 5", "pincident 5", "pulls request 5",
                                  "a_#5", "x&#5"])
def test_a_word_that_only_ends_like_a_reference_word_is_left_alone(text: str) -> None:
    assert mark_unverified(text, "") == text


# The rule as first written: simple to read, tried at every character. The pattern the module uses must find the
# same references everywhere.
READABLE = re.compile(r"(?<![\w&/])#\d+\b"
                      r"|\b(?:issues?|tickets?|bugs?|PRs?|pull requests?|incidents?)\s+#?(?:[A-Z][A-Z0-9]*-)?\d+\b",
                      re.IGNORECASE)
PIECES = ["#", "issue", "Issues", "ISSUE", "ticket", "tickets", "bug", "Bugs", "PR", "prs", "pull request",
          "Pull Requests", "incident", "INC-", "abc-", "&", "/", "x", "_", " ", "\n", "\t", "12", "7", "-", "tugs",
          "é", "I", "p", "b", "t"]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14).map("".join))
@example("&#12")  # an HTML character reference, not a ticket
@example("x&#12 and #7")
@example("& #12")  # the "&" not next to the "#": a reference
@example("/#12 x#7 _#3")  # a path's or a word's "#": not references
@example("é#12")
def test_the_references_found_are_those_the_readable_rule_finds(text: str) -> None:
    assert [m.span() for m in _REF.finditer(text)] == [m.span() for m in READABLE.finditer(text)]
