"""One vocabulary of options: a stance, a ranking and a vote mean an option's id, never a wording matched by
overlap, so the verdict a team acts on cannot be inverted (each case of the issue, and properties over adversarial
label pairs)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from core.deliberation import choices, closings, stances, tally
from core.deliberation.choices import Option
from core.deliberation.flows import meeting
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.schemas import RankedItem, RankedVote
from core.models import Discussion, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, tzinfo=UTC)
ADOPT, DO_NOT = "Adopt trunk-based development", "Do not adopt trunk-based development"


def opts(*labels: str) -> list[Option]:
    return choices.extend([], labels)


def listed(options: list[Option], round_: int = 0) -> Turn:
    """A turn that put options on the table (a synthesis's proposals), as turn data keeps them."""
    return Turn(key=f"d:r{round_}:synth", discussion_id="d", round=round_, step=9, phase=Phase.ROUND_SYNTHESIS,
                persona_key="moderator", status=TurnStatus.DONE, text="...",
                data={"listed": choices.records(options)}, created_at=T0)


def said(who: str, label: str, known: list[Option], round_: int = 1) -> Turn:
    """A persona's turn ending in a stance line, recorded as the effects record it."""
    data = stances.parse(f"My view.\nStance: {label} — my reason")
    assert data is not None
    return Turn(key=f"d:r{round_}:{who}", discussion_id="d", round=round_, step=1, phase=Phase.STATEMENT,
                persona_key=who, status=TurnStatus.DONE, text="...", data=stances.record(data, known),
                created_at=T0)


def state(personas: list[Persona], turns: list[Turn], flow: str = "moderated") -> State:
    return State(discussion=Discussion(id="d", topic="t", flow=flow, created_at=T0, updated_at=T0),
                 personas=personas, turns=turns)


EXPERTS = [Persona(key=k, name=k.capitalize(), role=Role.EXPERT) for k in ("ana", "ben", "cy")]
CONTRARIAN = Persona(key="contrarian", name="Contrarian", role=Role.CONTRARIAN)


# Deliverable 1: options are records; nothing is matched by substring or word overlap ------------------------
@pytest.mark.parametrize("text", [DO_NOT, "delay trunk-based development", "no trunk-based development",
                                  "against trunk-based development", "Trunk-based development nicht einführen",
                                  "Adopt trunk-based development and keep gitflow"])
def test_a_negation_or_a_longer_text_never_names_the_option_it_contains(text: str) -> None:
    on_table = opts(ADOPT, "Keep gitflow")
    assert choices.named(text, on_table) is None
    assert choices.read(text, on_table) in (choices.UNREADABLE, choices.UNDECIDED)


def test_plan_b_is_not_plan_a_when_plan_c_is_not_on_the_list() -> None:
    on_table = opts("Plan A", "Plan 1")
    assert choices.named("Plan B", on_table) is None and choices.named("Plan 2", on_table) is None
    assert choices.named("plan a", on_table) == "O1"  # the whole label, exactly: case and spacing aside


def test_option_a_stays_apart_from_a_b_and_c() -> None:
    """`key()` used to drop "a" as an article: "Option A" was "option", and A vanished from a ranking."""
    on_table = opts("A", "B", "C")
    assert [o.id for o in on_table] == ["O1", "O2", "O3"]
    verdict = stances.judge(["O1", "O1", "O2"], shown={o.id: o.label for o in on_table})
    assert verdict.kind == "LEANING" and verdict.choice == "O1" and verdict.text.startswith("LEANING: A [O1]")
    assert tally.places(["O1", "O2", "O3"]) == [(1, "O1"), (2, "O2"), (3, "O3")]
    assert [o.label for o in opts("Option A", "Option B")] == ["Option A", "Option B"]


def test_the_peoples_votes_never_become_their_opposites() -> None:
    shown = {o.id: o.label for o in opts("adopt trunk", "do not adopt trunk")}
    verdict = stances.judge(["O1", "O1"], ["O2", "O2", "O2"], shown)
    assert verdict.kind == "SPLIT" and "most people who voted chose otherwise" in verdict.text
    assert "people: do not adopt trunk [O2] 3 of 3" in verdict.text


def test_a_new_option_a_persona_proposes_gets_the_next_id_and_keeps_it() -> None:
    known = opts(ADOPT)
    first = said("ana", "new: Keep gitflow", known)
    assert first.data is not None and first.data["choice"] == "O2"
    after = choices.catalogue([listed(known), first])
    assert after == [Option("O1", ADOPT), Option("O2", "Keep gitflow")]
    again = said("ben", "new: keep gitflow", after, round_=2)  # the same option proposed again: its id
    assert again.data is not None and again.data["choice"] == "O2"
    assert choices.extend(after, ["Ship it"]) == [Option("O3", "Ship it")]


# Deliverable 2: strict stances in every language; hedges are undecided; unreadable is shown so -------------
@pytest.mark.parametrize("label", ["undecided, leaning for", "not sure", "it depends", "no position", "n/a",
                                   "unentschieden", "Unentschieden, eher dafür", "weiß nicht", "indécis"])
def test_a_hedge_is_undecided_and_never_makes_a_consensus(label: str) -> None:
    known = opts(ADOPT)
    s = state(EXPERTS[:2], [listed(known), said("ana", label, known), said("ben", label, known)])
    rows = stances.table(s, 1)
    assert [r.choice for r in rows] == ["undecided", "undecided"] and [r.label for r in rows] == ["undecided"] * 2
    assert stances.of_rows(rows).kind == "NO VERDICT"


@pytest.mark.parametrize("line,choice", [
    ("Haltung: dafür — weil es billiger ist", "for"), ("Standpunkt: dagegen — zu riskant", "against"),
    ("Stance: O1 — the trial", "O1"), ("**Position:** contre — trop tôt", "against"),
    ("Postura: a favor — es barato", "for"), ("Stance: o1 — lower case id", "O1"),
    ("Stance: O1 — 試験運用の方が安い", "O1"), ("Stance：against — 時期尚早", "against"),
    ("Stance: undecided — zależy od danych", "undecided"),
])
def test_the_stance_line_reads_in_the_discussions_language(line: str, choice: str) -> None:
    """For and against are read only where no option is listed; beside a list they name none of its options."""
    data = stances.parse(f"Text.\n{line}")
    on_table = opts(ADOPT)
    assert data is not None
    assert stances.record(data, on_table if choice.startswith("O") else [])["choice"] == choice
    if choice in ("for", "against"):
        assert stances.record(data, on_table)["choice"] == "unreadable"


def test_anything_else_is_undecided_unreadable_and_shown_so() -> None:
    known = opts(ADOPT)
    s = state(EXPERTS[:2], [listed(known), said("ana", "adopt it, obviously", known), said("ben", "O1", known)])
    rows = stances.table(s, 1)
    assert [(r.choice, r.label) for r in rows] == [("unreadable", "undecided (unreadable)"), ("O1", f"{ADOPT} [O1]")]
    text = stances.text(rows, 1)
    assert "- Ana: **undecided (unreadable)**" in text and "LEANING" not in text  # one of two is no majority


def test_the_contrarian_neither_makes_nor_blocks_a_consensus() -> None:
    known = opts(ADOPT)
    blocks = state([*EXPERTS[:2], CONTRARIAN], [listed(known), said("ana", "O1", known), said("ben", "O1", known),
                                                said("contrarian", "undecided", known)])
    verdict = stances.of_rows(stances.table(blocks, 1), shown={"O1": ADOPT})
    assert verdict.kind == "CONSENSUS" and "the Contrarian (not counted): undecided" in verdict.text
    makes = state([EXPERTS[0], CONTRARIAN], [listed(known), said("ana", "O1", known),
                                             said("contrarian", "O1", known)])
    assert stances.of_rows(stances.table(makes, 1)).kind == "LEANING"  # one counted persona is no consensus


# Deliverable 5 (and 1): a meeting's options, rankings, convergence and deliverable --------------------------
OWNERS = [Persona(key=k, name=n, role=Role.OWNER, title=t) for k, n, t in
          (("dana", "Dana", "Billing"), ("eli", "Eli", "Mobile"), ("fay", "Fay", "Platform"))]


def options_turn(options: list[Option]) -> Turn:
    return Turn(key="d:r3:options", discussion_id="d", round=3, step=0, phase=Phase.OPTIONS, persona_key="moderator",
                status=TurnStatus.DONE, text="...", data={"options": [o.label for o in options],
                                                          "listed": choices.records(options)}, created_at=T0)


def ranked(who: str, items: list[tuple[str, str]]) -> Turn:
    ranking = [{"item": item, "why": why, "domain": who} for item, why in items]
    return Turn(key=f"d:r3:{who}:vote", discussion_id="d", round=3, step=1, phase=Phase.RANKED_VOTE,
                persona_key=who, status=TurnStatus.DONE, text="...",
                data={"ranking": ranking, "stance": "s", "label": items[0][0] if items else ""}, created_at=T0)


def test_adopt_x_do_not_adopt_x_and_keep_gitflow_are_not_a_convergence() -> None:
    known = [*opts(ADOPT, DO_NOT, "Keep gitflow")]
    s = state([meeting.MODERATOR, *OWNERS], [listed(known), said("dana", "O1", known), said("eli", "O2", known),
                                              said("fay", "O3", known)], flow="meeting")
    assert not meeting.converged(s, 1)
    agree = state([meeting.MODERATOR, *OWNERS], [listed(known), said("dana", "O1", known), said("eli", "O1", known),
                                                  said("fay", "O3", known)], flow="meeting")
    assert meeting.converged(agree, 1)


def test_an_owner_ranking_do_not_adopt_first_is_never_recorded_as_adopt() -> None:
    fixed = opts(ADOPT, "Keep gitflow")
    s = state([meeting.MODERATOR, *OWNERS], [options_turn(fixed), ranked("dana", [(DO_NOT, "too risky"),
                                                                                   ("O2", "works")])],
              flow="meeting")
    ballots, _, unmatched = meeting.owner_ballots(s)
    assert ballots["Dana"] == ["", "O2"] and unmatched["Dana"] == [DO_NOT]  # #1 stays unmatched: O2 is #2


def test_each_items_reason_comes_from_the_owners_who_ranked_it_highest_and_the_heading_follows_the_verdict() -> None:
    fixed = opts("Billing fixes", "Mobile app", "Platform")
    s = state([meeting.MODERATOR, *OWNERS], [
        options_turn(fixed),
        ranked("dana", [("O2", "dana puts mobile second"), ("O1", "dana: billing first"), ("O3", "x")]),
        ranked("eli", [("O1", "eli: billing first too"), ("O2", "y"), ("O3", "z")]),
        ranked("fay", [("O2", "fay: mobile first"), ("O1", "fay: billing second"), ("O3", "w")]),
    ], flow="meeting")
    _, reasons, _ = meeting.owner_ballots(s)
    assert reasons["O1"] == "eli: billing first too (Eli)"  # not Dana's, who ranked it second
    assert reasons["O2"] == "dana puts mobile second (Dana); fay: mobile first (Fay)"
    from core.deliberation import verdicts
    from core.deliberation.schemas import MeetingRecommendation
    verdict = verdicts.of_round(s, 3, [])
    text, items = closings.recommendation("t", s, MeetingRecommendation(key_arguments=[], dissents=[], next_steps=[]),
                                          verdict)
    assert verdict.kind == "LEANING" and "Consensus Ranking" not in text and "Owners' Ranking (leaning" in text
    assert items[0] == "O2"


def test_the_moderator_sees_the_tally_before_writing_dissents_and_the_vote_asks_for_domains() -> None:
    fixed = opts("Billing fixes", "Mobile app")
    s = state([meeting.MODERATOR, *OWNERS], [options_turn(fixed), ranked("dana", [("O2", "a"), ("O1", "b")]),
                                              ranked("eli", [("O1", "c")])], flow="meeting")
    summary = meeting.tally_summary(s)
    assert '1. "Mobile app" [O2]: average rank' in summary or '1. "Billing fixes" [O1]: average rank' in summary
    assert '"Dana" ranked: #1 "Mobile app" [O2], #2 "Billing fixes" [O1]' in summary
    plan = TurnPlan(key="d:r3:final", round=3, step=2, phase=Phase.FINAL_SYNTHESIS, persona_key="moderator")
    assert summary in meeting.Meeting().task(s, plan, meeting.MODERATOR)  # before it writes the dissents
    vote = RankedVote(ranking=[RankedItem(item="O2", why="users wait", domain="Mobile")], stance="s", label="O2")
    assert "1. **Mobile app** [O2] _(affects Mobile)_ — users wait" in closings.ranking_text(vote, fixed)


def test_a_middle_round_opens_with_the_positions_of_the_round_before() -> None:
    known = opts("Billing fixes", "Mobile app")
    s = state([meeting.MODERATOR, *OWNERS], [listed(known), said("dana", "O1", known), said("eli", "O2", known)],
              flow="meeting")
    s.discussion.round, s.discussion.auto_rounds = 2, 3
    plan = TurnPlan(key="d:r2:fay", round=2, step=0, phase=Phase.DELIBERATION, persona_key="fay")
    task = meeting.Meeting().task(s, plan, OWNERS[2])
    assert "The moderator states the positions from round 1:" in task
    assert '- "Dana": "Billing fixes" [O1]\n<stance name="Dana">\nmy reason\n</stance>' in task
    assert '- "Eli": "Mobile app" [O2]\n<stance name="Eli">\nmy reason\n</stance>' in task


# Properties over adversarial label pairs -------------------------------------------------------------------
PAIRS = [
    (ADOPT, DO_NOT), ("adopt trunk", "not adopt trunk"), ("Trunk-based development", "No trunk-based development"),
    ("Trunk-based development", "Delay trunk-based development"), ("Trunk", "Against trunk"),
    ("Microservices einführen", "Microservices nicht einführen"), ("Umstieg auf Rust", "Kein Umstieg auf Rust"),
    ("A", "B"), ("Option A", "Option B"), ("Plan 1", "Plan 2"), ("Plan A", "Plan B"),
    ("Billing", "Billing rewrite"), ("Rewrite billing", "Rewrite billing in Rust"),
]
HEDGES = ["undecided, leaning for", "not sure", "it depends", "no position", "n/a", "unentschieden", "weiß nicht"]
# Beside a list, for and against name none of its options: which one would "for" be?
WORDS = {"for": "unreadable", "against": "unreadable", "dafür": "unreadable", "dagegen": "unreadable",
         "undecided": "undecided"}


@st.composite
def a_table(draw: st.DrawFn) -> tuple[list[Option], list[tuple[str, str]], str]:
    """Options from one adversarial pair (sometimes only the first is on the table), and per persona the label
    it writes with the choice it means: an id, an exact label, the other wording (not on the table), a hedge,
    a position word in English or German."""
    first, second = draw(st.sampled_from(PAIRS))
    if draw(st.booleans()):
        first, second = second, first
    both = draw(st.booleans())
    on_table = opts(first, second) if both else opts(first)
    ways = []
    for o in on_table:
        ways += [(o.id, o.id), (o.label, o.id), (o.label.upper(), o.id), (f"**{o.label}**", o.id)]
    if not both:
        ways.append((second, "unreadable"))  # names an option nobody put on the table: it names none
    ways += [(h, "undecided") for h in HEDGES] + list(WORDS.items())
    labels = draw(st.lists(st.sampled_from(ways), min_size=1, max_size=6))
    contrarian = draw(st.sampled_from(ways))[0]
    return on_table, labels, contrarian


@given(a_table(), st.lists(st.integers(0, 1), max_size=5))
# The edges: one persona alone (never a consensus), the fewest that make one, an even split with the people
# split too, nobody naming an option while every person votes one, and the most personas against the most votes.
@example((opts(ADOPT, DO_NOT), [("O1", "O1")], "O1"), [])
@example((opts(ADOPT, DO_NOT), [("O1", "O1"), (ADOPT.upper(), "O1")], "O2"), [])
@example((opts(ADOPT, DO_NOT), [("O1", "O1"), ("O2", "O2")], "O1"), [0, 1])
@example((opts(ADOPT), [(DO_NOT, "unreadable"), ("for", "unreadable"), ("not sure", "undecided")], "for"),
         [0, 0, 0, 0, 0])
@example((opts(ADOPT, DO_NOT), [("O2", "O2")] * 6, "O1"), [0] * 5)
def test_no_verdict_names_an_option_nobody_chose_and_consensus_means_one_id(
        drawn: tuple[list[Option], list[tuple[str, str]], str], votes: list[int]) -> None:
    on_table, labels, contrarian_label = drawn
    experts = [Persona(key=f"p{i}", name=f"P{i}", role=Role.EXPERT) for i in range(len(labels))]
    turns = [listed(on_table), *(said(p.key, label, on_table) for p, (label, _) in zip(experts, labels, strict=True)),
             said("contrarian", contrarian_label, on_table)]
    rows = stances.table(state([*experts, CONTRARIAN], turns), 1)
    meant = [choice for _, choice in labels]
    assert [r.choice for r in rows if r.counted] == meant  # each persona's label read as what it means
    people = [on_table[v % len(on_table)].id for v in votes]
    verdict = stances.of_rows(rows, people, {o.id: o.label for o in on_table})
    if verdict.choice:
        assert verdict.choice in meant, verdict.text  # never an option nobody chose
    if verdict.kind == "CONSENSUS":
        assert len(meant) >= 2 and set(meant) == {verdict.choice}
        assert verdict.choice not in ("undecided", "unreadable")


def test_a_split_meeting_is_never_headed_consensus_ranking() -> None:
    from core.deliberation import verdicts
    from core.deliberation.schemas import MeetingRecommendation
    fixed = opts("Billing fixes", "Mobile app")
    s = state([meeting.MODERATOR, *OWNERS], [options_turn(fixed), ranked("dana", [("O1", "a"), ("O2", "b")]),
                                              ranked("eli", [("O2", "c"), ("O1", "d")])], flow="meeting")
    verdict = verdicts.of_round(s, 3, [])
    text, _ = closings.recommendation("t", s, MeetingRecommendation(key_arguments=[], dissents=[], next_steps=[]),
                                      verdict)
    assert verdict.kind == "SPLIT" and "**Owners' Ranking (split: no consensus)**" in text
    assert "Consensus Ranking" not in text


def test_the_referee_reads_the_computed_verdict_before_writing_its_own() -> None:
    from core.deliberation.flows import council
    advisors = council.DEFAULT_ADVISORS
    s = state([*advisors, council.REFEREE], [said("pragmatist", "for", []), said("visionary", "against", []),
                                             said("skeptic", "against", [])], flow="council")
    plan = TurnPlan(key="d:r1:final", round=1, step=9, phase=Phase.FINAL_SYNTHESIS, persona_key="referee")
    task = council.Council().task(s, plan, council.REFEREE)
    computed = stances.of_rows(stances.table(s, 1))
    assert computed.kind == "LEANING" and computed.text in task and "must agree with it in kind" in task


@pytest.mark.parametrize("reads,recommends,agrees,rec", [
    ("LEANING", "O1", True, "O1"), ("LEANING", "none", True, ""), ("LEANING", "O2", False, "O2"),
    ("CONSENSUS", "O1", False, "O1"), ("SPLIT", "O1", False, "O1"), ("LEANING", "Adopt it", True, ""),
    ("LEANING", "o1", True, "O1"),
])
def test_the_referees_reading_is_compared_by_kind_and_id_never_by_prose(reads: str, recommends: str, agrees: bool,
                                                                       rec: str) -> None:
    from core.deliberation import verdicts
    on_table = opts(ADOPT, DO_NOT)
    leaning = stances.judge(["O1", "O1", "O2"], shown={o.id: o.label for o in on_table})
    assert verdicts.reading(leaning, reads, recommends, on_table) == verdicts.Reading(rec, agrees)
    split = stances.judge(["O1", "O2"])
    assert verdicts.reading(split, "SPLIT", "O2", on_table).agrees  # in a split, the referee's own choice


KINDS = ["CONSENSUS", "LEANING", "SPLIT", "NO VERDICT"]


@given(st.lists(st.sampled_from(["O1", "O2", "for", "undecided", "unreadable"]), max_size=5),
       st.sampled_from(KINDS), st.sampled_from(["O1", "O2", "O3", "for", "against", "none", "Adopt trunk-based "
                                                "development", "not O1", ""]))
# The edges: nobody recorded a stance, the fewest agreeing, an even split, all five agreeing, and all unreadable
# with a referee that claims a consensus on an option that is not on the table.
@example([], "NO VERDICT", "")
@example(["O1", "O1"], "CONSENSUS", "O1")
@example(["O1", "O2"], "SPLIT", "not O1")
@example(["O2"] * 5, "CONSENSUS", "Adopt trunk-based development")
@example(["unreadable"] * 5, "CONSENSUS", "O3")
def test_a_referee_shown_beside_the_verdict_never_disagrees_with_it_in_kind(personas: list[str], reads: str,
                                                                            recommends: str) -> None:
    from core.deliberation import verdicts
    on_table = opts(ADOPT, DO_NOT)
    verdict = stances.judge(personas, shown={o.id: o.label for o in on_table})
    read = verdicts.reading(verdict, reads, recommends, on_table)
    assert read.recommends in ("", "O1", "O2")  # only an option it was given, never one read from prose
    if read.agrees:
        assert reads == verdict.kind
        assert not verdict.choice or read.recommends in ("", verdict.choice)
