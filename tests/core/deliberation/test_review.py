"""Anonymous peer review: where it sits in a round, what a reviewer is shown, and the aggregate (pure)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

from hypothesis import example, given
from hypothesis import strategies as st

from core.deliberation import engine, review
from core.deliberation.engine import RunTurns, State, TurnPlan
from core.deliberation.roster import full_roster
from core.deliberation.schemas import PeerReview
from core.models import Discussion, FlowOptions, Persona, Phase, Role, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
EXPERTS = [Persona(key=f"e{i}", name=n, role=Role.EXPERT, icon=f":icon_{i}:", title=f"Lens {i}")
           for i, n in enumerate(["Amara Okafor", "Kenji Watanabe", "Lucía Fernández", "Priya Raghunathan"])]


def state(seed: int = 7, peer_review: bool = True, turns: list[Turn] | None = None) -> State:
    d = Discussion(id="d", topic="Adopt trunk-based development?", created_at=T0, updated_at=T0,
                   options=FlowOptions(peer_review=peer_review, review_seed=seed))
    return State(discussion=d, personas=full_roster(EXPERTS), turns=turns or [])


def done(plan: TurnPlan, text: str = "", data: dict | None = None) -> Turn:
    return Turn(key=plan.key, discussion_id="d", round=plan.round, step=plan.step, phase=plan.phase,
                persona_key=plan.persona_key, status=TurnStatus.PUBLISHED, text=text, data=data, created_at=T0)


def said(s: State, plan: TurnPlan) -> str:
    """A statement that names its own author and another persona, as models do."""
    me = s.persona(plan.persona_key)
    assert me is not None
    return f"As {me.name} I say {plan.phase.value} {me.icon}; Kenji Watanabe is wrong. {marker(plan.persona_key)}"


def marker(key: str) -> str:
    return f"MARK{sum(map(ord, key)) * 7919}"


def until_reviews(s: State) -> RunTurns:
    """Run the round's steps until the peer review is the next one."""
    while isinstance(step := engine.next_step(s), RunTurns):
        if step.turns[0].phase == Phase.PEER_REVIEW:
            return step
        s.turns += [done(p, said(s, p)) for p in step.turns]
    raise AssertionError(f"no peer review before {step}")


def test_the_review_comes_after_the_statements_and_before_the_round_synthesis() -> None:
    s = state()
    step = until_reviews(s)
    phases = [t.phase for t in s.done_turns()]
    assert phases[-1] == Phase.ANALOGY and Phase.ROUND_SYNTHESIS not in phases
    # Every persona who made a statement reviews (the moderator only opened the round), on the light model.
    assert sorted(p.persona_key for p in step.turns) == sorted(review.statements(s, 1))
    assert "moderator" not in {p.persona_key for p in step.turns} and len(step.turns) == 6
    assert all(review.prompt(s, p).tier == "light" for p in step.turns)


def test_without_the_option_no_review_is_asked() -> None:
    s = state(peer_review=False)
    while isinstance(step := engine.next_step(s), RunTurns):
        assert step.turns[0].phase != Phase.PEER_REVIEW
        s.turns += [done(p, said(s, p)) for p in step.turns]
    assert s.done_turns(Phase.ROUND_SYNTHESIS)


def test_finished_reviews_are_never_asked_again_and_the_synthesis_follows() -> None:
    s = state()
    step = until_reviews(s)
    s.turns += [done(p, data=review.record(s, p, None, "down")) for p in step.turns]
    nxt = engine.next_step(s)
    assert isinstance(nxt, RunTurns) and [p.phase for p in nxt.turns] == [Phase.ROUND_SYNTHESIS]


def test_a_reviewer_sees_no_author_name_no_icon_and_not_its_own_statement() -> None:
    s = state()
    step = until_reviews(s)
    others = {p.key: p for p in s.personas}
    for plan in step.turns:
        p = review.prompt(s, plan)
        words = "\n".join([*(b.text for b in p.system), *(b.text for b in p.shared), p.instruction])
        for key in review.statements(s, 1):
            persona = others[key]
            assert persona.name.lower() not in words.lower(), (plan.persona_key, persona.name)
            assert persona.icon not in words
            assert (marker(key) in words) == (key != plan.persona_key)  # its own statement is not shown
        assert p.purpose.others == [chr(ord("A") + i) for i in range(len(review.statements(s, 1)) - 1)]


def test_each_reviewer_has_its_own_order_and_the_same_one_after_a_restart() -> None:
    s = state()
    step = until_reviews(s)
    orders = {plan.persona_key: [x.author for x in review.shown(s, 1, plan.persona_key)] for plan in step.turns}
    # The order is not the authors' own order for everyone: shuffled per reviewer.
    assert any(order != sorted(order) for order in orders.values())
    # Two reviewers who see the same five statements see them in different orders (not one shared shuffle).
    relative = [[a for a in order if a not in (k1, k2)] for k1, k2, order in
                [(k, j, orders[k]) for k in orders for j in orders if j != k]]
    assert len({tuple(r) for r in relative}) > 1
    again = state(turns=list(s.turns))  # a resumed discussion reads its seed from the stored state
    assert orders == {k: [x.author for x in review.shown(again, 1, k)] for k in orders}
    other_seed = state(seed=8, turns=list(s.turns))
    assert orders != {k: [x.author for x in review.shown(other_seed, 1, k)] for k in orders}


def test_a_review_is_kept_by_author_never_by_letter_and_drops_what_it_was_not_shown() -> None:
    s = state()
    plan = until_reviews(s).turns[0]
    shown = review.shown(s, 1, plan.persona_key)
    answer = PeerReview(ranking=["c", "A", "Z", plan.persona_key, "A", "B"], strongest="B", why="Concrete.")
    data = review.record(s, plan, answer)
    assert data["ranking"][:3] == [shown[1].author, shown[2].author, shown[0].author]
    assert plan.persona_key not in data["ranking"] and data["strongest"] == shown[1].author
    assert data["letters"]["A"]["turns"] == [t.key for t in shown[0].turns]


def test_the_round_synthesis_reads_the_aggregate_and_the_post_names_the_authors() -> None:
    from core.deliberation import prompts

    s = state()
    step = until_reviews(s)
    for plan in step.turns:  # every reviewer puts the same author first, wherever it was shown
        order = sorted(review.shown(s, 1, plan.persona_key), key=lambda x: x.author != "e2")
        s.turns.append(done(plan, data=review.record(
            s, plan, PeerReview(ranking=[x.label for x in order], strongest=order[0].label, why="Sharp."))))
    assert review.complete(s, 1)
    syn = engine.next_step(s)
    assert isinstance(syn, RunTurns)
    built = prompts.build(s, syn.turns[0])
    assert "Lucía Fernández" in built.instruction and "average rank 1.0, first for 5 of 5" in built.instruction
    post = review.text(s, 1)
    assert post.splitlines()[1].startswith("1. **Lucía Fernández**: average rank 1.0 (of 5), ranked first by 5")


# the aggregate --------------------------------------------------------------------------------------------
AUTHORS = st.sampled_from(["a", "b", "c", "d", "e"])
REVIEWS = st.lists(st.tuples(AUTHORS, st.lists(AUTHORS, max_size=6)), max_size=8)


@given(REVIEWS)
@example([])  # nobody reviewed
@example([("a", ["a"])])  # a reviewer who ranked only itself
@example([("a", ["b", "b", "c"]), ("b", ["c", "a"])])  # a name twice in one ranking; a tie on average
@example([("a", ["b", "c", "d", "e", "a", "b"])])  # the longest ranking, its own name and a repeat in it
def test_ranks_are_within_bounds_and_first_places_add_up(reviews: list[tuple[str, list[str]]]) -> None:
    out = review.aggregate(reviews)
    counted = [[a for a in dict.fromkeys(r) if a != who] for who, r in reviews]
    assert sum(s.firsts for s in out) == sum(1 for c in counted if c)
    for s in out:
        assert 1 <= s.average <= max(len(c) for c in counted)
        assert s.reviews == sum(s.author in c for c in counted) and s.firsts <= s.reviews
    assert [(s.average, -s.firsts) for s in out] == sorted((s.average, -s.firsts) for s in out)


@given(REVIEWS)
@example([("a", ["a", "b"])])  # its own name first
@example([("a", []), ("b", ["a"])])  # an empty ranking beside a real one
def test_a_reviewers_own_statement_never_counts(reviews: list[tuple[str, list[str]]]) -> None:
    out = {s.author: s for s in review.aggregate(reviews)}
    only_self = {who for who, _ in reviews} - {a for who, r in reviews for a in r if a != who}
    assert not only_self & set(out)
    # Adding each reviewer's own name anywhere in its ranking changes nothing.
    padded = [(who, [who, *r, who]) for who, r in reviews]
    assert review.aggregate(padded) == review.aggregate(reviews)


@given(REVIEWS, st.randoms())
@example([("a", ["b", "c"]), ("b", ["c", "a"]), ("c", ["a", "b"])], random.Random(1))  # a three-way tie
def test_the_order_reviews_arrive_in_does_not_matter(reviews: list[tuple[str, list[str]]], rnd: object) -> None:
    shuffled = list(reviews)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert review.aggregate(shuffled) == review.aggregate(reviews)


@given(st.lists(AUTHORS, min_size=2, max_size=5, unique=True), st.integers(1, 6))
@example(["a", "b"], 1)  # the fewest authors and reviews
@example(["a", "b", "c", "d", "e"], 6)  # the most
def test_an_author_everyone_ranks_first_leads_with_average_one(authors: list[str], n: int) -> None:
    top, rest = authors[0], authors[1:]
    reviews = [(f"r{i}", [top, *rest]) for i in range(n)]
    first = review.aggregate(reviews)[0]
    assert (first.author, first.average, first.firsts, first.reviews) == (top, 1.0, n, n)
