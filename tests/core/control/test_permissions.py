"""Who may do what, through the real service: each action × starter / member / admin / admin of another workspace,
and a discussion named by id from elsewhere is not there at all."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.control.guard import NO_POLL, not_found
from core.control.permissions import Refused
from core.control.replies import UserError
from core.models import NextAction
from tests.core.conftest import settle
from tests.fakes.chat import RecordingChat
from tests.fakes.llm import ScriptedLLM

WS = {"platform": "console", "workspace": "T1"}
ACTORS: dict[str, dict[str, Any]] = {
    "starter": {**WS, "user_id": "U1", "user_name": "Dana", "in_channel": "C1"},
    "member": {**WS, "user_id": "U2", "user_name": "Sam", "in_channel": "C1"},
    "admin": {**WS, "user_id": "U3", "user_name": "Ana", "in_channel": "C9", "is_admin": True},  # from elsewhere
    "named admin": {**WS, "user_id": "U4", "user_name": "Kim", "in_channel": "C1", "groups": ["S0ADMINS"]},
    "other workspace's admin": {"platform": "console", "workspace": "T2", "user_id": "U5", "in_channel": "C1",
                                "is_admin": True},
    "member in another channel": {**WS, "user_id": "U2", "user_name": "Sam", "in_channel": "C2"},
}
SEES = {"starter", "member", "admin", "named admin"}
MODERATES = {"starter", "admin", "named admin"}


@pytest.fixture
async def app(tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM) -> AsyncIterator[App]:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                        council_admins="S0ADMINS, U9")
    application = await build_app(settings, {"console": chat}, llm=llm)
    yield application
    await application.close()


async def waiting_discussion(app: App) -> tuple[str, int]:
    """A discussion in T1/C1 whose first round ended: waiting for a choice, with an open poll."""
    reply = await app.service.handle(c.StartDiscussion(topic="Trunk-based development?", channel="C1",
                                                       **ACTORS["starter"]))
    await settle(app)
    async with app.store.tx() as tx:
        (poll,) = await tx.polls(reply.discussion_id)
    return reply.discussion_id, poll.id


Act = Callable[[App, str, int, dict[str, Any]], Awaitable[object]]


def command(make: Callable[..., c.Command], **fields: Any) -> Act:
    async def run(app: App, did: str, poll: int, who: dict[str, Any]) -> object:
        ids = {"poll_id": poll} if "poll_id" in make.model_fields else {"discussion_id": did}  # type: ignore[attr-defined]
        return await app.service.handle(make(**ids, **fields, **who))
    return run


async def status(app: App, did: str, poll: int, who: dict[str, Any]) -> object:
    return await app.service.guard.status_text(did, c.Command(**who))


EVERYONE: dict[str, Act] = {
    "reply": command(c.PostHumanMessage, text="What about release trains?"),
    "vote": command(c.CastBallot, choice=0),
    "status": status,
    "another round": command(c.ChooseNextAction, action=NextAction.ANOTHER_ROUND),
}
MODERATORS: dict[str, Act] = {
    "close a poll": command(c.ClosePoll),
    "edit the roster": command(c.ModifyRoster, persona_key="moderator", name="Mod"),
    "add an expert": command(c.AddExpert, name="Ada", title="Analyst"),
    "retry": command(c.RetryTurns),
    "skip": command(c.SkipTurns),
    "schedule a round": command(c.ScheduleRound, when="tomorrow 09:00"),
    "cancel rounds": command(c.ScheduleRound, when="off"),
    "pause": command(c.Pause),
    "resume": command(c.Resume),
    "synthesize": command(c.Synthesize),
    "synthesize (button)": command(c.ChooseNextAction, action=NextAction.SYNTHESIZE),
    "stop": command(c.Stop),
}


async def outcome(act: Act, app: App, did: str, poll: int, who: dict[str, Any]) -> str:
    """"refused", "not found", or "allowed" (which includes a state error: the check came first and passed)."""
    try:
        await act(app, did, poll, who)
    except Refused:
        return "refused"
    except UserError as exc:
        return "not found" if str(exc) in (str(not_found(did)), NO_POLL) else "allowed"
    return "allowed"


async def test_the_permission_matrix(app: App, chat: RecordingChat) -> None:
    did, poll = await waiting_discussion(app)

    # Everyone who may not: nothing changes, not a single post, and the same words as for an unknown id.
    async with app.store.tx() as tx:
        before = await tx.discussion(did)
    posts_before = len(chat.posts(did))
    for name, act in {**EVERYONE, **MODERATORS}.items():
        for actor, who in ACTORS.items():
            allowed = MODERATES if name in MODERATORS else SEES
            if actor in allowed:
                continue
            expected = "not found" if actor not in SEES else "refused"
            assert await outcome(act, app, did, poll, who) == expected, (name, actor)
    await settle(app)
    async with app.store.tx() as tx:
        assert await tx.discussion(did) == before
        ballots = await tx.ballots(poll)
    assert len(chat.posts(did)) == posts_before and [b for b in ballots if not b.is_ai] == []

    # Everyone who may: the permission check passes (what follows may still be a state error, e.g. "not paused").
    for name, act in {**EVERYONE, **MODERATORS}.items():
        for actor in sorted(MODERATES if name in MODERATORS else SEES):
            assert await outcome(act, app, did, poll, ACTORS[actor]) == "allowed", (name, actor)
            await settle(app)


async def test_a_refusal_says_who_may_and_a_foreign_admin_learns_nothing(app: App) -> None:
    did, _ = await waiting_discussion(app)
    with pytest.raises(Refused, match="Only Dana or a workspace admin can stop this discussion"):
        await app.service.handle(c.Stop(discussion_id=did, **ACTORS["member"]))
    for who in (ACTORS["other workspace's admin"], ACTORS["member in another channel"]):
        with pytest.raises(UserError) as refused:
            await app.service.guard.status_text(did, c.Command(**who))
        assert str(refused.value) == str(not_found(did)) and "Trunk" not in str(refused.value)
        assert await app.service.guard.discussions(c.Command(**who)) == []
    assert [d.id for d in await app.service.guard.discussions(c.Command(**ACTORS["member"]))] == [did]


async def test_a_click_from_a_direct_message_finds_the_discussion_named_for_its_starter_alone(app: App) -> None:
    """A private notice's buttons (Retry, Stop) are clicked in a direct message: Slack sends the DM's channel and
    Discord no guild at all. The discussion named in the button decides; nobody but its starter finds it."""
    did, _ = await waiting_discussion(app)
    dm = {"in_channel": "D042", "in_dm": True}
    slack_dm = {**ACTORS["starter"], **dm}
    discord_dm = {**ACTORS["starter"], **dm, "workspace": ""}
    assert await outcome(command(c.Pause), app, did, 0, slack_dm) == "allowed"
    assert await outcome(command(c.Resume), app, did, 0, discord_dm) == "allowed"
    for who in ({**ACTORS["member"], **dm}, {**ACTORS["admin"], **dm}, {**ACTORS["starter"], **dm, "workspace": "T2"},
                {**ACTORS["starter"], **dm, "platform": "slack"}, {**dm, "workspace": "T1"}):
        assert await outcome(command(c.Stop), app, did, 0, who) == "not found", who
    # Without the flag, the same click from the DM's channel is a click from elsewhere.
    assert await outcome(command(c.Stop), app, did, 0, {**ACTORS["member"], "in_channel": "D042"}) == "not found"


async def test_the_workspace_can_keep_steering_for_moderators(tmp_path: Path, chat: RecordingChat,
                                                              llm: ScriptedLLM) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'c.db'}",  # type: ignore[call-arg]
                        council_members_steer=False)
    app = await build_app(settings, {"console": chat}, llm=llm)
    try:
        did, poll = await waiting_discussion(app)
        steer = command(c.ChooseNextAction, action=NextAction.DEEP_DIVE, topic="release trains")
        assert await outcome(steer, app, did, poll, ACTORS["member"]) == "refused"
        assert await outcome(EVERYONE["vote"], app, did, poll, ACTORS["member"]) == "allowed"
        assert await outcome(steer, app, did, poll, ACTORS["starter"]) == "allowed"
        await settle(app)
    finally:
        await app.close()


async def test_digests_here_for_members_elsewhere_for_admins_cancelled_by_their_setter(app: App) -> None:
    def digest(who: str, channel: str, cadence: str = "daily") -> c.SetDigest:
        return c.SetDigest(channel=channel, cadence=cadence, **ACTORS[who])  # type: ignore[arg-type]

    await app.service.handle(digest("member", "C1"))
    with pytest.raises(Refused, match="channel you are in"):
        await app.service.handle(digest("member", "C7"))
    await app.service.handle(digest("admin", "C7"))
    with pytest.raises(Refused, match="person who set this digest"):
        await app.service.handle(digest("starter", "C1", "off"))
    assert (await app.service.handle(digest("member", "C1", "off"))).text == "Digest turned off."
    await app.service.handle(digest("member", "C1"))
    assert (await app.service.handle(digest("named admin", "C1", "off"))).text == "Digest turned off."


async def test_usage_is_for_admins(app: App, llm: ScriptedLLM, chat: RecordingChat) -> None:
    llm.cost_per_call = 0.01
    did, _ = await waiting_discussion(app)
    [choice] = [p for p in chat.posts(did) if p.kind == "choice"]
    assert "Spent so far: $0.13 of its $5.00 budget" in choice.text  # 13 calls in round 1
    with pytest.raises(Refused, match="Only workspace admins"):
        await app.service.guard.usage_text(c.Command(**ACTORS["member"]))
    text = await app.service.guard.usage_text(c.Command(**ACTORS["admin"]))
    assert "$0.13 today of $10.00" in text and "Trunk-based development? — $0.13" in text
    foreign = await app.service.guard.usage_text(c.Command(**ACTORS["other workspace's admin"]))
    assert "$0.00 today" in foreign and "Trunk" not in foreign
