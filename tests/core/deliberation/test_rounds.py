"""Commands in, posts out: the moderated flow end to end through the service, with fakes at the ports."""

from __future__ import annotations

import pytest

from bot.wiring import App
from core.control import commands as c
from core.control.service import UserError
from core.models import NextAction, Phase, Role, Status, TurnStatus
from core.showing.export import export
from core.showing.filing import artifacts
from tests.core.conftest import C1, discussion, settle, start
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

ROUND_ORDER = [Phase.OPENING, Phase.STATEMENT, Phase.COUNTERPOINT, Phase.REBUTTAL, Phase.ANALOGY,
               Phase.ROUND_SYNTHESIS]


async def test_an_unattended_round_runs_every_phase_in_order_and_ends_in_a_synthesis(
    app: App, chat: RecordingChat
) -> None:
    reply = await app.service.handle(start(rounds=1))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE

    async with app.store.tx() as tx:
        personas = await tx.personas(d.id)
        turns = await tx.turns(d.id)
    roles = [p.role for p in personas]
    assert roles.count(Role.EXPERT) == 4 and len(personas) == 8
    round_turns = [t for t in turns if t.round == 1 and t.phase in ROUND_ORDER]
    phases = [t.phase for t in sorted(round_turns, key=lambda t: t.step)]
    assert phases == [Phase.OPENING] + [Phase.STATEMENT] * 4 + [Phase.COUNTERPOINT] + [Phase.REBUTTAL] * 4 + [
        Phase.ANALOGY, Phase.ROUND_SYNTHESIS]
    assert all(t.status == TurnStatus.PUBLISHED for t in turns)
    assert any(t.phase == Phase.FINAL_SYNTHESIS for t in turns)

    keys = chat.keys(d.id)
    assert keys[0] == f"{d.id}:header"
    assert len(keys) == len(set(keys)), "a post was published twice"
    posted_turns = [k for k in keys if k in {t.key for t in turns}]
    assert len(posted_turns) == len([t for t in turns if t.phase != Phase.ROSTER])
    # The header was edited in place with the generated roster.
    header = chat.by_key[f"{d.id}:header"]
    assert header.updates and len(header.updates[-1].roster) == 8
    assert all(p.offline for p in chat.posts(d.id) if p.kind in ("turn", "synthesis"))


async def test_experts_speak_in_parallel_and_later_turns_see_earlier_ones(app: App, llm: ScriptedLLM) -> None:
    reply = await app.service.handle(start(rounds=1, experts=3))
    await settle(app)
    statements = [p for p in llm.prompts if p.purpose.phase == Phase.STATEMENT]
    assert len(statements) == 3
    # Parallel statements share one transcript prefix: none of them sees another's statement.
    assert len({tuple(b.text for b in p.shared) for p in statements}) == 1
    counter = next(p for p in llm.prompts if p.purpose.phase == Phase.COUNTERPOINT)
    transcript = "\n".join(b.text for b in counter.shared)
    assert transcript.count("Initial statement]") == 3
    # Shared content first, persona instruction last, one cache breakpoint at the end of the shared part.
    assert counter.shared[-1].cache and counter.system[-1].cache
    assert '<persona name="Contrarian"' in counter.instruction
    assert all("only as them" not in b.text for b in counter.shared)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE


async def test_between_rounds_a_human_is_answered_and_the_next_round_hears_them(
    app: App, chat: RecordingChat, llm: ScriptedLLM
) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.WAITING
    choice = chat.posts(d.id)[-1]
    assert choice.kind == "choice" and {a.id for a in choice.actions} >= {f"next:{a.value}" for a in NextAction}

    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=d.id, text="What about our release cadence?",
                                                user_id="U2", user_name="Sam", event_id="Ev1"))
    await settle(app)
    answer = chat.posts(d.id)[-1]
    assert answer.persona is not None and answer.persona.role == Role.MODERATOR

    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=d.id, action=NextAction.ANOTHER_ROUND,
                                                user_id="U2", user_name="Sam"))
    await settle(app)
    d = await discussion(app, d.id)
    assert d.status == Status.WAITING and d.round == 2
    opening_2 = next(p for p in llm.prompts if p.purpose.phase == Phase.OPENING and p.purpose.round == 2)
    assert '<human name="Sam">' in "\n".join(b.text for b in opening_2.shared)
    assert "release cadence" not in "".join(b.text for b in opening_2.system), "human text in a system prompt"
    texts = [p.text for p in chat.posts(d.id)]
    assert any("Sam chose **Another round**" in t for t in texts)
    assert any(t.startswith("**Poll closed") for t in texts), "round 1's poll was not closed"


async def test_a_human_who_names_a_persona_is_answered_by_that_persona(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    async with app.store.tx() as tx:
        expert = next(p for p in await tx.personas(reply.discussion_id) if p.role == Role.EXPERT)
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=reply.discussion_id, user_id="U3", user_name="Ana",
                                                text=f"{expert.name}, how would you measure it?", event_id="E9"))
    await settle(app)
    last = chat.posts(reply.discussion_id)[-1]
    assert last.persona is not None and last.persona.key == expert.key


async def test_a_retried_event_is_recorded_once(app: App) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    msg = c.PostHumanMessage(**C1, discussion_id=reply.discussion_id, text="hi", user_id="U2", user_name="Sam",
                             event_id="Ev-dup")
    first, second = await app.service.handle(msg), await app.service.handle(msg)
    await settle(app)
    assert not first.duplicate and second.duplicate
    async with app.store.tx() as tx:
        assert len(await tx.human_messages(reply.discussion_id)) == 1


async def test_synthesize_ends_with_the_historians_final_synthesis_and_exports(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start())
    await settle(app)
    await app.service.handle(c.ChooseNextAction(**C1, discussion_id=reply.discussion_id, action=NextAction.SYNTHESIZE,
                                                user_id="U1", user_name="Dana"))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    assert d.status == Status.DONE
    final = [p for p in chat.posts(d.id) if p.title.endswith("Final synthesis")]
    assert len(final) == 1 and final[0].persona is not None and final[0].persona.role == Role.HISTORIAN
    doc = await export(app.store, d.id)
    assert doc is not None
    assert set(doc) >= {"discussion", "personas", "turns", "human_messages", "polls", "syntheses", "usage"}
    assert doc["discussion"]["created_by"] == "U1" and doc["discussion"]["flow"] == "moderated"
    assert {"round", "kind", "author", "text", "created_at"} <= set(doc["turns"][0])
    assert doc["polls"] and all(p["options"] for p in doc["polls"])
    files = artifacts(doc)
    assert files["synthesis.md"].startswith("# Synthesis:") and "## Recommendations" in files["synthesis.md"]
    assert "Who carries the cost?" in files["open-questions.md"]


@pytest.mark.parametrize("topic", ["", "   ", "x" * 4000])
async def test_bad_topics_get_a_friendly_error(app: App, topic: str) -> None:
    with pytest.raises(UserError) as err:
        await app.service.handle(start(topic))
    assert "topic" in str(err.value).lower()


async def test_unknown_ids_get_a_friendly_error(app: App) -> None:
    with pytest.raises(UserError, match="can't find a discussion"):
        await app.service.handle(c.Pause(**C1, discussion_id="nope", user_id="U1"))


@pytest.mark.parametrize("llm", [0.05], indirect=True)  # it writes for a while: live text shows meanwhile
async def test_persona_words_show_while_the_model_writes(app: App, chat: RecordingChat) -> None:
    reply = await app.service.handle(start(rounds=1, experts=2))
    await settle(app)
    d = await discussion(app, reply.discussion_id)
    posts = {s.post.key: s for s in chat.sent if s.post.persona is not None}
    streamed = {key for key, _, _ in chat.live}
    assert streamed and streamed <= set(posts), "live text belongs to persona turns that then post"
    for key, text, at in chat.live:
        final = posts[key]
        assert final.post.text.startswith(text.strip()), "live text is the start of the finished post"
        assert at <= final.at, "no live update lands after the finished post"
    # opening, two statements, counterpoint, two rebuttals, analogy: every free-text turn of the round
    assert d.status == Status.DONE and len(streamed) == 7
