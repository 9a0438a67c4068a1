"""A thread flood cannot inflate prompts: people's messages enter a prompt within a size budget, the newest in
full, one person's share capped, whatever sequence of replies came before."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from hypothesis import example, given, settings
from hypothesis import strategies as st

from core.control.people import MAX_HUMAN_CHARS
from core.deliberation import context, prompts
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.roster import experts_from_spec, full_roster
from core.deliberation.schemas import ExpertSpec
from core.models import Discussion, HumanMessage, Phase, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
PEOPLE = [("U1", "Ana"), ("U2", "Ben & <Co>"), ("U3", '"Cy"')]


def msg(i: int, who: int, text: str, *, owed: bool = False) -> HumanMessage:
    author_id, name = PEOPLE[who]
    return HumanMessage(id=i + 1, discussion_id="d", author_id=author_id, author_name=name, text=text,
                        needs_answer=owed, created_at=T0 + timedelta(seconds=i))


def people_chars(blocks: list[str]) -> int:
    return sum(len(b) for b in blocks)


# Texts up to the entry limit, escape-heavy ones included (`&` is five characters once quoted).
texts = st.tuples(st.text(alphabet="ab &<>\n", min_size=1, max_size=12), st.integers(1, MAX_HUMAN_CHARS)).map(
    lambda t: (t[0] * (t[1] // len(t[0]) + 1))[:t[1]]).filter(lambda s: s.strip() != "")
replies = st.lists(st.tuples(st.integers(0, len(PEOPLE) - 1), texts, st.booleans()), max_size=80)


@settings(max_examples=150, deadline=None)
@given(replies)
@example([])
@example([(0, "&" * MAX_HUMAN_CHARS, False)])  # the largest block one message can make
@example([(0, "x" * MAX_HUMAN_CHARS, False)] * 60)  # the flood of the report: 60 full replies by one member
@example([(1, "&" * MAX_HUMAN_CHARS, True)] * 10 + [(0, "&" * MAX_HUMAN_CHARS, False)])
def test_the_peoples_part_stays_under_the_budget_and_the_newest_is_in_full(
        sequence: list[tuple[int, str, bool]]) -> None:
    humans = [msg(i, who, text, owed=owed) for i, (who, text, owed) in enumerate(sequence)]
    heard = context.heard(humans)
    blocks = [text for _, text in heard.blocks]
    assert people_chars(blocks) <= context.PEOPLE_CHARS
    if humans:
        newest = humans[-1]
        assert context.human_block(newest) in blocks, "the newest reply is read in full"
        # Each other person stays within their share (the newest counts in its writer's, and is always whole).
        for author_id, name in PEOPLE:
            own = people_chars([b for b in blocks if b.startswith(context.human_block(
                msg(0, PEOPLE.index((author_id, name)), "x")).split("\n")[0])])
            cap = context.PERSON_CHARS
            if author_id == newest.author_id:
                cap = max(cap, len(context.human_block(newest)))
            assert own <= cap, (name, own)
    # In time order, as the thread reads.
    assert [when for when, _ in heard.blocks] == sorted(when for when, _ in heard.blocks)


def test_a_flood_by_one_member_is_cut_with_a_note_and_others_are_still_heard() -> None:
    flood = [msg(i, 0, f"reply {i} " + "x" * 3990) for i in range(60)]
    other = msg(60, 1, "A short point from someone else.")
    last = msg(61, 0, "The flooder's newest reply.")
    heard = context.heard([*flood[:30], other, *flood[30:], last])
    texts = [t for _, t in heard.blocks]
    assert texts[-1] == context.human_block(last)
    assert context.human_block(other) in texts, "one voice cannot crowd out the rest"
    assert heard.over_share == frozenset({"U1"})
    assert any(t.startswith("(59 earlier messages by 1 person") or t.startswith("(58 earlier messages by 1 person")
               for t in texts), texts
    cut = [t for t in texts if "(cut here:" in t]
    assert len(cut) <= 1 and all(t.count("</human>") == 1 for t in cut), "a cut message keeps its framing"
    # Someone under their share is not flagged even when the whole budget runs out.
    many = [msg(i, i % 3, "y" * MAX_HUMAN_CHARS) for i in range(6)]  # two each: the budget ends first
    assert context.heard(many).over_share == frozenset()


def test_a_message_owed_an_answer_is_read_before_older_chatter() -> None:
    owed = msg(0, 1, "Please answer this: " + "q" * 3000, owed=True)
    chatter = [msg(i, 2 if i % 2 else 0, "z" * 3900) for i in range(1, 12)]
    texts = [t for _, t in context.heard([owed, *chatter]).blocks]
    assert context.human_block(owed) in texts


def roster_state(humans: list[HumanMessage]) -> State:
    spec = [ExpertSpec(name=n, title="Engineer", expertise=["x"], thinking_style="s", bias="b", reply_tendency="r")
            for n in ("Mira Sol", "Jonas Becker", "Ada Park")]
    personas = full_roster(experts_from_spec(spec, 3))
    d = Discussion(id="d", topic="How should we price the plan?", round=1, created_at=T0, updated_at=T0)
    turns = [Turn(key="d:r1:s1:moderator", discussion_id="d", round=1, step=1, phase=Phase.OPENING,
                  persona_key="moderator", status=TurnStatus.PUBLISHED, text="Welcome.", created_at=T0,
                  finished_at=T0)]
    return State(discussion=d, personas=personas, turns=turns, humans=humans)


def test_sixty_full_replies_no_longer_multiply_every_prompt_of_a_round() -> None:
    """The report's reproduction: 60 replies of 4,000 characters by one member, through the real assembly."""
    quiet = roster_state([])
    flood = roster_state([msg(i, 0, f"reply {i} " + "x" * (MAX_HUMAN_CHARS - 10)) for i in range(60)])
    expert = next(p for p in quiet.personas if p.name == "Mira Sol")
    plan = TurnPlan(key="d:r1:s2:e", round=1, step=2, phase=Phase.STATEMENT, persona_key=expert.key)

    def size(s: State) -> int:
        p = prompts.build(s, plan)
        return sum(len(b.text) for b in (*p.system, *p.shared)) + len(p.instruction)

    grown = size(flood) - size(quiet)
    assert grown <= context.PEOPLE_CHARS, grown
    shown = sum(len(re.findall(r"^reply \d+ ", b.text, re.M)) for b in prompts.build(flood, plan).shared)
    assert 2 <= shown < 60, shown
