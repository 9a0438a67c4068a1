"""Decision records in Slack: `/council decisions trunk`, scoped to the channels a person is in (users.conversations),
the "Earlier here" opening with its Revisit button, and the Home tab's recent decisions."""

from __future__ import annotations

import json

from adapters.slack.server import SlackServer
from core.models import Status
from tests.adapters.slack import skipping
from tests.adapters.slack.conftest import Slack
from tests.adapters.slack.test_home import open_home, text_of
from tests.fakes.slack_api import FakeSlack

server = skipping.server  # the app on skipping time, in place of the conftest's

TOPIC = "Should we move to trunk-based development?"


async def finished(server: SlackServer) -> list[str]:
    assert server.core is not None
    ds = await server.core.service.guard.discussions()
    assert all(d.status == Status.DONE for d in ds), [(d.status, d.blocked_reason) for d in ds]
    return [d.id for d in ds]


async def test_decisions_are_searched_where_people_are_and_reopen_new_discussions(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.join("C0001", "U0001")
    fake.join("C0002", "U0002")
    await slack.command(f"{TOPIC} --rounds 1")
    await server.idle()
    await finished(server)

    await slack.command("decisions trunk", user="U0001")
    await server.idle()
    found = fake.ephemerals[-1]
    assert TOPIC in found["text"] and "<!date^" in found["text"]  # dated in the reader's zone
    assert "**" not in found["text"] and f"*{TOPIC}*" in found["text"], "Slack's bold, not Markdown's"
    await slack.command("decisions trunk", user="U0002", channel="C0002")  # not in C0001
    await server.idle()
    assert "No decisions matching “trunk”" in fake.ephemerals[-1]["text"]
    await slack.command("decisions trunk", user="U0003", channel="C0002")  # an admin
    await server.idle()
    assert TOPIC in fake.ephemerals[-1]["text"]
    assert [c.params.get("user") for c in fake.called("users.conversations")] == ["U0001", "U0002", "U0003"]

    await slack.command("Trunk-based development for the mobile team? --rounds 1")
    await server.idle()
    await slack.command("Trunk-based development, time to revisit? --rounds 1")
    await server.idle()
    second = (await server.core.service.guard.discussions())[0]  # type: ignore[union-attr]
    thread = fake.thread("C0001", second.thread_ref)
    earlier = next(m for m in thread if "Earlier here" in m.text)
    assert TOPIC in earlier.text and "for the mobile team?" in earlier.text  # both earlier records, dated, linked
    buttons = [e for b in earlier.blocks if b["type"] == "actions" for e in b["elements"]
               if e["action_id"].startswith("mem:revisit")]
    async with server.core.store.tx() as tx:  # type: ignore[union-attr]
        first = next(r for r in await tx.decisions_found("slack", "T0001", None) if r.topic == TOPIC)
    assert len(buttons) == 2 and first.link and first.link in earlier.text
    button = next(e for e in buttons if e["value"] == str(first.id))
    await slack.click(earlier.ts, button["action_id"], button["value"], user="U0002")
    await server.idle()
    latest = (await server.core.service.guard.discussions())[0]  # type: ignore[union-attr]
    assert latest.topic == TOPIC and latest.created_by == "U0002" and latest.options.recalled

    home = text_of(await open_home(slack, server, "U0001"))
    assert "Recent decisions in your channels" in home and "trunk-based development" in home
    fake.add_user("U0004", "Mo")  # in no channel, and started nothing
    assert "trunk-based" not in text_of(await open_home(slack, server, "U0004"))


async def test_bad_memory_and_seat_options_are_explained(slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    said = [(await slack.command(text))[1] for text in ("Topic --memory everywhere", "Topic --seat dana",
                                                         "revisit twelve")]  # answered in the ack itself
    await server.idle()
    assert "`--memory` takes `channel`" in said[0]
    assert "`--seat` takes people" in said[1]
    assert "`/council decisions` lists them" in said[2]
    assert server.core is not None and await server.core.service.guard.discussions() == []


async def test_a_hidden_final_polls_votes_stay_out_of_the_record_until_it_closes(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command("Should we adopt OKRs? --rounds 1 --hidden")
    await server.idle()
    [did] = await finished(server)
    assert server.core is not None
    [d] = await server.core.service.guard.discussions()
    final = [m for m in fake.thread("C0001", d.thread_ref) if '"vote:0"' in json.dumps(m.blocks)][-1]
    poll_id = int(next(e for b in final.blocks if b["type"] == "actions" for e in b["elements"]
                       if e["action_id"] == "vote:0")["value"].split("|")[0])
    async with server.core.store.tx() as tx:
        poll = next(p for p in await tx.polls(did) if p.id == poll_id)
        [before] = await tx.decisions_found("slack", "T0001", None)
    assert poll.final and poll.hide_results and not poll.closed
    await slack.click(final.ts, "vote:0", f"{poll_id}|0", user="U0002")
    await slack.click(final.ts, "vote:0", f"{poll_id}|0", user="U0001")
    await server.idle()
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    assert record.people == {} and record.verdict == before.verdict and "no votes" in record.verdict
    await slack.command("decisions okrs", user="U0001")
    await server.idle()
    assert "People:" not in fake.ephemerals[-1]["text"] and "people: no votes" in fake.ephemerals[-1]["text"]

    await slack.click(final.ts, "poll:close", str(poll_id), user="U0001")  # the starter closes it: now it shows
    await server.idle()
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    shown = f"{poll.options[0]} [{poll.option_ids[0]}]"  # the option with its id: what the votes mean
    assert record.people == {shown: 2} and "no votes" not in record.verdict
    await slack.command("decisions okrs", user="U0001")
    await server.idle()
    found = fake.ephemerals[-1]["text"]
    assert f"people: {shown} 2 of 2" in found and found.count(record.verdict) == 1, "the verdict, once"


async def test_a_private_channels_records_stay_in_it_for_admins_too(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    fake.add_channel("G0001", private=True, member=True, people=["U0001", "UBOT"])
    fake.join("G0001", "U0001")
    fake.join("C0001", "U0001", "U0002", "U0003")
    await slack.command(f"{TOPIC} --rounds 1", channel="G0001")
    await server.idle()
    [secret] = await finished(server)
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    assert record.private and record.channel == "G0001"

    # Dana is in both channels: workspace memory in #general reaches the public channels only.
    await slack.command("Trunk-based development for the API? --rounds 1 --memory workspace", channel="C0001")
    await server.idle()
    public = next(d for d in await server.core.service.guard.discussions() if d.channel == "C0001")
    assert all(TOPIC not in m.text for m in fake.thread("C0001", public.thread_ref))
    assert not public.options.recalled
    # An admin's Revisit from #general is refused, and starts nothing there.
    _, said = await slack.command(f"revisit {record.id}", user="U0003", channel="C0001")
    await server.idle()
    assert "private channel" in said + " ".join(e["text"] for e in fake.ephemerals if e["user"] == "U0003")
    assert len([d for d in await server.core.service.guard.discussions() if d.channel == "C0001"]) == 1
    # An admin's search from a channel they are in finds the public record, not the private one.
    await slack.command("decisions trunk", user="U0003", channel="C0001")
    await server.idle()
    assert TOPIC not in fake.ephemerals[-1]["text"] and "for the API?" in fake.ephemerals[-1]["text"]

    # In the private channel itself the record is memory, and its Revisit works.
    await slack.command("Trunk-based development, time to revisit? --rounds 1", channel="G0001")
    await server.idle()
    again = next(d for d in await server.core.service.guard.discussions()
                 if d.channel == "G0001" and d.id != secret)
    earlier = next(m for m in fake.thread("G0001", again.thread_ref) if "Earlier here" in m.text)
    assert TOPIC in earlier.text and again.options.private


async def test_a_revisit_in_a_channel_council_is_not_in_joins_it_first(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    await slack.command(f"{TOPIC} --rounds 1")
    await server.idle()
    await finished(server)
    assert server.core is not None
    async with server.core.store.tx() as tx:
        [record] = await tx.decisions_found("slack", "T0001", None)
    fake.add_channel("C0002")  # public, and Council is not in it
    await slack.command(f"revisit {record.id}", user="U0003", channel="C0002")
    await server.idle()
    assert [c.params["channel"] for c in fake.called("conversations.join")][-1] == "C0002"
    revisited = next(d for d in await server.core.service.guard.discussions() if d.channel == "C0002")
    assert revisited.topic == TOPIC and not revisited.options.private
    fake.add_channel("G0002", private=True)  # private, and Council was never invited
    await slack.command(f"revisit {record.id}", user="U0003", channel="G0002",
                        response_url=fake.base_url.replace("/api/", "/response/revisit"))
    await server.idle()
    [answer] = fake.responses
    assert "/invite @Council" in answer["text"]
    assert not [d for d in await server.core.service.guard.discussions() if d.channel == "G0002"]


async def test_every_private_answer_is_in_slacks_own_formatting(
        slack: Slack, server: SlackServer, fake: FakeSlack) -> None:
    """Each answer a person gets privately, whatever the command: Slack's *bold* and <url|links>, never the
    core's **bold** or [text](url)."""
    fake.join("C0001", "U0001")
    await slack.command(f"{TOPIC} --rounds 1")
    await server.idle()
    [did] = await finished(server)
    for text, user in [("help", "U0001"), ("list", "U0001"), (f"status {did}", "U0001"), ("usage", "U0003"),
                       ("decisions trunk", "U0001"), ("config defaults rounds=2", "U0003"),
                       ('config owners "Dana: Billing; Eli: Mobile app"', "U0003"), ("digest daily", "U0003"),
                       (f"stop {did}", "U0001"), ("nonsense --flag", "U0001")]:
        before = len(fake.ephemerals)
        _, body = await slack.command(text, user=user)
        await server.idle()
        acked = [json.loads(body)["text"]] if body.strip().startswith("{") and "text" in json.loads(body) else []
        answers = acked + [e["text"] for e in fake.ephemerals[before:]]
        assert answers, text
        for answer in answers:
            assert "**" not in answer and "](http" not in answer, (text, answer)
