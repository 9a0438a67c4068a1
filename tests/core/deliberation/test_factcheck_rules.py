"""The Fact-checker's rules one by one, on hand-built inputs: when claims are checked, who asked, which sources a
claim cites, and that no link the model wrote ever reaches a reader as a link."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.deliberation import factcheck
from core.deliberation.flows.base import StepSpec
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus
from core.ports import CitedText, Searched, Source

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
D = Discussion(id="d", topic="Ban cars downtown?", created_at=T0, updated_at=T0)
ADA = Persona(key="ada", name="Ada", role=Role.EXPERT)
ONE = Source(url="https://one.example.org/a", title="One")
TWO = Source(url="https://two.example.org/b", title="Two")


def check_turn(key: str, data: dict[str, Any] | None, phase: Phase = Phase.FACT_CHECK) -> Turn:
    return Turn(key=key, discussion_id="d", round=1, step=3, phase=phase, persona_key="fact_checker",
                status=TurnStatus.PLANNED, data=data, created_at=T0)


def searched(*blocks: tuple[str, list[Source]]) -> Searched:
    return Searched(searches=1, blocks=[CitedText(text=t, sources=s) for t, s in blocks])


# when claims are checked ------------------------------------------------------------------------------
def test_a_step_nobody_takes_is_never_followed_by_a_check() -> None:
    # The council checks after its last step; a last step with no one in it made no claims.
    specs = [StepSpec(1, Phase.STATEMENT, [ADA]), StepSpec(2, Phase.REBUTTAL, [])]
    assert factcheck.checks_after(D.model_copy(update={"flow": "council"}), specs, 1) is False
    assert factcheck.checks_after(D.model_copy(update={"flow": "council"}), specs[:1], 0) is True


# who asked -------------------------------------------------------------------------------------------
ASKED = f"d{factcheck.REQUESTED}d:r1:s1:ada"


def test_the_asker_is_read_from_a_requested_check_alone() -> None:
    assert factcheck.asked_by(check_turn(ASKED, {factcheck.ASKED_BY: "U7"})) == "U7"
    # A round's own check, or another phase whose key happens to hold the marker, was asked by no one.
    assert factcheck.asked_by(check_turn("d:r1:s3:fact_checker", {factcheck.ASKED_BY: "U7"})) == ""
    assert factcheck.asked_by(check_turn(ASKED, {factcheck.ASKED_BY: "U7"}, phase=Phase.STATEMENT)) == ""


@pytest.mark.parametrize("data", [None, {}, {"claims": []}])
def test_a_requested_check_with_no_asker_kept_names_no_one(data: dict[str, Any] | None) -> None:
    assert factcheck.asked_by(check_turn(ASKED, data)) == ""


# the model's links taken out -------------------------------------------------------------------------
@pytest.mark.parametrize(("written", "left"), [
    ("see [the study](https://evil.example/x) here", "see the study here"),
    ("see <https://evil.example/x|the study> here", "see the study here"),
    ("figures at https://evil.example/x today", "figures at today"),
    ("figures at www.evil.example/x today", "figures at today"),
    ("figures at HTTPS://EVIL.EXAMPLE/X today", "figures at today"),
    ("figures at <https://evil.example/x> today", "figures at today"),
    ("as the survey https://evil.example/x ; it said so", "as the survey; it said so"),
    ("the survey [https://evil.example/x] said so", "the survey said so"),
    ("71% merge daily (full figures at https://evil.example/x).", "71% merge daily."),
])
def test_every_link_and_url_the_model_wrote_is_taken_out_and_the_sentence_mended(written: str, left: str) -> None:
    assert factcheck.without_links(written) == left


# which sources a claim cites --------------------------------------------------------------------------
def test_a_source_cited_in_the_first_block_belongs_to_the_claim_it_opens() -> None:
    [claim] = factcheck.claims(searched(("[supported] Ada: 71% merge daily.", [ONE])))
    assert claim.sources == [ONE]


def test_a_cited_block_belongs_to_the_claim_its_middle_falls_in() -> None:
    # The second block (14 to 24) has its middle at 19, in the second claim; a third of its ends (12.7) is not.
    found = factcheck.claims(searched(("[supported] a.", []), ("[false] b.", [ONE])))
    assert [(c.verdict, c.sources) for c in found] == [("supported", []), ("false", [ONE])]


def test_a_cited_block_whose_middle_is_a_marks_first_character_belongs_to_that_claim_alone() -> None:
    # "is right. [false] X:" is 20 characters with its mark at 10: the middle is where the second claim begins.
    found = factcheck.claims(searched(("[supported] Ada: one ", []), ("is right. [false] X:", [ONE]),
                                      (" two is wrong.", [])))
    assert [(c.verdict, c.sources) for c in found] == [("supported", []), ("false", [ONE])]


def test_each_claim_ends_where_the_next_begins() -> None:
    found = factcheck.claims(searched(("[supported] Ada: one. [false] Ben: two. [stretched] Cal: three.", [])))
    assert [(c.verdict, c.text) for c in found] == [("supported", "Ada: one."), ("false", "Ben: two."),
                                                    ("stretched", "Cal: three.")]


def test_a_claim_lists_each_cited_page_once() -> None:
    found = factcheck.claims(searched(("[false] Ada: two pages ", [ONE]), ("say otherwise", [TWO, ONE]),
                                      (" again.", [ONE])))
    assert [c.sources for c in found] == [[ONE, TWO]]


@pytest.mark.parametrize(("written", "text"), [
    ("[false]: Ada: the claim", "Ada: the claim"),
    ("[false] — Ada: the claim", "Ada: the claim"),
    ("[false] - Ada: the claim", "Ada: the claim"),
    ("[false] Xavier: the claim -", "Xavier: the claim -"),
    ("[false] XML is older than JSON", "XML is older than JSON"),
])
def test_a_claims_words_start_after_the_separator_that_follows_its_mark(written: str, text: str) -> None:
    [claim] = factcheck.claims(searched((written, [])))
    assert claim.text == text


# no link the model wrote is a link ---------------------------------------------------------------------
@pytest.mark.parametrize(("written", "text"), [
    ("[false] Ada: the login moved [here](https://sso-login.evil.example/auth).", "Ada: the login moved here."),
    ("[false] Ada: sign in at <https://sso-login.evil.example/auth|the portal>.", "Ada: sign in at the portal."),
    ("[false] Ada: sign in at <www.evil.example|the portal>.", "Ada: sign in at the portal."),
    ("[false] Ada: sign in at sso-login.evil.example/auth now.", "Ada: sign in at `sso-login.evil.example/auth` now."),
    ("[false] Ada: see EVIL.EXAMPLE.", "Ada: see `EVIL.EXAMPLE`."),
    ("[false] Ada: write to <mailto:a@evil.example|her>.", "Ada: write to her (`mailto:a@evil.example`)."),
])
def test_a_link_or_address_the_model_wrote_never_reaches_the_post_as_a_link(written: str, text: str) -> None:
    [claim] = factcheck.claims(searched((written, [])))
    assert claim.text == text
    post = factcheck.text(searched((written, [])), [claim], "round 1")
    assert "](" not in post and "<" not in post and "http" not in post.lower()


# how a cited source is linked -------------------------------------------------------------------------
def test_a_sources_title_cannot_close_its_link_or_open_another() -> None:
    hostile = Source(url="https://real.example/r", title="Report](https://evil.example/login) [Click\nhere")
    assert factcheck._link(hostile) == "[Report (https://evil.example/login)  Click here](https://real.example/r)"
    assert factcheck._link(Source(url="https://real.example/r", title="[Draft] Report")) == (
        "[Draft  Report](https://real.example/r)")


@pytest.mark.parametrize(("url", "shown"), [
    ("https://www.example.org/a", "example.org/a"),
    ("http://example.org/a", "example.org/a"),
    ("https://wwwx.example.org/a", "wwwx.example.org/a"),
])
@pytest.mark.parametrize("title", ["", "  ", "[]", "\n"])
def test_a_source_without_a_title_is_named_by_its_address_without_the_scheme(url: str, shown: str,
                                                                             title: str) -> None:
    assert factcheck._link(Source(url=url, title=title)) == f"[{shown}]({url})"


def test_a_sources_address_cannot_end_its_link_early() -> None:
    source = Source(url="https://en.example.org/wiki/Foo_(bar) baz", title="Foo")
    assert factcheck._link(source) == "[Foo](https://en.example.org/wiki/Foo_%28bar%29%20baz)"


def test_a_long_title_is_cut_to_ninety_characters() -> None:
    assert factcheck._link(Source(url="https://a.example/", title="x" * 100)) == f"[{'x' * 90}](https://a.example/)"
