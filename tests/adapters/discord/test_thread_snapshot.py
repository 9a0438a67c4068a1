"""One moderated round in a Discord thread, as a team reads it: Dana replies and votes, then asks for the synthesis.
Every message in the thread is counted by what it is (the outbox's key of the post it shows, found by the message
ids the post was sent as; a post's charts are a message of attachments after it); one that no post accounts for
fails the test."""

from __future__ import annotations

from collections import Counter

from adapters.discord.chat import Ref
from tests.adapters.discord.conftest import Council, confirm_step, settled
from tests.adapters.discord.test_flow import start_and_wait, with_button
from tests.adapters.slack.test_thread_snapshot import kind

EXPERTS = ["amara_okafor", "kenji_watanabe", "lucia_fernandez", "priya_raghunathan"]


async def test_one_round_reads_one_post_per_event(council: Council) -> None:
    fake = council.fake
    dana = fake.add_user("Dana")
    thread = await start_and_wait(council, dana, topic="Should we rewrite billing in Rust?", flow="moderated")
    d = await council.discussion()
    mine = await fake.say(dana, thread, "We lost 3 customers in March to billing errors; what would Rust fix?")

    async def answered() -> bool:
        return any(r["emoji"]["name"] == "✅" for r in mine.get("reactions", []) if r["me"])

    await settled(council, answered)
    poll = with_button(fake, thread, "Rewrite billing in Rust")
    vote = await fake.click(dana, poll, poll["components"][0]["components"][0]["custom_id"])
    await fake.wait_for(lambda: vote.followups)
    await council.settle()
    choice = with_button(fake, thread, "Synthesize")
    [top] = [m for m in fake.messages[fake.channel_id] if m["id"] == thread]
    on_top = {b.get("label") for r in top["components"] for b in r["components"]}
    assert "Pause" not in on_top and "Synthesize" not in on_top, "offered once: on the round's choice"
    await confirm_step(fake, dana, choice, "Synthesize", thread)

    async def finished() -> bool:
        return (await council.discussion()).status.value == "done"

    await settled(council, finished)

    async with council.app.store.tx() as tx:
        sent = await tx.posts(d.id)
    by_id: dict[str, str] = {}  # message id -> the key of the post first sent as it (later edits keep the id)
    for post, ref in sent:
        for i in Ref.parse(ref, d).ids if ref and post.kind != "reaction" else ():
            by_id.setdefault(i, post.key)
    bots = [m for m in fake.thread_messages(thread) if m["author"]["id"] != dana["id"]]
    keys = [by_id.get(m["id"]) or ("charts" if m.get("attachments") else "") for m in bots]
    assert all(keys), [m["content"][:80] for m, k in zip(bots, keys, strict=True) if not k]
    counted = Counter(kind(k, d.id) for k in keys)
    [header] = [m for m in fake.messages[fake.channel_id] if m["id"] == d.thread_ref]  # the thread's starter
    assert kind(by_id[header["id"]], d.id) == "header" and header["id"] not in [m["id"] for m in bots]
    assert counted == Counter({
        "roster": 1,  # the question on the table: the roster's answers as the options people and personas choose from
        "moderator": 2,  # the opening and the round's synthesis
        **{e: 2 for e in EXPERTS},  # a statement and a rebuttal each
        "contrarian": 1, "cross_domain": 1,
        "moderator:poll": 1,  # the round's vote
        "h1": 1,  # the Moderator's answer to Dana
        "document": 1,  # one living-document notice per discussion
        "choice": 1,  # the round's choice, which shows what Dana chose
        "final": 1, "final:poll": 1, "charts": 1,
    }), counted
    assert sum("chose **Synthesize**" in m["content"] for m in bots) == 1, "the choice shown once"
    assert "chose **Synthesize**" in choice["content"], "where it was made"
    [chart] = [m for m, k in zip(bots, keys, strict=True) if k == "charts"]
    assert "\n" not in chart["content"] and "Bar chart of" not in chart["content"], "a caption, not its alt text"
    checks = Counter(kind(k, d.id) for m, k in zip(bots, keys, strict=True) for row in m["components"]
                     for b in row["components"] if "check:claims" in str(b.get("custom_id")))
    # Check claims only where the evidence rules find a claim (the statements' figures, the analogy's dated crash):
    # never on the Moderator's answer to Dana, the rebuttals, or any post of the bot's own.
    assert checks == Counter({**{e: 1 for e in EXPERTS}, "cross_domain": 1}), checks
