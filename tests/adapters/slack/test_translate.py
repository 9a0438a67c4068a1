"""Pure translation: `/council` text, Slack escapes, buttons and forms into core commands."""

from __future__ import annotations

import pytest

from adapters.slack import interactions as ix
from adapters.slack import translate as tr
from adapters.slack import views
from core.control import commands as c
from core.models import NextAction, Persona, Role

WHO = tr.Who("U1", "Dana")


def parse(text: str) -> tr.Intent:
    return tr.parse_council(text, who=WHO, team_id="T1", channel_id="C1", default_tz="UTC")


def test_start_with_every_option() -> None:
    intent = parse('Should we adopt <https://trunkbaseddevelopment.com|TBD>? —rounds 2 --experts=3 --confirm '
                   '--anonymous --hidden --debate --roles "security, finance" --every 1d --next “tomorrow 09:00” '
                   '--tz Europe/Berlin')
    cmd = intent.command
    assert isinstance(cmd, c.StartDiscussion) and intent.tz_explicit
    assert cmd.topic == "Should we adopt TBD (https://trunkbaseddevelopment.com)?"
    assert (cmd.rounds, cmd.experts, cmd.confirm, cmd.anonymous, cmd.hide_results) == (2, 3, True, True, True)
    assert (cmd.mode, cmd.roles, cmd.every, cmd.next_at, cmd.tz) == ("debate", ["security", "finance"], "1d",
                                                                     "tomorrow 09:00", "Europe/Berlin")
    assert (cmd.platform, cmd.workspace, cmd.channel, cmd.user_id, cmd.user_name) == ("slack", "T1", "C1", "U1",
                                                                                      "Dana")


@pytest.mark.parametrize(("text", "message"), [
    ("--rounds 2", "Please give a topic"),
    ("a" * 4000, "under 4,000"),
    ("x --rounds", "`--rounds` needs a value"),
    ("x --rounds two", "whole number from 1 to 10"),
    ("x --experts 1", "from 2 to 8"),
    ("x --tz Mars/Olympus", "time zone `Mars/Olympus`"),
    ("x --every often", "`--every` takes a cadence"),
    ("x --verbose", "I don't know the option `--verbose`"),
    ("pause", "Which discussion?"),
    ('digest cron "0 9 * *"', "5-field expression"),
    ("digest daily #general", "Pick it from the list"),
])
def test_bad_input_gets_a_friendly_sentence(text: str, message: str) -> None:
    with pytest.raises(tr.BadInput, match=message.replace("(", r"\(").replace("`", "`")):
        parse(text)


def test_subcommands() -> None:
    assert parse("help").kind == "help" and parse("list").kind == "list" and parse("").kind == "modal"
    assert parse("status `abcd1234`").discussion_id == "abcd1234"
    for word, cls in (("pause", c.Pause), ("resume", c.Resume), ("stop", c.Stop), ("revoke-links", c.RevokeLinks)):
        intent = parse(f"{word} abcd1234")
        assert isinstance(intent.command, cls) and intent.command.discussion_id == "abcd1234"
    sched = parse('schedule abcd1234 "tomorrow 09:00" --every 1w').command
    assert isinstance(sched, c.ScheduleRound) and (sched.when, sched.every) == ("tomorrow 09:00", "1w")
    digest = parse('digest cron "*/5 * * * *" <#C99|decisions> --tz Asia/Tokyo').command
    assert isinstance(digest, c.SetDigest)
    assert (digest.cadence, digest.cron, digest.channel, digest.tz) == ("cron", "*/5 * * * *", "C99", "Asia/Tokyo")
    off = parse("digest off").command
    assert isinstance(off, c.SetDigest) and off.cadence == "off" and off.channel == "C1"
    assert isinstance(parse("stop using Jenkins for deploys").command, c.StartDiscussion)  # a topic, not an id
    assert isinstance(parse("list the risks of Kubernetes").command, c.StartDiscussion)


def test_mentions_and_replies() -> None:
    assert tr.strip_mention("<@UBOT> pause", "UBOT") == "pause"
    assert isinstance(tr.control("Pause!", "d1", WHO).command, c.Pause)  # type: ignore[union-attr]
    synth = tr.control("synthesize", "d1", WHO)
    assert synth is not None and isinstance(synth.command, c.Synthesize)
    assert tr.control("please pause the thing", "d1", WHO) is None
    reply = {"type": "message", "user": "U1", "text": "hi &amp; <@U2|lee>", "ts": "2.0", "thread_ts": "1.0"}
    assert tr.is_human_reply(reply) and not tr.is_human_reply({**reply, "ts": "1.0"})
    assert not tr.is_human_reply({**reply, "bot_id": "B1"}) and not tr.is_human_reply({**reply, "subtype": "x"})
    msg = tr.human_message(reply, "Ev1", "d1", WHO)
    assert msg is not None and msg.text == "hi & @lee" and msg.event_id == "Ev1"


def test_buttons_and_forms() -> None:
    assert isinstance(ix.action_command("ctl:stop", "d1", WHO), c.Stop)
    nxt = ix.action_command("next:deep_dive", "d1|deep_dive", WHO)
    assert isinstance(nxt, c.ChooseNextAction) and nxt.action == NextAction.DEEP_DIVE
    vote = ix.action_command("vote:1", "7|1", WHO)
    assert isinstance(vote, c.CastBallot) and (vote.poll_id, vote.choice) == (7, 1)
    assert isinstance(ix.action_command("roster:modify", "d1", WHO), ix.OpenRosterModal)
    assert isinstance(ix.action_command("fail:skip", "d1", WHO), c.SkipTurns)
    sched = ix.action_command("sched:1h", "d1|in 1 hour", WHO)
    assert isinstance(sched, c.ScheduleRound) and sched.when == "in 1 hour"
    assert ix.action_command("vote:x", "nope", WHO) is None and ix.action_command("ctl:dance", "d1", WHO) is None
    experts = [Persona(key="a", name="Ann", role=Role.EXPERT, title="Ops"),
               Persona(key="b", name="Bo", role=Role.EXPERT, title="Sec")]
    values = {"name:a": {"value": {"value": "Annie"}}, "title:a": {"value": {"value": "Ops"}},
              "remove": {"value": {"selected_options": [{"value": "b"}]}},
              "add_name": {"value": {"value": "Cy"}}}
    cmds = ix.roster_commands(values, "d1", experts, WHO)
    assert [type(x) for x in cmds] == [c.ModifyRoster, c.ModifyRoster, c.AddExpert]
    assert cmds[0].name == "Annie" and cmds[1].remove and cmds[2].title == "Expert"  # type: ignore[attr-defined]


def test_flow_options_and_their_friendly_errors() -> None:
    cmd = parse('Should we rewrite billing? --flow council --style debate --tier medium --lang "pt-BR" --rounds 3')
    assert isinstance(cmd.command, c.StartDiscussion)
    assert (cmd.command.flow, cmd.command.style, cmd.command.tier, cmd.command.lang) == ("council", "debate",
                                                                                         "medium", "pt-BR")
    floor = parse('Remote work? --flow open-floor --hints "cost, trust" --experts 5').command
    assert isinstance(floor, c.StartDiscussion) and (floor.flow, floor.hints) == ("open", ["cost", "trust"])
    assert parse("Plain topic").command.flow == "moderated"  # type: ignore[union-attr]
    for text, message in [("x --flow chaos", "`--flow` takes one of `moderated`, `council`, `meeting`, `open`"),
                          ("x --style loud", "`--style` takes one of"), ("x --tier max", "`--tier` takes one of"),
                          ("x --lang <b>", "`--lang` takes a language name")]:
        with pytest.raises(tr.BadInput, match=message):
            parse(text)
    assert "`council` — " in tr.HELP and "`open` — " in tr.HELP


def test_the_start_form_has_a_flow_select_and_passes_it_on() -> None:
    view = views.start_view("{}")
    flow_block = next(b for b in view["blocks"] if b["block_id"] == "flow")
    assert [o["value"] for o in flow_block["element"]["options"]] == ["moderated", "council", "meeting", "open"]
    values = {"topic": {"value": {"value": "Pricing?"}},
              "flow": {"value": {"selected_option": {"value": "council"}}},
              "style": {"value": {"selected_option": {"value": "sequential"}}},
              "tier": {"value": {"selected_option": {"value": "heavy"}}},
              "lang": {"value": {"value": "German"}},
              "rounds": {"value": {"selected_option": {"value": "2"}}}}
    cmd = ix.start_from_view(values, ix.start_metadata("C1"), WHO, "T1", "UTC")
    assert (cmd.flow, cmd.style, cmd.tier, cmd.lang, cmd.rounds) == ("council", "sequential", "heavy", "German", 2)
    values["lang"] = {"value": {"value": "rm -rf /"}}
    with pytest.raises(tr.BadInput, match=r"^lang: "):
        ix.start_from_view(values, ix.start_metadata("C1"), WHO, "T1", "UTC")


def test_channel_defaults_are_read_as_typed_and_a_start_names_only_what_it_gives() -> None:
    cmd = parse('config defaults flow=meeting rounds=3 tier=medium lang="Brazilian Portuguese"').command
    assert isinstance(cmd, c.SetDefaults)
    assert cmd.text == 'flow=meeting rounds=3 tier=medium lang="Brazilian Portuguese"' and cmd.channel == "C1"
    with pytest.raises(tr.BadInput, match="Which defaults"):
        parse("config defaults")
    started = parse("Should we ship? --rounds 2").command
    assert isinstance(started, c.StartDiscussion) and "flow" not in started.model_fields_set


def test_channel_owners_for_meetings() -> None:
    cmd = parse('config owners "Dana: Billing, invoices; Eli: Mobile app"').command
    assert isinstance(cmd, c.SetOwners) and cmd.owners == ["Dana: Billing, invoices", "Eli: Mobile app"]
    assert parse("config owners Dana: Billing, Eli: Mobile").command.owners == [  # type: ignore[union-attr]
        "Dana: Billing", "Eli: Mobile"]
    assert parse("config owners off").command.owners == []  # type: ignore[union-attr]
    with pytest.raises(tr.BadInput, match="Which owners"):
        parse("config owners")


def test_a_click_from_a_direct_message_is_known_by_its_channel() -> None:
    dm = {"channel": {"id": "D00000001", "name": "directmessage"}, "container": {"channel_id": "D00000001"}}
    assert tr.from_dm(dm)
    assert tr.from_dm({"channel": {"id": "G0001", "name": "directmessage"}})  # Slack names it so
    assert not tr.from_dm({"channel": {"id": "C0001", "name": "general"}, "container": {"channel_id": "C0001"}})


def test_a_typed_start_asks_about_a_one_word_topic() -> None:
    cmd = parse("Pricing? --rounds 1").command
    assert isinstance(cmd, c.StartDiscussion) and cmd.clarify


def test_models_are_carried_to_the_start_as_typed() -> None:
    cmd = parse('Rewrite billing? --flow council --models "openai:gpt-5.1 ollama:llama3.1:8b"').command
    assert isinstance(cmd, c.StartDiscussion) and cmd.models == "openai:gpt-5.1 ollama:llama3.1:8b"
    assert cmd.topic == "Rewrite billing?"
    assert parse("Plain topic").command.models == ""  # type: ignore[union-attr]
