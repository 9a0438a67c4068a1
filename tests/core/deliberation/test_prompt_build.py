"""One turn's prompt (pure): the instruction a persona is given for its step, the room and tier and model it is asked
on, what it is told of the question's options, the peer review and the last round, and the transcript it reads:
history outlined, condensed and in full, people's messages in time order, and a stable cached prefix."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from core.deliberation import prompts, stances
from core.deliberation.flows.base import State, TurnPlan
from core.deliberation.question import OPENS
from core.deliberation.roster import FIXED
from core.models import (
    Decision,
    Discussion,
    FlowOptions,
    HumanMessage,
    ModelRoutes,
    Persona,
    Phase,
    Role,
    Turn,
    TurnStatus,
)
from core.ports import Block

T0 = datetime(2026, 11, 2, tzinfo=UTC)
ANA = Persona(key="e1", name="Ana", role=Role.EXPERT, title="Billing")
BO = Persona(key="e2", name="Bo", role=Role.EXPERT, title="Payments")
MODERATOR = next(p for p in FIXED if p.role == Role.MODERATOR)


def turn(step: int, text: str, *, persona: str = "e1", phase: Phase = Phase.STATEMENT, round: int = 1,
         data: dict[str, object] | None = None, minutes: float | None = None) -> Turn:
    at = T0 + timedelta(minutes=minutes if minutes is not None else round * 100 + step)
    return Turn(key=f"d:r{round}:s{step}:{persona}", discussion_id="d", round=round, step=step, phase=phase,
                persona_key=persona, status=TurnStatus.PUBLISHED, text=text, data=data, created_at=at, finished_at=at)


def human(n: int, name: str, text: str, minutes: float, **fields: object) -> HumanMessage:
    return HumanMessage(id=n, discussion_id="d", author_id=f"U{n}", author_name=name, text=text,
                        created_at=T0 + timedelta(minutes=minutes), **fields)  # type: ignore[arg-type]


def state(*turns: Turn, humans: list[HumanMessage] | None = None, round: int = 1, flow: str = "moderated",
          options: FlowOptions | None = None, **fields: object) -> State:
    d = Discussion(id="d", topic="Should we rewrite billing?", flow=flow, round=round, created_at=T0, updated_at=T0,
                   options=options or FlowOptions(), **fields)  # type: ignore[arg-type]
    return State(discussion=d, personas=[*FIXED, ANA, BO], turns=list(turns), humans=humans or [])


def plan(phase: Phase, persona: str = "e1", round: int = 1, step: int = 5, reply_to: int | None = None) -> TurnPlan:
    return TurnPlan(key=f"d:r{round}:s{step}:{persona}", round=round, step=step, phase=phase, persona_key=persona,
                    reply_to=reply_to)


OPTIONS = {OPENS: True, "listed": [{"id": "O1", "label": "Rewrite in stages"}, {"id": "O2", "label": "Keep it"}]}


# The instruction


def test_a_statement_is_the_personas_brief_its_step_its_task_its_language_and_its_stance_line() -> None:
    s = state()
    prompt = prompts.build(s, plan(Phase.STATEMENT))
    text = prompt.instruction
    assert text.startswith(prompts.brief(ANA) + "\n\nYour turn (Initial statement). ")
    assert "\nWrite in the language the topic is written in.\n" in text
    assert f"\n{stances.LINE_INSTRUCTION}" in text
    assert text.endswith("\nNo options are on the table yet: your stance label is for, against or undecided (or "
                         "`new: …`).")
    assert prompt.max_tokens == 1500 and prompt.tier == "medium"


def test_a_stance_is_asked_against_the_options_on_the_table_each_quoted_by_its_id() -> None:
    s = state(turn(1, "The question.", persona="moderator", phase=Phase.OPENING, data=OPTIONS))
    assert prompts.build(s, plan(Phase.STATEMENT)).instruction.endswith(
        "\nThe options on the table (name the one you support by its id):\n- O1: <option>\nRewrite in stages\n"
        "</option>\n- O2: <option>\nKeep it\n</option>")


def test_a_synthesis_whose_answer_has_a_label_is_told_the_options_and_one_without_is_not() -> None:
    s = state(turn(1, "The question.", persona="moderator", phase=Phase.OPENING, data=OPTIONS))
    synthesis = prompts.build(s, plan(Phase.ROUND_SYNTHESIS, "moderator"))
    assert "The options on the table" not in synthesis.instruction  # its proposals are not a stance
    assert stances.LINE_INSTRUCTION not in synthesis.instruction
    meeting = state(turn(1, "The question.", persona="moderator", phase=Phase.OPENING, data=OPTIONS), flow="meeting")
    meeting.personas.append(Persona(key="o1", name="Oda", role=Role.OWNER, title="Owner"))
    vote = prompts.build(meeting, plan(Phase.RANKED_VOTE, "o1")).instruction  # no stance line: a ranking's label
    assert "\nThe options on the table (name the one you support by its id):\n- O1: " in vote
    assert stances.LINE_INSTRUCTION not in vote


def test_an_answer_with_a_schema_has_room_for_it_and_a_plain_one_less() -> None:
    s = state()
    assert prompts.build(s, plan(Phase.ROUND_SYNTHESIS, "moderator")).max_tokens == 4096
    assert prompts.build(s, plan(Phase.QUESTION, "moderator")).max_tokens == 4096
    assert prompts.build(s, plan(Phase.COUNTERPOINT, "e1")).max_tokens == 1500


def test_the_language_asked_for_is_named_and_cut_to_thirty_characters() -> None:
    asked = prompts.build(state(options=FlowOptions(lang="German")), plan(Phase.STATEMENT)).instruction
    assert ("\nWrite in German (the team asked for it), whatever language the topic or replies use." in asked)
    long = "L" * 40
    cut = prompts.language(state(options=FlowOptions(lang=long)))
    assert cut == f"Write in {'L' * 29}… (the team asked for it), whatever language the topic or replies use."


def test_only_an_answer_in_the_last_round_says_no_round_follows() -> None:
    line = "\nThis is the discussion's last round: no further round follows, so promise none."
    last = state(pending="final")
    answer = prompts.build(last, plan(Phase.ANSWER, "moderator"))
    assert answer.instruction.endswith(line) and answer.purpose.last_round is True
    statement = prompts.build(last, plan(Phase.STATEMENT))
    assert line not in statement.instruction and statement.purpose.last_round is False
    early = prompts.build(state(), plan(Phase.ANSWER, "moderator"))
    assert line not in early.instruction and early.purpose.last_round is False


def review(round: int, reviewer: str, ranking: list[str]) -> Turn:
    return turn(4, "", persona=reviewer, phase=Phase.PEER_REVIEW, round=round, data={"ranking": ranking})


def test_a_rounds_synthesis_reads_its_rounds_peer_review_and_the_final_one_every_rounds() -> None:
    reviews = [review(1, "e1", ["e2"]), review(1, "e2", ["e1"]), review(2, "e1", ["e2"]), review(2, "e2", ["e2", "e1"])]
    s = state(*reviews, round=2)
    second = prompts.build(s, plan(Phase.ROUND_SYNTHESIS, "moderator", round=2)).instruction
    assert "\nRound 2: " in second and "\nRound 1: " not in second
    first = prompts.build(s, plan(Phase.ROUND_SYNTHESIS, "moderator", round=1)).instruction
    assert "\nRound 1: " in first and "\nRound 2: " not in first
    final = prompts.build(s, plan(Phase.FINAL_SYNTHESIS, "moderator", round=2)).instruction
    assert "\nRound 1: " in final and "\nRound 2: " in final
    assert "ranked each other" not in prompts.build(s, plan(Phase.REBUTTAL, round=2)).instruction


# Tier, model and what the prompt is for


def test_a_call_off_the_shared_tier_caches_nothing_and_one_on_it_caches_its_prefix() -> None:
    s = state(turn(1, "Stage it."))
    light = prompts.build(s, plan(Phase.QUESTION, "moderator"))
    assert light.tier == "light"
    assert all(b.cache is False for b in (*light.system, *light.shared))
    medium = prompts.build(s, plan(Phase.REBUTTAL))
    assert medium.system[0].cache is True and medium.shared[-1].cache is True


def test_the_model_is_the_personas_own_else_its_tiers() -> None:
    routes = ModelRoutes(tiers={"light": "anthropic:small", "medium": "anthropic:mid"}, personas={"bo": "openai:x"})
    s = state(options=FlowOptions(models=routes))
    assert prompts.build(s, plan(Phase.QUESTION, "moderator")).model == "anthropic:small"
    assert prompts.build(s, plan(Phase.STATEMENT, "e1")).model == "anthropic:mid"
    assert prompts.build(s, plan(Phase.STATEMENT, "e2")).model == "openai:x"


def test_the_purpose_names_the_speaker_the_round_its_topic_and_the_others() -> None:
    s = state(round=2, round_topic="Billing in stages?")
    purpose = prompts.build(s, plan(Phase.REBUTTAL, "e2", round=2)).purpose
    assert (purpose.phase, purpose.persona, purpose.role, purpose.round) == (Phase.REBUTTAL, "Bo", "expert", 2)
    assert purpose.topic == "Billing in stages?"
    assert purpose.others == [p.name for p in [*FIXED, ANA]]
    assert prompts.build(state(), plan(Phase.REBUTTAL)).purpose.topic == "Should we rewrite billing?"


def test_the_people_are_listed_by_name_with_the_one_answered_last() -> None:
    people = [human(1, "Zoe", "a", 1), human(2, "Abe", "b", 2), human(3, "Mia", "c", 3), human(4, "Abe", "d", 4)]
    s = state(humans=people)
    assert prompts.build(s, plan(Phase.STATEMENT)).purpose.humans == ["Abe", "Mia", "Zoe"]
    answer = prompts.build(s, plan(Phase.ANSWER, "moderator", reply_to=1)).purpose
    assert answer.humans == ["Abe", "Mia", "Zoe"]
    assert prompts.build(s, plan(Phase.ANSWER, "moderator", reply_to=2)).purpose.humans == ["Mia", "Zoe", "Abe"]


# The transcript


def test_a_steps_turns_read_a_transcript_built_once_and_the_closing_its_own() -> None:
    s = state(turn(1, "Stage it."))
    built: dict[bool, list[Block]] = {False: [Block(text="already built")]}
    assert [b.text for b in prompts.build(s, plan(Phase.REBUTTAL), built).shared] == ["already built"]
    closing = prompts.build(s, plan(Phase.FINAL_SYNTHESIS, "moderator"), built)
    assert built[True] == prompts.transcript_blocks(s, final=True)
    assert [b.text for b in closing.shared] == [b.text for b in built[True]]


def synthesis(r: int) -> Turn:
    return turn(9, f"Round {r} agreed on stage {r}.", persona="moderator", phase=Phase.ROUND_SYNTHESIS, round=r,
                data={"summary": f"Summary of round {r}."})


def test_a_closing_reads_the_older_syntheses_that_a_round_leaves_out() -> None:
    s = state(*(synthesis(r) for r in range(1, 6)), round=7)
    round_text = "\n".join(b.text for b in prompts.build(s, plan(Phase.REBUTTAL, round=7)).shared)
    closing_text = "\n".join(b.text for b in prompts.build(s, plan(Phase.FINAL_SYNTHESIS, "moderator", round=7)).shared)
    assert "stage 1." not in round_text and "stage 3." in round_text
    assert "stage 1." in closing_text


def test_condensed_rounds_are_their_syntheses_in_order_in_one_block() -> None:
    s = state(*(synthesis(r) for r in range(1, 4)), turn(1, "Now.", round=6), round=6)
    blocks = prompts.transcript_blocks(s)
    [condensed] = [b.text for b in blocks if b.text.startswith("Earlier rounds")]
    assert condensed == ("Earlier rounds, as their syntheses (the most recent last):\n\n"
                         "[Round 1 · Round synthesis] Moderator:\nRound 1 agreed on stage 1.\n\n"
                         "[Round 2 · Round synthesis] Moderator:\nRound 2 agreed on stage 2.\n\n"
                         "[Round 3 · Round synthesis] Moderator:\nRound 3 agreed on stage 3.")
    assert blocks[-1].text == "[Round 6 · Initial statement] Ana:\nNow." and blocks[-1].cache is True
    assert [b.cache for b in blocks[:-1]] == [False] * (len(blocks) - 1)


def test_a_closing_outlines_the_oldest_rounds_by_their_summaries_one_line_each() -> None:
    many = [synthesis(r) for r in range(1, 15)]
    many[0] = many[0].model_copy(update={"data": {"summary": "S" * 500}})
    many[1] = many[1].model_copy(update={"data": None})
    blocks = prompts.transcript_blocks(state(*many, round=16), final=True)
    [outline] = [b.text for b in blocks if b.text.startswith("The oldest rounds")]
    assert outline == ("The oldest rounds, one line each (their summaries):\n"
                       f"[Round 1] {'S' * 399}…\n[Round 2] ")
    assert not [b for b in prompts.transcript_blocks(state(*many, round=16)) if b.text.startswith("The oldest")]


def test_a_steps_turns_are_one_block_and_peoples_messages_fall_between_steps_in_time_order() -> None:
    s = state(turn(1, "Ana first.", minutes=10), turn(1, "Bo first.", persona="e2", minutes=12),
              turn(2, "Ana again.", phase=Phase.REBUTTAL, minutes=30),
              humans=[human(1, "Zoe", "Between the steps.", 20), human(2, "Abe", "Before anything.", 5)])
    assert [b.text for b in prompts.transcript_blocks(s)[1:]] == [
        '<human name="Abe">\nBefore anything.\n</human>',
        "[Round 1 · Initial statement] Ana:\nAna first.\n\n[Round 1 · Initial statement] Bo:\nBo first.",
        '<human name="Zoe">\nBetween the steps.\n</human>',
        "[Round 1 · Rebuttal] Ana:\nAna again."]


def test_bookkeeping_turns_stay_out_of_the_transcript() -> None:
    s = state(turn(1, "roster", persona="moderator", phase=Phase.ROSTER), turn(2, "Said.", minutes=200),
              review(1, "e2", ["e1"]))
    assert [b.text for b in prompts.transcript_blocks(s)[1:]] == ["[Round 1 · Initial statement] Ana:\nSaid."]


def test_a_team_record_recalled_at_the_start_is_read_after_the_topic() -> None:
    record = Decision(discussion_id="old", platform="slack", topic="Rewrite payroll?", flow="moderated",
                      decided="Rewrite in stages.", decided_at=T0)
    [head] = [b.text for b in prompts.transcript_blocks(state(options=FlowOptions(recalled=[record])))][:1]
    assert head.startswith("The topic the team gave:\n<topic>\nShould we rewrite billing?\n</topic>")
    assert "\n\nEarlier decisions of this team on related topics" in head and "Rewrite payroll?" in head


def test_a_long_transcript_condenses_its_oldest_turns_first_until_it_fits() -> None:
    long = "word " * 60
    turns = [turn(1, long + "one"), turn(2, long + "two", data={"label": "O1", "stance": "for staging"}),
             turn(3, "three")]
    first, second = f"(condensed) {long[:199]}…", "(condensed) O1: for staging"
    assert [t.text for t in prompts.within_budget(turns, 520)] == [first, long + "two", "three"]  # 212 + 303 + 5
    assert [t.text for t in prompts.within_budget(turns, 519)] == [first, second, "three"]
    assert prompts.within_budget(turns, None) == turns


def test_a_transcript_just_within_its_budget_is_kept_whole() -> None:
    turns = [turn(1, "a" * 300), turn(2, "b" * 50)]
    assert prompts.within_budget(turns, 350) == turns
    cut = prompts.within_budget(turns, 349)
    assert cut[0].text == "(condensed) " + "a" * 199 + "…" and cut[1].text == "b" * 50


def test_a_turn_shorter_than_its_condensed_form_is_kept_as_it_is() -> None:
    turns = [turn(1, "a" * 50), turn(2, "b" * 300)]
    assert [t.text for t in prompts.within_budget(turns, 100)] == ["a" * 50, "(condensed) " + "b" * 199 + "…"]


def test_a_condensed_stance_without_a_label_still_reads_as_its_stance() -> None:
    turns = [turn(1, "x" * 300, data={"stance": "staging first"}), turn(2, "y")]
    assert prompts.within_budget(turns, 10)[0].text == "(condensed) : staging first"
