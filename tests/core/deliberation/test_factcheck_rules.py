"""The Fact-checker's rules one by one, on hand-built inputs: when claims are checked, who asked, which sources a
claim cites, and that no link the model wrote ever reaches a reader as a link."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.deliberation import factcheck
from core.deliberation.flows.base import State, StepSpec, TurnPlan
from core.models import Discussion, FlowOptions, Persona, Phase, Role, Turn, TurnStatus
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


# when a round's claims are checked, flow by flow ---------------------------------------------------------
def steps(*phases: Phase, who: int = 1) -> list[StepSpec]:
    return [StepSpec(i + 1, p, [ADA] * who) for i, p in enumerate(phases)]


def checked_after(flow: str, specs: list[StepSpec]) -> list[int]:
    d = D.model_copy(update={"flow": flow})
    return [i for i in range(len(specs)) if factcheck.checks_after(d, specs, i)]


def test_a_moderated_round_is_checked_after_its_rebuttals_and_a_meeting_after_its_proposals() -> None:
    moderated = steps(Phase.OPENING, Phase.STATEMENT, Phase.COUNTERPOINT, Phase.REBUTTAL, Phase.ANALOGY,
                      Phase.ROUND_SYNTHESIS)
    assert checked_after("moderated", moderated) == [3]
    meeting = steps(Phase.OPENING, Phase.PROPOSAL, Phase.STATEMENT, Phase.ROUND_SYNTHESIS)
    assert checked_after("meeting", meeting) == [1]
    assert checked_after("moderated", meeting) == [] and checked_after("meeting", moderated) == []


def test_a_council_is_checked_at_the_end_of_its_round_unless_the_round_only_seats_personas() -> None:
    assert checked_after("council", steps(Phase.OPENING, Phase.STATEMENT, Phase.ROUND_SYNTHESIS)) == [2]
    assert checked_after("council", steps(Phase.PERSONA)) == []
    assert checked_after("council", steps(Phase.STATEMENT, Phase.PERSONA)) == []


def test_the_open_floor_is_checked_every_third_speech_and_after_the_rounds_last() -> None:
    def floor(speakers: int, speeches: int) -> list[StepSpec]:
        out = [StepSpec(0, Phase.PERSONA, [ADA])]
        for n in range(1, speeches + 1):
            out += [StepSpec(2 * n - 1, Phase.BID, [ADA] * speakers), StepSpec(2 * n, Phase.SPEECH, [ADA])]
        return out

    five = floor(5, 5)  # speeches at steps 2..10: the third (step 6) and the last (step 10)
    assert [five[i].step for i in checked_after("open", five)] == [6, 10]
    two = floor(2, 2)  # the last of two speeches
    assert [two[i].step for i in checked_after("open", two)] == [4]
    seven = floor(7, 7)
    assert [seven[i].step for i in checked_after("open", seven)] == [6, 12, 14]
    assert all(seven[i].phase == Phase.SPEECH for i in checked_after("open", seven))


# what a check reads --------------------------------------------------------------------------------------
BEN = Persona(key="ben", name="Ben", role=Role.EXPERT)


def said(who: str, step: int, phase: Phase = Phase.STATEMENT, round_: int = 1, text: str | None = None,
         status: TurnStatus = TurnStatus.DONE) -> Turn:
    return Turn(key=f"d:r{round_}:s{step}:{who}", discussion_id="d", round=round_, step=step, phase=phase,
                persona_key=who, status=status, text=f"{who} says {step}" if text is None else text, created_at=T0)


def plan(step: int, key: str = "", round_: int = 1) -> TurnPlan:
    return TurnPlan(key=key or f"d:r{round_}:s{step}:fact_checker", round=round_, step=step, phase=Phase.FACT_CHECK,
                    persona_key="fact_checker")


def world(*turns: Turn, **options: Any) -> State:
    """A state of its own: a test may change its discussion without changing another test's."""
    d = D.model_copy(update={"options": FlowOptions(**options)}, deep=True)
    return State(discussion=d, personas=[ADA, BEN], turns=list(turns))


def test_a_check_reads_the_rounds_posts_since_the_last_check_up_to_its_own_step() -> None:
    turns = [said("ada", 1), said("ben", 2),
             said("fact_checker", 2, Phase.FACT_CHECK),  # the previous check, after step 2
             said("ada", 3), said("ben", 4), said("ada", 5),  # step 5 comes after this check
             said("ben", 3, round_=2)]  # another round
    assert [t.key for t in factcheck.claims_to_check(world(*turns), plan(4))] == ["d:r1:s3:ada", "d:r1:s4:ben"]
    # The first check of a round reads from its first step on, step 0 included.
    first = [said("ada", 0, Phase.OPENING), said("ben", 1)]
    assert [t.key for t in factcheck.claims_to_check(world(*first), plan(1))] == ["d:r1:s0:ada", "d:r1:s1:ben"]


def test_a_check_reads_no_bookkeeping_no_empty_turn_no_unfinished_turn_and_not_its_own_kind() -> None:
    turns = [said("ada", 1, Phase.ROSTER), said("ada", 1, Phase.BID), said("ada", 1, Phase.ROUND_SYNTHESIS),
             said("ben", 1, text=""), said("ben", 2, status=TurnStatus.RUNNING), said("fact_checker", 2),
             said("ada", 2)]
    assert [t.key for t in factcheck.claims_to_check(world(*turns), plan(2))] == ["d:r1:s2:ada"]


def test_a_check_someone_asked_for_reads_that_post_alone_and_resets_nothing() -> None:
    target = said("ben", 2)
    asked = factcheck.requested_key("d", target.key)
    requested = said("fact_checker", factcheck.REQUESTED_STEP, Phase.FACT_CHECK).model_copy(update={"key": asked})
    state = world(said("ada", 1), target, said("ada", 3), requested)
    assert factcheck.claims_to_check(state, plan(90, key=asked)) == [target]
    # A requested check is not the round's previous check: the round's own check still reads from the start.
    assert [t.key for t in factcheck.claims_to_check(state, plan(3))] == ["d:r1:s1:ada", "d:r1:s2:ben", "d:r1:s3:ada"]
    # A post that is gone, or says nothing, gives the asked check nothing to read.
    assert factcheck.claims_to_check(state, plan(90, key=factcheck.requested_key("d", "d:r1:s9:ada"))) == []
    empty = target.model_copy(update={"text": ""})
    assert factcheck.claims_to_check(world(empty), plan(90, key=asked)) == []
    assert factcheck.what_is_checked(world(target), plan(90, key=asked)) == "Ben's post"
    assert factcheck.what_is_checked(world(empty), plan(90, key=asked)) == "that post"
    assert factcheck.what_is_checked(world(target), plan(3, round_=2)) == "round 2"


def test_a_checks_prompt_quotes_each_post_by_its_authors_name_under_the_round_topic() -> None:
    state = world(said("ada", 1, text="Cars cause 40% of emissions."), said("ghost", 2, text="Trams are cheap."))
    state.discussion.round_topic = "Trams instead?"
    p = factcheck.prompt(state, plan(2))
    shared = p.shared[0].text
    assert "Trams instead?" in shared and "Ban cars downtown?" not in shared
    assert shared.index("Cars cause 40%") < shared.index("Trams are cheap.")
    assert 'name="Ada"' in shared and 'name="ghost"' in shared  # no seat: the key names the author
    assert (p.tier, p.max_tokens, p.purpose.phase, p.purpose.persona) == ("medium", 2048, Phase.FACT_CHECK,
                                                                         factcheck.CHECKER.name)
    assert (p.purpose.topic, p.purpose.round, p.purpose.others) == ("Trams instead?", 1, ["Ada", "ghost"])
    assert p.system[0].text == factcheck.RULES and "at most five" in p.instruction
    assert "(nothing was said)" in factcheck.prompt(world(), plan(2)).shared[0].text


def test_a_check_writes_in_the_language_asked_for_or_the_topics() -> None:
    assert "Write in the language of the topic." in factcheck.prompt(world(), plan(1)).instruction
    spoken = factcheck.prompt(world(lang="Brazilian Portuguese"), plan(1)).instruction
    assert "Write in Brazilian Portuguese." in spoken and "language of the topic" not in spoken


# what a check says ----------------------------------------------------------------------------------------
def test_a_refused_check_says_nothing_was_verified_and_keeps_no_claims() -> None:
    refused = Searched(searches=0, refused="web search is not enabled", blocks=[
        CitedText(text="[false] Cars cause 40%.", sources=[ONE])])
    text, data = factcheck.record(refused, world(), plan(2))
    assert text.startswith("🔎 I could not check the claims in round 1: web search is not enabled.")
    assert data == {"claims": [], "searches": 0, "refused": "web search is not enabled"}


def test_a_check_counts_its_claims_and_searches_and_says_when_a_verdict_cites_nothing() -> None:
    two = Searched(searches=2, blocks=[CitedText(text="[false] Cars cause 40%. ", sources=[ONE]),
                                       CitedText(text="[stretched] Trams are cheap. ", sources=[]),
                                       CitedText(text="[unverifiable] Parking is full.", sources=[])])
    text, data = factcheck.record(two, world(), plan(2))
    lines = text.split("\n")
    assert lines[0] == "🔎 I checked 3 claims in round 1 (2 web searches):"
    assert lines[1] == "❌ **false** — Cars cause 40%." and lines[2].startswith("    Sources: [One](")
    assert lines[3:] == ["⚠️ **stretched** — Trams are cheap.", "    _(no source was cited for this verdict)_",
                         "❔ **unverifiable** — Parking is full."]
    assert [c["verdict"] for c in data["claims"]] == ["false", "stretched", "unverifiable"]  # type: ignore[index]
    one = Searched(searches=1, blocks=[CitedText(text="[supported] Trams are cheap.", sources=[ONE])])
    assert factcheck.record(one, world(), plan(2))[0].startswith("🔎 I checked 1 claim in round 1 (1 web search):")
    none = Searched(searches=1, blocks=[CitedText(text="No checkable claims.", sources=[])])
    assert factcheck.record(none, world(), plan(2))[0] == "🔎 I found no checkable factual claims in round 1."


def test_a_requested_checks_record_keeps_who_asked_and_a_rounds_check_keeps_no_one() -> None:
    target = said("ben", 2)
    asked = factcheck.requested_key("d", target.key)
    requested = said("fact_checker", 90, Phase.FACT_CHECK).model_copy(update={"key": asked,
                                                                             "data": {factcheck.ASKED_BY: "U7"}})
    found = Searched(searches=1, blocks=[CitedText(text="[supported] Ben is right.", sources=[ONE])])
    text, data = factcheck.record(found, world(target, requested), plan(90, key=asked))
    assert data[factcheck.ASKED_BY] == "U7" and "in Ben's post" in text
    assert factcheck.ASKED_BY not in factcheck.record(found, world(target), plan(2))[1]


def test_the_claims_that_fell_are_the_false_and_stretched_ones_of_the_round_asked_or_all() -> None:
    def check(round_: int, *verdicts: str) -> Turn:
        claims = [{"verdict": v, "text": f"{v} in {round_}", "sources": [ONE.model_dump()] if v == "false" else []}
                  for v in verdicts]
        return said("fact_checker", 5, Phase.FACT_CHECK, round_=round_).model_copy(update={"data": {"claims": claims}})

    state = world(check(1, "false", "supported", "unverifiable"), check(2, "stretched"), said("ada", 1))
    assert [c.text for c in factcheck.fallen(state, 1)] == ["false in 1"]
    assert [c.text for c in factcheck.fallen(state)] == ["false in 1", "stretched in 2"]
    assert factcheck.fallen_section(state, 2) == "\n\n**Claims that fell**\n- **stretched**: stretched in 2"
    assert factcheck.fallen_section(state, 1) == ("\n\n**Claims that fell**\n- **false**: false in 1 "
                                                  "([One](https://one.example.org/a))")
    assert factcheck.fallen_section(world(check(1, "supported")), 1) == ""
