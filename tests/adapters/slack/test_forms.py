"""Forms open first: a click that asks for a form gets a loading view at once (its trigger_id lasts 3 s and opens
one view), and the work behind it (database reads, the same person's earlier clicks) fills it in with views.update."""

from __future__ import annotations

import asyncio
import contextlib

from adapters.slack.server import SlackServer
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Seconds, Slack
from tests.adapters.slack.test_buttons import with_action
from tests.adapters.slack.test_threads import only
from tests.fakes.clock import settle
from tests.fakes.cluster import until
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

LOOKUP_S = 4.0  # Lee's slow look-up, in the seconds trigger_ids expire on: longer than a trigger's 3


async def test_a_form_opens_within_its_trigger_even_behind_a_slow_earlier_click(
    slack: Slack, server: SlackServer, fake: FakeSlack, trigger_time: Seconds
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    [choice] = with_action(fake, d.thread_ref, '"next:deep_dive"')

    async def slow_lookup() -> None:
        """Who is Lee? Answered 4 s later on the triggers' clock: after the form opened, if it opens at once (a
        second of real time at most, so an app that waits for this look-up first finds its trigger expired)."""
        with contextlib.suppress(TimeoutError):
            await until(lambda: bool(fake.views), 1.0, "a form opened")
        trigger_time.t += LOOKUP_S

    fake.latency["users.info"].append(slow_lookup)
    await slack.click(choice.ts, "sched:1h", f"{d.id}|in 1 hour", user="U0002")  # slow: who is Lee?
    await slack.click(choice.ts, "next:deep_dive", f"{d.id}|deep_dive", user="U0002")  # queued behind it
    await server.idle()
    assert trigger_time.t >= 1000 + LOOKUP_S, "the look-up was the slow one"
    assert not [e for e in fake.ephemerals if "went wrong" in e["text"]]
    [opened] = fake.views  # the only view Slack opened, and the one the deep dive filled in
    assert opened["view"]["callback_id"] == "council_next_topic" and opened.get("updates") == 1
    assert opened["view"]["blocks"][0]["element"]["initial_value"], "the council's suggestion, filled in"


async def test_a_form_with_nothing_left_to_ask_says_so_instead_of_loading_forever(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    [choice] = with_action(fake, d.thread_ref, '"next:deep_dive"')
    await slack.click(choice.ts, "next:synthesize", f"{d.id}|synthesize")  # the discussion ends
    await server.idle()
    await slack.click(choice.ts, "next:deep_dive", f"{d.id}|deep_dive", user="U0002")  # a copy seen late
    await server.idle()
    [opened] = fake.views
    assert "already chosen" in str(opened["view"]["blocks"]) and opened["view"]["close"]["text"] == "OK"


async def test_the_server_is_idle_only_once_every_listener_acknowledged_has_finished(
    slack: Slack, server: SlackServer, fake: FakeSlack
) -> None:
    """A listener goes on after its ack() (opening the form, then spawning the work): a server that called itself
    idle meanwhile let tests read the thread too early, and a shutdown drop a click it had acknowledged."""
    await slack.command("Should we sunset the legacy mobile app?")
    await server.idle()
    d = await only(server)
    [choice] = with_action(fake, d.thread_ref, '"next:deep_dive"')
    asked, opening = asyncio.Event(), asyncio.Event()

    async def slow_to_open() -> None:  # Slack takes its time to open the form
        asked.set()
        await opening.wait()

    fake.latency["views.open"].append(slow_to_open)
    await slack.click(choice.ts, "next:deep_dive", f"{d.id}|deep_dive")  # acknowledged at once
    idle = asyncio.create_task(server.idle())
    await asyncio.wait_for(asked.wait(), 10)  # the listener is opening its form now
    await settle()
    assert not idle.done(), "idle while the click's listener was still opening its form"
    opening.set()
    await idle
    [opened] = fake.views
    assert opened["view"]["callback_id"] == "council_next_topic"
