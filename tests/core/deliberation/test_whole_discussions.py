"""Properties over whole discussions, not only the tally: whatever the personas' stances, people's votes on any of
a round's polls, votes changed, topic changes and rankings with unmatched items, the verdict counts each person
and each counted persona once, names only options of the current question, and a ranking's #1 is what its
author wrote first.

Each discussion is built as the effects record one: stances read against the options on the table when the turn
was written, a question turn opening each question, polls offering the table's options, ballots cast and replaced
one at a time."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.deliberation import choices, closings, question, stances, verdicts
from core.deliberation.choices import Option
from core.deliberation.flows import meeting
from core.deliberation.flows.base import State
from core.deliberation.schemas import RankedItem, RankedVote
from core.models import Ballot, Discussion, Persona, Phase, Poll, Role, Turn, TurnStatus

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
LABELS = ["Adopt trunk-based development", "Keep release branches", "Run a four-week trial", "Use Postgres",
          "Use MySQL", "Stabilise the core first", "Cut scope", "Hire a second SRE"]
HEDGES = ["undecided", "not sure", "it depends", "unentschieden"]
GARBAGE = ["b).", "for", "against", "the second one", "trial", "O9", "Option 2", "not O1"]


def turn(key: str, round_: int, step: int, phase: Phase, who: str, data: dict | None) -> Turn:
    return Turn(key=key, discussion_id="d", round=round_, step=step, phase=phase, persona_key=who,
                status=TurnStatus.DONE, text="...", data=data, created_at=T0 + timedelta(minutes=round_ * 60 + step))


# A persona's stance this round: how it names an option on the table (by index), or what else it writes.
stance_kinds = st.one_of(
    st.tuples(st.sampled_from(["id", "label", "colon", "brackets", "shown", "bold"]), st.integers(0, 9)),
    st.tuples(st.just("new"), st.sampled_from(LABELS)),
    st.tuples(st.just("old"), st.integers(0, 9)),  # an id a former question listed
    st.tuples(st.just("hedge"), st.sampled_from(HEDGES)),
    st.tuples(st.just("garbage"), st.sampled_from(GARBAGE)),
    st.tuples(st.just("silent"), st.just("")),
)


def stance_line(kind: tuple[str, object], table: list[Option], old: list[Option]) -> str | None:
    how, arg = kind
    if how in ("id", "label", "colon", "brackets", "shown", "bold"):
        o = table[int(str(arg)) % len(table)]
        return {"id": o.id, "label": o.label, "colon": f"{o.id}: {o.label[:5]}", "brackets": f"{o.id} ({o.label})",
                "shown": f"{o.label} [{o.id}]", "bold": f"**{o.id}**"}[how]
    if how == "new":
        return f"new: {arg}"
    if how == "old":
        return old[int(str(arg)) % len(old)].id if old else "O9"
    if how == "silent":
        return None
    return str(arg)


# One round: whether it opens a new topic, each persona's stance, and people's votes: (voter, poll, option index).
rounds_ = st.lists(
    st.tuples(st.booleans(), st.lists(stance_kinds, min_size=5, max_size=5),
              st.lists(st.tuples(st.integers(0, 4), st.integers(0, 1), st.integers(0, 9)), max_size=10),
              st.lists(st.sampled_from(LABELS), min_size=2, max_size=3, unique=True)),
    min_size=1, max_size=3)


def side(text: str, name: str) -> int:
    """How many a verdict's side counts ("personas: … of 4" is 4; "people: no votes" is 0)."""
    m = re.search(rf"{name}: (?:none|no votes|.*? of (\d+))(?:;|$)", text)
    assert m is not None, text
    return int(m.group(1) or 0)


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 4), rounds_)
# The edges: the fewest experts in one round with nobody voting; the most experts over three rounds, each opening
# a new question, every stance of another kind, and a poll voted to its limit by the same people.
@example(2, [(False, [("id", 0)] * 5, [], LABELS[:2])])
@example(4, [(False, [("id", 0), ("label", 1), ("new", LABELS[3]), ("hedge", "undecided"), ("silent", "")],
               [(v % 5, v % 2, v) for v in range(10)], LABELS[:3]),
             (True, [("old", 0), ("garbage", "O9"), ("bold", 1), ("shown", 0), ("colon", 2)],
              [(0, 0, 0), (0, 1, 1)], LABELS[3:5]),
             (True, [("brackets", 9), ("id", 1), ("id", 1), ("id", 1), ("id", 1)], [(4, 1, 9)] * 10, LABELS[5:8])])
def test_a_verdict_counts_each_person_and_counted_persona_once_and_names_only_the_current_options(
        experts: int, played: list[tuple[bool, list[tuple[str, object]], list[tuple[int, int, int]], list[str]]],
) -> None:
    d = Discussion(id="d", topic="Should we move to trunk-based development?", created_at=T0, updated_at=T0)
    personas = [*(Persona(key=f"e{i}", name=f"Expert {i}", role=Role.EXPERT) for i in range(experts)),
                Persona(key="contrarian", name="Contrarian", role=Role.CONTRARIAN)]
    turns: list[Turn] = []
    polled: list[tuple[Poll, list[Ballot]]] = []
    clock = T0
    since = 1  # the round the current question opened in, as the test keeps it

    def current() -> list[Option]:
        return choices.catalogue(t for t in turns if t.round >= since)

    for r, (new_topic, kinds, votes, answers) in enumerate(played, 1):
        d.round = r
        if r == 1 or new_topic:  # the question turn opening the question (round 1's, or a Different topic's)
            if r > 1:
                question.open_new(d)
                since = r
            turns.append(turn(question.key(d), r, 0, Phase.QUESTION, "moderator",
                              question.record(turns, d, answers, "the question")))
        for p, kind in zip(personas, kinds, strict=False):
            table = question.options(turns, d)
            assert table == current()  # the options of the question asked since its topic opened, and no others
            old = [o for o in choices.catalogue(turns) if o not in table]
            line = stance_line(kind, table, old)
            if line is None:
                continue
            parsed = stances.parse(f"My view.\nStance: {line} — my reason")
            assert parsed is not None, line
            data = stances.record(parsed, table, choices.catalogue(turns))
            turns.append(turn(f"d:r{r}:s1:{p.key}", r, 1, Phase.STATEMENT, p.key, data))
        table = question.options(turns, d)[:5]
        polls = [Poll(id=len(polled) + i + 1, key=f"d:r{r}:poll{i}", discussion_id="d", round=r, question="?",
                      options=[o.label for o in table], option_ids=[o.id for o in table], created_at=clock)
                 for i in range(2)]  # the round synthesis's poll and the closing's: two polls, one question
        ballots: dict[int, list[Ballot]] = {p.id: [] for p in polls}
        for voter, which, choice in votes:
            clock += timedelta(seconds=1)
            poll = polls[which]
            for b in ballots[poll.id]:  # a vote again on the same poll replaces the earlier one
                if b.voter_id == f"U{voter}":
                    b.superseded = True
            ballots[poll.id].append(Ballot(poll_id=poll.id, voter_id=f"U{voter}", voter_name=f"U{voter}",
                                           choice=choice % len(table), created_at=clock))
        polled += [(p, ballots[p.id]) for p in polls]
    state = State(discussion=d, personas=personas, turns=turns)
    last = d.round
    people = closings.people_choices(polled, last)
    verdict = verdicts.of_round(state, last, people)
    voted = {b.voter_id for p, bs in polled if p.round == last for b in bs if not b.superseded}
    assert side(verdict.text, "personas") == experts  # the Contrarian is shown beside the count, never in it
    assert side(verdict.text, "people") == len(voted) == len(people)  # one vote a person, whatever they voted on
    on_table = {o.id for o in current()}
    assert set(re.findall(r"\[(O\d+)\]", verdict.text)) <= on_table, (verdict.text, on_table)
    assert verdict.choice in on_table | {""}
    # The stance table and the poll panel count the same personas as the verdict.
    assert sum(1 for r in stances.table(state, last) if r.counted) == experts


# Rankings: each item names an option by id, exact label or a shown form, or nothing; repeats included.
item_kinds = st.tuples(st.sampled_from(["id", "label", "colon", "shown", "bracketed", "garbage"]),
                       st.integers(0, 9), st.sampled_from(GARBAGE))


def item(kind: tuple[str, int, str], fixed: list[Option]) -> tuple[str, str]:
    """A ranking item as an owner writes it, and the option it names ("" for none)."""
    how, i, junk = kind
    o = fixed[i % len(fixed)]
    if how == "garbage":
        return junk, ""
    return {"id": o.id, "label": o.label, "colon": f"{o.id}: {o.label}", "shown": f"{o.label} [{o.id}]",
            "bracketed": f"[{o.id}]"}[how], o.id


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(LABELS), min_size=3, max_size=5, unique=True),
       st.lists(st.lists(item_kinds, min_size=1, max_size=5), min_size=2, max_size=4),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3), st.integers(0, 9)), max_size=12))
# The edges: the fewest options and owners with one item each and no picks; the most of each, every item kind,
# repeats of one option, and the most picks.
@example(LABELS[:3], [[("id", 0, "for")], [("garbage", 0, "O9")]], [])
@example(LABELS[:5], [[("id", 0, "for"), ("label", 0, "for"), ("colon", 1, "b)."), ("shown", 2, "trial"),
                       ("bracketed", 3, "not O1")],
                      [("garbage", 0, "Option 2")] * 5, [("label", 4, "for")], [("shown", 9, "O9")] * 5],
         [(i % 4, 1 + i % 3, i % 10) for i in range(12)])
def test_a_rankings_first_place_is_what_its_author_wrote_first_or_unmatched(
        labels: list[str], ballots: list[list[tuple[str, int, str]]], picks: list[tuple[int, int, int]]) -> None:
    d = Discussion(id="d", topic="What should we fix first?", flow="meeting", round=3, created_at=T0, updated_at=T0)
    owners = [Persona(key=f"o{i}", name=f"Owner {i}", role=Role.OWNER) for i in range(len(ballots))]
    fixed = choices.extend([], labels)
    turns = [turn("d:r3:s0:moderator", 3, 0, Phase.OPTIONS, "moderator",
                  {"options": labels, "listed": choices.records(fixed)})]
    firsts = []
    for owner, kinds in zip(owners, ballots, strict=True):
        written = [item(k, fixed) for k in kinds]
        firsts.append(written[0][1])  # the #1 as written: an option, or none
        vote = RankedVote(ranking=[RankedItem(item=text, why="") for text, _ in written], stance="s", label="")
        turns.append(turn(f"d:r3:s1:{owner.key}", 3, 1, Phase.RANKED_VOTE, owner.key, vote.model_dump()))
        placed = closings.placed(vote, fixed)
        assert len(placed) == len(written)  # every item keeps its place
        for place, (named, (_, meant)) in enumerate(zip(placed, written, strict=True)):
            assert named in ("", meant) and (named == meant or meant in placed[:place] or not meant)
    state = State(discussion=d, personas=[meeting.MODERATOR, *owners], turns=turns)
    owner_ballots = meeting.owner_ballots(state)[0]
    assert closings.seated_first_choices(state, owner_ballots) == firsts
    # People rank place by place on menus; a pick for a place is their #N, never moved up by an empty #1.
    places = [Poll(id=p, key=f"d:final:rank{p}", discussion_id="d", round=3, question=f"#{p}", final=True,
                   options=[o.label for o in fixed], option_ids=[o.id for o in fixed], created_at=T0)
              for p in (1, 2, 3)]
    cast: dict[int, list[Ballot]] = {p.id: [] for p in places}
    for voter, place, choice in picks:
        for b in cast[place]:
            if b.voter_id == f"U{voter}":
                b.superseded = True
        cast[place].append(Ballot(poll_id=place, voter_id=f"U{voter}", voter_name=f"U{voter}",
                                  choice=choice % len(fixed), created_at=T0))
    polled = [(p, cast[p.id]) for p in places]
    people = closings.people_ballots(polled)
    for voter, ranking in people.items():
        live = next((b for b in cast[1] if b.voter_id == voter and not b.superseded), None)
        assert ranking[0] == (fixed[live.choice].id if live else "")  # their #1, or none: never their #2
    verdict = verdicts.of_round(state, 3, closings.people_choices(polled, 3))
    assert side(verdict.text, "personas") == len(owners)
    assert side(verdict.text, "people") == len({b.voter_id for b in cast[1] if not b.superseded})
    assert set(re.findall(r"\[(O\d+)\]", verdict.text)) <= {o.id for o in fixed}
