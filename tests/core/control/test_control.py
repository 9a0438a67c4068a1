"""Steering and faults: pause/resume, permissions, votes, LLM failures, a chat that refuses posts, budgets."""

from __future__ import annotations

import asyncio

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control.service import UserError
from core.models import NextAction, Phase, Status, TurnStatus
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM


async def test_pause_writes_a_resume_summary_and_resume_reopens_with_the_moderator(
    app: App, chat: RecordingChat
) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    did = reply.discussion_id
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=did, action=NextAction.PAUSE, user_id="U1",
                                                user_name="Dana"))
    await settle(app)
    assert (await discussion(app, did)).status == Status.PAUSED
    async with app.store.tx() as tx:
        summaries = [s for s in await tx.syntheses(did) if s["kind"] == "resume"]
    assert len(summaries) == 1 and 1000 <= len(summaries[0]["text"]) <= 2000

    await app.service.handle(c.Resume(**C1, discussion_id=did, user_id="U7", user_name="Lee", is_admin=True))
    await settle(app)
    d = await discussion(app, did)
    assert d.status == Status.WAITING and d.resume_count == 1
    reopening = [p for p in chat.posts(did) if p.title.endswith("Reopening")]
    assert len(reopening) == 1 and reopening[0].persona is not None and reopening[0].persona.key == "moderator"
    assert chat.posts(did)[-1].kind == "choice"


async def test_only_the_starter_or_an_admin_may_pause_or_stop(app: App) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    with pytest.raises(UserError, match="Only Dana or a workspace admin"):
        await app.service.handle(c.Stop(**C1, discussion_id=reply.discussion_id, user_id="U9", user_name="Mallory"))
    await app.service.handle(c.Stop(**C1, discussion_id=reply.discussion_id, user_id="U9", is_admin=True))
    await settle(app)
    assert (await discussion(app, reply.discussion_id)).status == Status.STOPPED


async def test_a_second_click_on_next_actions_is_told_it_was_already_chosen(app: App) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    choose = c.ChooseNextAction(**C1, discussion_id=reply.discussion_id, action=NextAction.SYNTHESIZE, user_id="U2",
                                is_admin=True)
    await app.service.handle(choose)
    with pytest.raises(UserError, match="already chosen"):
        await app.service.handle(choose)
    await settle(app)


async def test_a_choice_offered_after_an_earlier_round_is_refused_once_a_later_round_waits(
    app: App, chat: RecordingChat
) -> None:
    """The buttons of round 1's choice stay on their message: pressed after round 2 has ended, they must not
    choose round 2's next step for everyone."""
    reply = await app.service.handle(start())
    await settle(app)
    did = reply.discussion_id
    [first] = [p for p in chat.posts(did) if p.kind == "choice"]
    another = next(a for a in first.actions if a.id == f"next:{NextAction.ANOTHER_ROUND.value}")
    assert another.value == f"{did}|{NextAction.ANOTHER_ROUND.value}|1", "the button names the round it follows"
    pressed = c.ChooseNextAction(**C1, discussion_id=did, action=NextAction.ANOTHER_ROUND, after_round=1,
                                 user_id="U1", user_name="Dana")
    await app.service.handle(pressed)
    await settle(app)
    d = await discussion(app, did)
    assert (d.status, d.round) == (Status.WAITING, 2)
    with pytest.raises(UserError, match="already chosen"):
        await app.service.handle(pressed.model_copy(update={"user_id": "U7", "user_name": "Lee"}))
    assert (await discussion(app, did)).round == 2
    # The newer choice's own button still works.
    await app.service.handle(pressed.model_copy(update={"after_round": 2}))
    await settle(app)
    assert (await discussion(app, did)).round == 3


async def test_one_ballot_per_person_changeable_with_counts_edited_in_place(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    async with app.store.tx() as tx:
        (poll,) = await tx.polls(reply.discussion_id)
    assert poll.message_ref
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=0, user_id="U2", user_name="Sam"))
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=1, user_id="U2", user_name="Sam"))
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=1, user_id="U3", user_name="Ana"))
    await settle(app)  # the tally goes out through the outbox
    view = chat.by_ref[poll.message_ref].updates[-1].poll
    # The poll offers the question's whole list (its two answers, then the synthesis's proposals).
    assert view is not None and view.counts == [0, 2, 0, 0] and view.voters == [[], ["Sam", "Ana"], [], []]
    with pytest.raises(UserError, match="not on this poll"):
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=7, user_id="U2"))


async def test_hidden_results_and_anonymous_ballots(app: App, chat: RecordingChat) -> None:
    # Two rounds: a persona votes on the final poll when its own round-2 stance names one of its options by id
    # (in round 1 no option had an id yet); the final poll stays open after the end.
    reply = await app.service.handle(start(anonymous=True, hide_results=True, rounds=2))
    await settle(app)
    async with app.store.tx() as tx:
        poll = next(p for p in await tx.polls(reply.discussion_id) if p.final)
    await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=0, user_id="U2", user_name="Sam"))
    await settle(app)
    open_view = chat.by_ref[poll.message_ref].updates[-1].poll
    assert open_view is not None and open_view.counts is None and open_view.total == 1
    await app.service.handle(c.ClosePoll(**C1, poll_id=poll.id, user_id="U1"))
    await settle(app)
    closed = chat.by_ref[poll.message_ref].updates[-1].poll
    assert closed is not None and closed.closed and closed.counts is not None and closed.counts[0] >= 1
    assert closed.voters is None
    assert any(closed.ai_positions), "the closing post shows the personas' own positions"


async def test_a_failing_expert_is_tried_once_more_then_skipped_with_a_visible_note(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    llm.fail("Amara Okafor", Phase.STATEMENT, times=2)  # the nudge fails too
    llm.fail("Kenji Watanabe", Phase.STATEMENT, times=1)  # the nudge lands
    reply = await app.service.handle(start(rounds=1))
    await settle(app)
    did = reply.discussion_id
    assert (await discussion(app, did)).status == Status.DONE
    notices = [p.text for p in chat.posts(did) if p.kind == "notice"]
    assert [n for n in notices if "skipped" in n] == [
        "⚠️ Amara Okafor could not respond (Anthropic API overloaded (529)) and is skipped this turn."]
    assert sum("nudging them once more" in n for n in notices) == 2
    async with app.store.tx() as tx:
        turns = {t.persona_key: t.status for t in await tx.turns(did) if t.phase == Phase.STATEMENT}
    assert sorted(turns.values()).count(TurnStatus.SKIPPED) == 1, turns
    assert sum(s == TurnStatus.PUBLISHED for s in turns.values()) == len(turns) - 1, "the retried turn landed"


async def test_an_essential_failure_blocks_with_retry_skip_stop_and_retry_recovers(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    llm.fail("Moderator", Phase.OPENING, times=1)
    reply = await app.service.handle(start(rounds=1))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.BLOCKED and "overloaded" in d.blocked_reason
    error = chat.posts(d.id)[-1]
    assert error.kind == "error" and [a.label for a in error.actions] == ["Retry", "Skip", "Stop"]
    with pytest.raises(UserError, match="can't be skipped"):
        await app.service.handle(c.SkipTurns(**C1, discussion_id=d.id, user_id="U1"))
    await app.service.handle(c.RetryTurns(**C1, discussion_id=d.id, user_id="U1", user_name="Dana"))
    await settle(app)
    assert (await discussion(app, d.id)).status == Status.DONE
    # Once it is no longer blocked, a late Retry or Skip (a button left in the thread) changes nothing.
    for late, doing in ((c.RetryTurns, "retry"), (c.SkipTurns, "skip")):
        with pytest.raises(UserError, match=f"^Nothing to {doing}: the discussion is not blocked.$"):
            await app.service.handle(late(**C1, discussion_id=d.id, user_id="U1"))
    assert (await discussion(app, d.id)).status == Status.DONE


async def test_the_budget_stops_a_discussion_and_says_so(app: App, chat: RecordingChat, llm: ScriptedLLM) -> None:
    llm.cost_per_call = 1.0  # five dollars buys five calls
    reply = await app.service.handle(start(rounds=3))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.STOPPED and "budget reached" in d.blocked_reason
    assert chat.posts(d.id)[-1].text.startswith("The discussion stopped: its budget reached")
    async with app.store.tx() as tx:
        assert all(t.status != TurnStatus.RUNNING for t in await tx.turns(d.id))


async def test_confirm_shows_the_roster_which_can_be_modified_before_starting(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start(confirm=True, experts=3))
    await settle(app)
    did = reply.discussion_id
    d = await discussion(app, did)
    assert d.status == Status.AWAITING_CONFIRMATION
    # A message before the start is heard once it starts: it has not started, so nothing "resumes".
    noted = await app.service.handle(c.PostHumanMessage(**C1, discussion_id=did, text="Keep it short, please.",
                                                        event_id="Ev9", user_id="U7", user_name="Rosa"))
    assert noted.text == "Noted: the council will hear this once it starts.", noted.text
    confirm = chat.posts(did)[-1]
    assert [a.id for a in confirm.actions] == ["roster:start", "roster:modify"] and len(confirm.roster) == 7
    expert = confirm.roster[1]
    await app.service.handle(c.ModifyRoster(**C1, discussion_id=did, persona_key=expert.key, name="Grace Hopper",
                                            title="Compiler pioneer", user_id="U1"))
    await app.service.handle(c.AddExpert(**C1, discussion_id=did, name="Ada Lovelace", title="Analyst", user_id="U1"))
    with pytest.raises(UserError, match="at least two experts"):
        await app.service.handle(c.ModifyRoster(**C1, user_id="U1", discussion_id=did, persona_key="moderator",
                                                remove=True))
    await app.service.handle(c.ConfirmRoster(**C1, discussion_id=did, user_id="U2", is_admin=True, user_name="Sam"))
    await settle(app)
    async with app.store.tx() as tx:
        names = [p.name for p in await tx.personas(did)]
        statements = [t for t in await tx.turns(did) if t.phase == Phase.STATEMENT]
    assert "Grace Hopper" in names and "Ada Lovelace" in names and len(statements) == 4
    assert (await discussion(app, did)).status == Status.WAITING
    header = chat.by_key[f"{did}:header"].updates[-1]
    assert any(p.name == "Ada Lovelace" for p in header.roster)


async def test_synthesize_mid_round_writes_the_final_synthesis_after_the_current_step(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    asked: list[str] = []

    async def synthesize() -> None:  # pressed while the model writes the round's first opening statement
        await app.service.handle(c.Synthesize(**C1, discussion_id=asked[0], user_id="U2", is_admin=True,
                                              user_name="Sam"))

    llm.on_phase[Phase.OPENING] = synthesize
    reply = await app.service.handle(start())
    asked.append(reply.discussion_id)
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE and Phase.OPENING not in llm.on_phase, "the button was pressed mid-step"
    async with app.store.tx() as tx:
        turns = await tx.turns(d.id)
    openings = [t for t in turns if t.phase == Phase.OPENING]
    # The step under way (every opening statement) is finished, then the final synthesis, and nothing else.
    assert openings and all(t.status == TurnStatus.PUBLISHED for t in openings)
    assert [t.phase for t in turns][-1] == Phase.FINAL_SYNTHESIS
    assert {t.phase for t in turns} == {Phase.ROSTER, Phase.OPENING, Phase.FINAL_SYNTHESIS}
    assert not any("nothing to synthesise" in p.text for p in chat.posts(d.id))
    with pytest.raises(UserError, match="can't be synthesized now"):
        await app.service.handle(c.Synthesize(**C1, discussion_id=d.id, user_id="U2", is_admin=True))


async def test_synthesize_before_any_statement_writes_no_synthesis_of_nothing(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start())
    await app.service.handle(c.Synthesize(**C1, discussion_id=reply.discussion_id, user_id="U2", is_admin=True,
                                          user_name="Sam"))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE
    async with app.store.tx() as tx:
        phases = [t.phase for t in await tx.turns(d.id)]
    assert Phase.OPENING not in phases and Phase.FINAL_SYNTHESIS not in phases
    assert any("nothing to synthesise" in p.text for p in chat.posts(d.id))


async def test_a_vote_racing_the_close_never_brings_the_buttons_back(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    async with app.store.tx() as tx:
        (poll,) = await tx.polls(reply.discussion_id)
    # Votes and the close arrive together (two people, two clicks): nothing is settled in between.
    await asyncio.gather(
        app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=0, user_id="U2", user_name="Sam")),
        app.service.handle(c.ClosePoll(**C1, poll_id=poll.id, user_id="U1")),
        app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=1, user_id="U3", user_name="Ana")),
        return_exceptions=True,
    )
    await settle(app)
    edits = chat.by_ref[poll.message_ref].updates
    closed_at = next(i for i, post in enumerate(edits) if post.poll is not None and post.poll.closed)
    assert all(not post.actions for post in edits[closed_at:]), "after its closing the poll never has buttons"


async def test_every_command_reaches_its_handler_through_the_service_table(app: App) -> None:
    """The table in Service names a handler for each command class; a command outside it is a programming error."""
    commands = {cls for cls in vars(c).values()
                if isinstance(cls, type) and issubclass(cls, c.Command) and cls is not c.Command}
    assert set(app.service.handlers) == commands
    # Each handler is a method of the service or of a family it holds (one table, however many families).
    held = [app.service, *vars(app.service).values()]
    assert all(any(h.__self__ is x for x in held) for h in app.service.handlers.values())  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="no handler for Command"):
        await app.service.handle(c.Command(**C1))


async def test_a_different_topic_opens_a_new_question_whose_options_replace_the_old(app: App) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    did = reply.discussion_id
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=did, action=NextAction.DIFFERENT_TOPIC,
                                                topic="Who pays for the pipeline?", after_round=1, user_id="U1",
                                                user_name="Dana"))
    await settle(app)
    async with app.store.tx() as tx:
        asked = [t.round for t in await tx.turns(did) if t.phase == Phase.QUESTION]
    assert asked == [2], "round 2 asks the new topic's question (round 1's options came with the roster)"
    assert (await discussion(app, did)).options.question_round == 2
