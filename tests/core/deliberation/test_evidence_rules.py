"""Cited references nobody gave, rule by rule: each form of reference a persona may cite is marked once where it
stands; one people gave (in any of those forms) is not; what only looks like a reference is left alone. What makes
a post worth a check: a figure, a date, a named source or incident, never an opinion alone."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.deliberation import evidence
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


CLAIMS = ["We lost 3 customers in March to billing errors.", "Latency dropped 40% after the move.",
          "It costs $2 a seat.", "About 1 in 3 such changes is rolled back.", "Builds got 3x faster.",
          "According to Gartner, most teams regret it.", "The 2023 DORA report says otherwise.",
          "See ticket #4521.", "In Q3 we shipped twice.", "The Knight Capital outage shows the risk.",
          "A deploy takes 45 minutes today."]
NOT_CLAIMS = ["I propose a small, reversible trial with an exit criterion. Ada, what would you measure?",
              "Fair challenge. I concede the point about cost.", "We may do it if the team agrees.",
              "Stance: O1 — a small, reversible trial first, judged on cost",
              "Make it cheap to report, and review it on a fixed cadence.", "Thanks, Rosa: that changes the picture."]


@pytest.mark.parametrize("text", CLAIMS)
def test_a_figure_a_date_a_named_source_or_incident_is_a_claim_to_check(text: str) -> None:
    assert evidence.checkable(text)


@pytest.mark.parametrize("text", NOT_CLAIMS)
def test_opinions_proposals_and_questions_alone_are_not(text: str) -> None:
    assert not evidence.checkable(text)
