"""What a prompt reads of a long discussion: recent rounds verbatim, earlier ones by their syntheses, and the
people's messages nothing has answered or summarised yet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation import context, prompts
from core.deliberation.flows.base import State
from core.models import Discussion, HumanMessage, Phase, Turn, TurnStatus

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def at(round_: int, minute: int = 0) -> datetime:
    return T0 + timedelta(days=round_, minutes=minute)


def turn(round_: int, step: int, phase: Phase, who: str = "moderator") -> Turn:
    return Turn(key=f"d:r{round_}:s{step}:{who}", discussion_id="d", round=round_, step=step, phase=phase,
                persona_key=who, status=TurnStatus.PUBLISHED, text=f"{phase.value} of round {round_}",
                created_at=at(round_, step), finished_at=at(round_, step + 1))


def human(text: str, when: datetime, *, owed: bool = False) -> HumanMessage:
    return HumanMessage(id=1, discussion_id="d", author_id="U2", author_name="Sam", text=text,
                        needs_answer=owed, created_at=when)


def five_rounds(humans: list[HumanMessage]) -> State:
    turns = [t for r in range(1, 6) for t in (turn(r, 0, Phase.OPENING), turn(r, 1, Phase.STATEMENT, "e1"),
                                             turn(r, 5, Phase.ROUND_SYNTHESIS))]
    d = Discussion(id="d", topic="t", round=5, created_at=T0, updated_at=T0)
    return State(discussion=d, personas=[], turns=turns, humans=humans)


def test_recent_rounds_verbatim_earlier_ones_by_their_latest_syntheses() -> None:
    seen = context.window(five_rounds([]), rounds=2)
    assert {t.round for t in seen.turns} == {4, 5}
    assert [(t.round, t.phase) for t in seen.condensed] == [(r, Phase.ROUND_SYNTHESIS) for r in (1, 2, 3)]
    longer = five_rounds([])
    longer.turns += [t for r in range(6, 9) for t in (turn(r, 0, Phase.OPENING), turn(r, 5, Phase.ROUND_SYNTHESIS))]
    longer.discussion.round = 8
    seen = context.window(longer, rounds=2)
    assert [t.round for t in seen.condensed] == [4, 5, 6], "a fixed number of syntheses, the latest ones"
    assert len(context.window(longer, rounds=2, final=True).condensed) == 6, "the final synthesis sees further"


def test_people_are_dropped_only_once_a_synthesis_carries_them_or_they_were_answered() -> None:
    summarised = human("Round two felt rushed.", at(2, 2))
    owed = human("What does the pilot cost?", at(2, 3), owed=True)
    recent = human("Round four is better.", at(4, 2))
    seen = context.window(five_rounds([summarised, owed, recent]), rounds=2)
    assert [m.text for m in seen.humans] == [owed.text, recent.text]
    answered = owed.model_copy(update={"answered": True})
    assert [m.text for m in context.window(five_rounds([answered, recent]), rounds=2).humans] == [recent.text]


def test_the_final_synthesis_sees_every_round_however_long_the_discussion() -> None:
    long = five_rounds([])
    long.turns += [t for r in range(6, 21) for t in (turn(r, 0, Phase.OPENING), turn(r, 5, Phase.ROUND_SYNTHESIS))]
    for t in long.turns:
        if t.phase == Phase.ROUND_SYNTHESIS:
            t.data = {"summary": f"summary of round {t.round}"}
    long.discussion.round = 20
    seen = context.window(long, rounds=2, final=True)
    shown = {t.round for t in seen.condensed} | {t.round for t in seen.turns} | {t.round for t in seen.outline}
    assert shown == set(range(1, 21)), "every round reaches the final synthesis, directly or by its synthesis"
    assert [t.round for t in seen.outline] == list(range(1, 7))
    assert context.window(long, rounds=2).outline == [], "other turns keep their fixed size"


def test_a_whole_transcript_stays_within_its_budget_and_keeps_every_turn() -> None:
    speeches = [Turn(key=f"d:r{r}:s{s}:p", discussion_id="d", round=r, step=s, phase=Phase.SPEECH, persona_key="p",
                     status=TurnStatus.PUBLISHED, text=f"speech {r}.{s} " + "word " * 400, created_at=at(r, s),
                     data={"label": f"option {r}.{s}", "stance": "because"}) for r in range(1, 6) for s in (2, 4)]
    kept = prompts.within_budget(speeches, 10_000)
    assert sum(len(t.text) for t in kept) <= 10_000 and len(kept) == len(speeches)
    assert kept[0].text == "(condensed) option 1.2: because", "round 1 is still there, as its stance"
    assert kept[-1].text == speeches[-1].text, "the latest speeches verbatim"
    assert prompts.within_budget(speeches, None) == speeches


def test_one_round_verbatim_means_the_current_round_alone() -> None:
    seen = context.window(five_rounds([]), rounds=1)
    assert {t.round for t in seen.turns} == {5}
    assert [t.round for t in seen.condensed] == [2, 3, 4]
    assert {t.round for t in context.window(five_rounds([]), rounds=0).turns} == {5}  # at least one round


def test_a_first_round_has_nothing_condensed_and_hears_everyone() -> None:
    d = Discussion(id="d", topic="t", round=1, created_at=T0, updated_at=T0)
    early = human("Before anything was said.", T0 - timedelta(days=1))
    seen = context.window(State(discussion=d, personas=[], turns=[turn(1, 0, Phase.OPENING)], humans=[early]),
                          rounds=2)
    assert seen.condensed == [] and [m.text for m in seen.humans] == [early.text]


def test_only_finished_turns_with_words_are_read() -> None:
    s = five_rounds([])
    running = turn(5, 2, Phase.STATEMENT, "e2").model_copy(update={"status": TurnStatus.RUNNING})
    failed = turn(5, 3, Phase.STATEMENT, "e3").model_copy(update={"status": TurnStatus.FAILED})
    empty = turn(5, 4, Phase.STATEMENT, "e4").model_copy(update={"text": ""})
    s.turns += [running, failed, empty]
    keys = {t.key for t in context.window(s, rounds=2).turns}
    assert running.key not in keys and failed.key not in keys and empty.key not in keys
    assert turn(5, 1, Phase.STATEMENT, "e1").key in keys


def test_the_condensed_rounds_end_when_their_last_turn_finished() -> None:
    s = five_rounds([])
    # Round 3's synthesis took until a minute past noon of round 3's day; a message written while it was written
    # is in it; one written exactly as it finished too; one a moment later is not.
    during = human("Written while the synthesis was being written.", at(3, 5))
    at_end = human("Written as it finished.", at(3, 6))
    after = human("Written just after.", at(3, 6) + timedelta(microseconds=1))
    s.humans = [during, at_end, after]
    assert [m.text for m in context.window(s, rounds=2).humans] == [after.text]
    unfinished = [t.model_copy(update={"finished_at": None}) for t in s.turns]  # then their start counts
    s2 = State(discussion=s.discussion, personas=[], turns=unfinished, humans=[during, at_end, after])
    assert [m.text for m in context.window(s2, rounds=2).humans] == [at_end.text, after.text]


def test_a_message_is_unanswered_until_a_finished_answer_with_words_names_it() -> None:
    """A synthesis lists as open questions the messages no finished answer took up; an answer that failed, was
    skipped, or said nothing does not count; `since` keeps only those written after it."""
    s = five_rounds([])
    msgs = [human(f"question {i}", at(5, i)).model_copy(update={"id": i}) for i in range(1, 7)]
    s.humans = msgs

    def answer(i: int, status: TurnStatus, text: str = "an answer") -> Turn:
        return turn(5, 10 + i, Phase.ANSWER).model_copy(update={"reply_to": i, "status": status, "text": text})

    s.turns += [answer(1, TurnStatus.PUBLISHED), answer(2, TurnStatus.DONE), answer(3, TurnStatus.FAILED),
                answer(4, TurnStatus.SKIPPED), answer(5, TurnStatus.PUBLISHED, text="")]
    assert [m.id for m in context.unanswered(s)] == [3, 4, 5, 6]
    assert [m.id for m in context.unanswered(s, since=at(5, 4))] == [5, 6], "written after `since`, not at it"
    assert context.unanswered(s, since=at(5, 6)) == []
