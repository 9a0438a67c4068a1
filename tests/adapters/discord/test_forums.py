"""Forums as Discord runs them: a forum that requires a tag, the permission a forum post takes, a tag it lost."""

from __future__ import annotations

from tests.adapters.discord.conftest import Council
from tests.fakes import discord_rules as r


def tag_id(council: Council, forum: str, name: str) -> str:
    return next(str(t["id"]) for t in council.fake.channels[forum]["available_tags"] if t["name"] == name)


async def test_a_forum_that_requires_a_tag_gets_its_first_tag_the_bot_may_apply(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions", tags=("Announcement", "Proposal", "Question"),
                                   moderated=("Announcement",), require_tag=True)
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "done", d.blocked_reason
    post = fake.channels[d.thread_ref]
    assert post["parent_id"] == forum
    assert post["applied_tags"] == [tag_id(council, forum, "Proposal")], "the moderated tag needs Manage Threads"
    assert not [c for c in fake.calls if c.status >= 400], "no post was refused"


async def test_a_forum_that_requires_a_tag_it_has_none_of_is_refused_before_anything_is_spent(
        council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions", tags=("Announcement",), moderated=("Announcement",),
                                   require_tag=True)
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    said = i.followups[-1]["content"]
    assert ("This forum requires a tag on each post, and it has none I may apply (its tags need *Manage Threads*): "
            "add a tag anyone may use, or give me Manage Threads here, then try again.") in said, said
    assert await council.app.service.guard.discussions() == [] and not council.llm.prompts
    assert not [cid for cid, ch in fake.channels.items() if ch.get("parent_id") == forum]


async def test_a_forum_post_takes_send_messages_not_create_public_threads(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    fake.deny(forum, r.CREATE_PUBLIC_THREADS)
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "done", i.followups[-1]["content"]
    assert fake.channels[d.thread_ref]["parent_id"] == forum


async def test_a_forum_without_send_messages_is_refused_naming_it(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    fake.deny(forum, r.SEND_MESSAGES)
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    said = i.followups[-1]["content"]
    assert "Send Messages" in said and "Create Public Threads" not in said, said
    assert await council.app.service.guard.discussions() == []


async def test_a_forum_that_came_to_require_a_tag_after_the_start_blocks_at_once_saying_why(
        council: Council) -> None:
    """The forum's settings changed between the start and its header (Discord refuses with 40067): no retry can
    help, so the starter is told at once why, not after six refusals over two minutes."""
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    dana = fake.add_user("Dana")
    fake.channels[forum]["flags"] = r.REQUIRE_TAG  # the gateway never heard: the bot's cache says no tag needed
    i = await fake.slash(dana, "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "blocked" and "tag" in d.blocked_reason, d.blocked_reason
    refusals = [c for c in fake.calls if c.status == 400 and c.method == "POST" and c.path.endswith("/threads")]
    assert len(refusals) == 1, "a refusal no retry can change is not tried again"
    assert not council.llm.prompts, "nothing is spent on turns nobody could see"


async def test_a_forum_that_came_to_require_a_tag_it_has_gets_one_on_the_second_try(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions")
    # A moderator added a tag and made it required; the gateway never told the bot (its cache has neither).
    fake.channels[forum]["available_tags"] = [{"id": "900000000000000001", "name": "Proposal", "moderated": False,
                                               "emoji_id": None, "emoji_name": None}]
    fake.channels[forum]["flags"] = r.REQUIRE_TAG
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert d.status.value == "done", d.blocked_reason
    assert fake.channels[d.thread_ref]["applied_tags"] == [tag_id(council, forum, "Proposal")]
    assert len(fake.calls_to("POST", rf"^/channels/{forum}/threads$")) == 2, "refused once, then tagged"


async def test_a_forums_tag_chosen_with_council_config_goes_on_each_new_post(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions", tags=("Announcement", "Proposal", "Question"),
                                   moderated=("Announcement",), require_tag=True)
    ines = fake.add_user("Ines", admin=True)
    chose = await fake.slash(ines, "council-config", channel_id=forum, tag=tag_id(council, forum, "Question"))
    await fake.wait_for(lambda: chose.followups)
    assert "Question" in chose.followups[-1]["content"], chose.followups[-1]["content"]
    i = await fake.slash(fake.add_user("Dana"), "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    await council.settle()
    d = await council.discussion()
    assert fake.channels[d.thread_ref]["applied_tags"] == [tag_id(council, forum, "Question")]


async def test_council_config_tag_refuses_what_a_post_could_not_carry(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions", tags=("Announcement", "Proposal"),
                                   moderated=("Announcement",), require_tag=True)
    ines, dana = fake.add_user("Ines", admin=True), fake.add_user("Dana")
    said = []
    for who, where, tag in ((ines, forum, tag_id(council, forum, "Announcement")), (ines, forum, "Roadmap"),
                            (ines, fake.channel_id, "Proposal"), (dana, forum, "Proposal")):
        asked = await fake.slash(who, "council-config", channel_id=where, tag=tag)
        await fake.wait_for(lambda asked=asked: asked.followups)
        said.append(asked.followups[-1]["content"])
    moderated, unknown, not_forum, not_admin = said
    assert "Manage Threads" in moderated and "no tag “Roadmap”" in unknown and "forum" in not_forum, said
    assert "admins" in not_admin, not_admin
    async with council.app.store.tx() as tx:
        assert await tx.channel_tag("discord", fake.guild_id, forum) == "", "nothing refused was kept"


async def test_council_config_tag_suggests_the_forums_tags_the_bot_may_apply(council: Council) -> None:
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions", tags=("Announcement", "Proposal", "Question"),
                                   moderated=("Announcement",))
    typed = await fake.autocomplete(fake.add_user("Ines", admin=True), "council-config", "tag", "",
                                    channel_id=forum)
    await fake.wait_for(lambda: typed.callbacks)
    offered = [c["name"] for c in typed.callbacks[-1]["data"]["choices"]]
    assert offered[:2] == ["Proposal", "Question"] and offered[-1].startswith("off"), offered


async def test_council_typed_inside_a_forum_post_is_checked_against_its_forum(council: Council) -> None:
    """A discussion started from inside a forum post runs in a new post of that forum: the forum's tag rule and
    its permissions apply, not a text channel's."""
    fake = council.fake
    forum = await fake.add_channel(r.FORUM, "decisions", tags=("Proposal",))
    dana = fake.add_user("Dana")
    first = await fake.slash(dana, "council", channel_id=forum, topic="Kanban or Scrum?", rounds=1)
    await fake.wait_for(lambda: first.followups)
    await council.settle()
    post = (await council.discussion()).thread_ref
    fake.deny(forum, r.CREATE_PUBLIC_THREADS)  # a forum post never needs it
    fake.channels[forum]["available_tags"][0]["moderated"] = True  # now no tag the bot may apply...
    fake.channels[forum]["flags"] = r.REQUIRE_TAG  # ...and one is required
    await fake.dispatch("CHANNEL_UPDATE", fake.channels[forum])
    i = await fake.slash(dana, "council", channel_id=post, topic="And the release cadence?", rounds=1)
    await fake.wait_for(lambda: i.followups)
    said = i.followups[-1]["content"]
    assert "requires a tag" in said and "Create Public Threads" not in said, said
    assert len(await council.app.service.guard.discussions()) == 1, "nothing new was started"
