"""Digests see every discussion that moved (a reply, a ballot, a turn, a change of state) and list those
waiting on people with how long they have waited; on an injected clock."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from bot.settings import Settings
from bot.wiring import App, build_app
from core.control import commands as c
from core.models import Phase, Post
from tests.core.conftest import C1, settle, start
from tests.core.control.test_schedules import BERLIN, app, clock, digest_schedule, fire, waiting
from tests.fakes.chat import RecordingChat
from tests.fakes.clock import FakeClock
from tests.fakes.llm import ScriptedLLM

__all__ = ["app", "clock"]  # the schedule tests' fixtures: the real app on a FakeClock


async def set_daily(app: App, channel: str = "C1") -> None:
    await app.service.handle(c.SetDigest(in_channel=channel, platform="console", channel=channel, cadence="daily",
                                         tz="Europe/Berlin", user_id="U1"))


async def digest_at(app: App, chat: RecordingChat, clock: FakeClock, moment: datetime, channel: str = "C1") -> Post:
    clock.set(moment)
    assert await fire(app, await digest_schedule(app, channel))
    return chat.announced[-1][3]


def discussions_section(post: Post) -> str:
    return post.text.split("**Discussions", 1)[1].split("\n\n", 1)[0] if "**Discussions" in post.text else ""


async def test_a_period_whose_only_activity_is_a_human_reply_names_that_discussion(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await set_daily(app)
    replied = (await app.service.handle(start(topic="Which CI provider?", rounds=1))).discussion_id
    quiet = (await app.service.handle(start(topic="Which issue tracker?", rounds=1))).discussion_id
    await settle(app)
    first = await digest_at(app, chat, clock, datetime(2026, 3, 2, 9, 0, 0, 300_000, tzinfo=BERLIN))
    assert "Which CI provider?" in discussions_section(first) and "Which issue tracker?" in first.text

    clock.set(datetime(2026, 3, 3, 8, 0, tzinfo=BERLIN))  # the next day, a person replies in one thread
    await app.service.handle(c.PostHumanMessage(**C1, discussion_id=replied,
                                                text="We went with the second option.",
                                                event_id="Ev1", user_id="U5", user_name="Kim"))
    await settle(app)
    second = await digest_at(app, chat, clock, datetime(2026, 3, 3, 9, 0, 0, 300_000, tzinfo=BERLIN))
    listed = discussions_section(second)
    assert f"(https://chat.invalid/console/{replied})" in listed and "had activity" not in second.text
    assert quiet not in second.text, "a discussion nothing happened to is not covered"


async def test_every_digest_lists_the_discussions_waiting_on_people_with_how_long(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await set_daily(app)
    waits = await waiting(app, topic="Should we adopt a four-day week?")  # since Mon 08:00 Berlin
    paused = await waiting(app, topic="Monorepo or not?")
    await app.service.handle(c.Pause(**C1, discussion_id=paused, user_id="U1"))
    await settle(app)
    await digest_at(app, chat, clock, datetime(2026, 3, 2, 9, 0, 0, 300_000, tzinfo=BERLIN))
    clock.set(datetime(2026, 3, 4, 8, 59, tzinfo=BERLIN))
    post = await digest_at(app, chat, clock, datetime(2026, 3, 4, 9, 0, 0, 300_000, tzinfo=BERLIN))
    waiting_part = post.text.split("**Waiting for people**", 1)[1]
    assert f"[Should we adopt a four-day week?](https://chat.invalid/console/{waits}): waiting for the next " \
           "step, for 2 days" in waiting_part
    assert "[Monorepo or not?]" in waiting_part and "paused" in waiting_part
    assert "No council discussion in this channel had activity in this period." in post.text


async def test_a_digest_for_a_channel_without_discussions_says_so_in_one_line(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await set_daily(app, channel="C9")
    post = await digest_at(app, chat, clock, datetime(2026, 3, 2, 9, 0, 0, 300_000, tzinfo=BERLIN), channel="C9")
    lines = post.text.splitlines()
    assert len(lines) == 2 and lines[1].startswith("No council discussions in this channel yet")


async def test_a_digest_shows_no_counts_or_voters_of_an_open_poll_whose_results_are_hidden(
    app: App, chat: RecordingChat, clock: FakeClock
) -> None:
    await set_daily(app)
    did = await waiting(app, topic="Which CI provider?", hide_results=True)
    async with app.store.tx() as tx:
        [poll] = [p for p in await tx.polls(did) if not p.closed]
    for user, choice in (("U5", 0), ("U6", 0), ("U7", 1)):
        await app.service.handle(c.CastBallot(**C1, poll_id=poll.id, choice=choice, user_id=user,
                                              user_name=f"Voter {user}"))
    await settle(app)
    post = await digest_at(app, chat, clock, datetime(2026, 3, 2, 9, 0, 0, 300_000, tzinfo=BERLIN))
    assert "results hidden until it closes" in post.text
    assert "Voter U5" not in post.text and f"{poll.options[0]} 2" not in post.text
    assert post.files == [], "no chart of a vote whose results are hidden"
    prompt = "".join(b.text for p in app.llm.prompts if p.purpose.phase.value == "digest" for b in p.shared)  # type: ignore[attr-defined]
    assert "Which CI provider?" in prompt, "the digest's model call read the discussion"
    assert "Voter U5" not in prompt and f"{poll.options[0]} 2" not in prompt


async def test_a_digest_on_a_spent_day_is_written_from_the_syntheses_without_a_model_call(
    tmp_path: Path, chat: RecordingChat, llm: ScriptedLLM, clock: FakeClock
) -> None:
    settings = Settings(_env_file=None, database_url=f"sqlite+aiosqlite:///{tmp_path / 'council.db'}",  # type: ignore[call-arg]
                        council_workspace_budget_usd_per_day=0.05)
    spent = await build_app(settings, {"console": chat}, llm=llm, clock=clock)
    try:
        await set_daily(spent)
        await spent.service.handle(start(topic="Which CI provider?", rounds=1))  # free: its syntheses are ready
        await settle(spent)
        llm.cost_per_call = 0.06  # one turn of the next discussion spends the whole day
        await spent.service.handle(start(topic="Which issue tracker?", rounds=1))
        await settle(spent)
        asked = len(llm.prompts)
        post = await digest_at(spent, chat, clock, datetime(2026, 3, 2, 9, 0, 0, 300_000, tzinfo=BERLIN))
        assert "Which CI provider?" in post.text, "the digest still goes out"
        assert not [p for p in llm.prompts[asked:] if p.purpose.phase == Phase.DIGEST]
    finally:
        await spent.close()
