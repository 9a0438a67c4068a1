"""End to end through the real discord.py client: command, defer, thread, webhook posts, replies, buttons."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.discord.conftest import Council, by_webhook, confirm_step, running, settled
from tests.fakes import discord_payloads as p
from tests.fakes.discord_api import FakeDiscord


async def test_connects_through_the_api_url_and_syncs_commands(council: Council) -> None:
    fake = council.fake
    assert fake.calls_to("GET", r"^/gateway/bot$"), "the gateway URL must come from GET /gateway/bot"
    assert [c["name"] for c in fake.commands] == [
        "council", "council-list", "council-status", "council-pause", "council-resume", "council-stop",
        "council-synthesize", "council-revoke-links", "council-schedule", "council-digest", "council-config",
        "council-decisions", "council-help"]
    intents = int(fake.identifies[-1]["intents"])
    assert intents & 1 and intents & (1 << 9) and intents & p.MESSAGE_CONTENT_INTENT
    assert council.client.http.max_ratelimit_timeout == 30.0


async def test_council_command_runs_a_discussion_in_a_thread(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    before = len(fake.calls)
    i = await fake.slash(dana, "council", topic="Should we move to trunk-based development?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()

    first = fake.calls[before]
    assert first.path.endswith("/callback"), f"the first call must acknowledge, got {first.method} {first.path}"
    assert i.callbacks[0]["type"] == 5 and i.callbacks[0]["data"]["flags"] & 64
    assert "Starting a council" in i.followups[0]["content"]

    d = await council.discussion()
    header = fake.messages[fake.channel_id][0]
    assert header["id"] == d.thread_ref and "trunk-based" in header["embeds"][0]["title"]
    thread = fake.channels[d.thread_ref]
    assert thread["type"] == 11 and thread["parent_id"] == fake.channel_id
    assert len(fake.webhooks) == 1
    posts = by_webhook(fake.thread_messages(d.thread_ref))
    names = {m["author"]["username"] for m in posts}
    assert {"Moderator", "Historian", "Contrarian"} <= names and len(names) >= 6
    assert all(m["_avatar_url"].startswith("https://") for m in posts)
    assert all(len(m["content"]) <= 2000 for m in fake.thread_messages(d.thread_ref))
    assert any("offline model" in m["content"] for m in posts)
    assert d.status.value == "done"
    assert fake.calls_to("POST", rf"^/channels/{d.thread_ref}/typing$"), "a typing indicator while personas work"
    hook = next(iter(fake.webhooks))
    assert all(c.query.get("thread_id") == d.thread_ref for c in fake.calls_to("POST", rf"^/webhooks/{hook}/"))


async def start_and_wait(council: Council, who: dict, **options: object) -> str:
    """Run /council and let round 1 finish; returns the thread id."""
    i = await council.fake.slash(who, "council", **options)
    await council.fake.wait_for(lambda: i.followups)
    await council.settle()
    return (await council.discussion()).thread_ref


def with_button(fake: FakeDiscord, thread: str, label: str) -> dict:
    return next(m for m in reversed(fake.thread_messages(thread))
                if any(b.get("label") == label for r in m["components"] for b in r["components"]))


async def test_humans_reply_vote_and_steer(council: Council) -> None:
    fake = council.fake
    dana, lee = fake.add_user("Dana"), fake.add_user("Lee")
    thread = await start_and_wait(council, dana, topic="Should we adopt trunk-based development?")
    assert (await council.discussion()).status.value == "waiting"

    seen = len(fake.thread_messages(thread))
    before = len(fake.calls)
    said = await fake.say(dana, thread, "What about release trains for the mobile app?")
    await fake.wait_for(lambda: len(by_webhook(fake.thread_messages(thread)[seen:])) >= 1)
    await council.settle()
    # Heard at once (👀, before any answer: the PUT precedes the answer's webhook post), ✅ once answered.
    calls = [(c.method, c.path) for c in fake.calls[before:]]
    first = next(i for i, (method, path) in enumerate(calls) if method == "PUT" and "/reactions/" in path)
    answer = next(i for i, (method, path) in enumerate(calls) if method == "POST" and "/webhooks/" in path)
    assert first < answer and "/reactions/👀/" in calls[first][1], "👀 before the answer"
    assert {r["emoji"]["name"] for r in said.get("reactions", []) if r["me"]} == {"👀", "✅"}
    d = await council.discussion()
    async with council.app.store.tx() as tx:
        humans = await tx.human_messages(d.id)
    assert [(h.author_name, h.text) for h in humans] == [("Dana", "What about release trains for the mobile app?")]
    assert any("release trains" in b.text for p in council.llm.prompts[-1:] for b in p.shared)

    poll = with_button(fake, thread, "Run a four-week reversible trial")
    votes = [(lee, 0), (dana, 1), (lee, 1)]
    for who, option in votes:
        i = await fake.click(who, poll, poll["components"][0]["components"][option]["custom_id"])
        await fake.wait_for(lambda i=i: i.followups)
        assert i.callbacks[0]["type"] == 6, "a button is acknowledged with a deferred update first"
        assert "Your vote" in i.followups[0]["content"] and i.followups[0]["flags"] & 64
    await council.settle()  # the new counts go out through the outbox
    assert "— 0 votes" in poll["content"].splitlines()[1] and "— 2 votes (Dana, Lee)" in poll["content"]
    assert fake.calls_to("PATCH", rf"/channels/{thread}/messages/{poll['id']}$"), "counts are edited in place"

    choice = with_button(fake, thread, "Another round")
    custom_id = fake.find_button(choice, "Another round")
    first = await fake.click(dana, choice, custom_id)
    await fake.wait_for(lambda: first.callbacks)
    await council.settle()
    assert "Dana chose **Another round**" in choice["content"], "the choice is shown where it was made"
    d = await council.discussion()
    assert d.round == 2 and not any(r["components"] for r in choice["components"]), "its buttons are gone"
    assert any("Dana" in b.text and "release trains" in b.text for p in council.llm.prompts for b in p.shared)

    # A last human reply, posted after everything the bot and personas said in round 2: once it is stored, the
    # gateway has delivered their messages too, so the final read below sees the final state.
    await fake.say(lee, thread, "Agreed, trial it.")

    async def lee_is_stored() -> bool:
        async with council.app.store.tx() as tx:
            return any(h.text == "Agreed, trial it." for h in await tx.human_messages(d.id))

    await settled(council, lee_is_stored)
    async with council.app.store.tx() as tx:
        humans = await tx.human_messages(d.id)
    assert not [h for h in humans if h.author_id in (fake.app_id, *fake.webhooks)]
    assert [(h.author_name, h.text) for h in humans] == [("Dana", "What about release trains for the mobile app?"),
                                                         ("Lee", "Agreed, trial it.")]


async def test_buttons_survive_a_restart(fake: FakeDiscord, tmp_path: Path) -> None:
    dana = fake.add_user("Dana")
    async with running(fake, tmp_path) as first:
        thread = await start_and_wait(first, dana, topic="Monorepo or polyrepo?")
    async with running(fake, tmp_path) as second:
        choice = with_button(fake, thread, "Synthesize")
        _, i = await confirm_step(fake, dana, choice, "Synthesize", thread)  # it asks first
        await fake.wait_for(lambda: any("Final synthesis" in m["content"] for m in fake.thread_messages(thread)))
        await second.settle()
        assert i.callbacks[0]["type"] == 6
        assert (await second.discussion()).status.value == "done"


async def test_each_flow_chosen_with_the_flow_option_runs_to_its_end(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    closing = {"council": "Referee's reading", "meeting": "Council Recommendation", "open": "Stances after round"}
    for flow, extra in (("council", {"rounds": 2}), ("meeting", {"rounds": 3}), ("open", {})):
        i = await fake.slash(dana, "council", topic=f"Which way for {flow}?", flow=flow, **extra)
        await fake.wait_for(lambda i=i: i.followups)
        await council.settle()
        d = next(x for x in await council.app.service.guard.discussions() if x.flow == flow)
        assert d.status.value == "done", (flow, d.blocked_reason)
        text = "\n".join(m["content"] + str(m.get("embeds", "")) for m in fake.thread_messages(d.thread_ref))
        assert closing[flow] in text and "Stance: " in text, flow


async def test_people_rank_a_meeting_and_see_their_tally_beside_the_owners(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    i = await fake.slash(dana, "council", topic="Billing or mobile first?", flow="meeting", rounds=2)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    places = [m for m in fake.thread_messages(d.thread_ref) if "Your #1 priority" in m["content"]]
    assert places, "a poll per place"
    first = places[-1]
    menu = first["components"][0]["components"][0]
    assert menu["type"] == 3 and len(menu["options"]) >= 2, "a select menu of the options to rank"
    await fake.select(dana, first, menu["custom_id"], [menu["options"][0]["value"]])
    await council.settle()
    await confirm_step(fake, dana, first, "Close the ranking", d.thread_ref)
    await council.settle()
    await fake.wait_for(lambda: any("beside the owners" in m["content"] for m in fake.thread_messages(d.thread_ref)))
    [table] = [m["content"] for m in fake.thread_messages(d.thread_ref) if "beside the owners" in m["content"]]
    assert "1 person ranked" in table and "people: average rank 1.0, 1× #1" in table


async def test_a_persons_quick_clicks_count_in_the_order_they_were_made(council: Council) -> None:
    fake = council.fake
    lee = fake.add_user("Lee")
    i = await fake.slash(lee, "council", topic="Should we move the office to Porto?")
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    poll = with_button(fake, d.thread_ref, "Run a four-week reversible trial")
    buttons = poll["components"][0]["components"]
    # Discord acknowledges the first click last: its acknowledgement waits until the second's has been answered.
    acks = len(fake.calls_to("POST", r"/callback$"))
    fake.latency.append(lambda: fake.wait_for(lambda: len(fake.calls_to("POST", r"/callback$")) >= acks + 2))
    first = await fake.click(lee, poll, buttons[0]["custom_id"])
    second = await fake.click(lee, poll, buttons[1]["custom_id"])  # he changed his mind at once
    await fake.wait_for(lambda: first.followups and second.followups)
    await council.settle()
    async with council.app.store.tx() as tx:
        poll_id = (await tx.polls(d.id))[0].id
        [live] = [b for b in await tx.ballots(poll_id) if not b.is_ai]
    assert (live.voter_name, live.choice) == ("Lee", 1), "his last click is his vote"
